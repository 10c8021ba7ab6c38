#!/bin/bash
# installed.diagnose: `iodriftctl diagnose` as installed, as far as a container allows.
#   - `iodriftctl diagnose --help` names the steps;
#   - off by default (diagnose.enabled: false): a member of group iodrift is refused with a reason;
#   - enabled in /etc/iodrift/iodrift.yaml and reloaded: refused to an ordinary user
#     (AccessDenied), and a member of group iodrift gets an answer on loop-direct (exit 0 or 1,
#     the report's first line and its `measure` step), printed in full.
#   - when the probe is slow against its baseline, each later step is reported: measured, or
#     skipped with the /proc/sys/vm file it could not write. As packaged (user iodrift,
#     ProtectKernelTunables=) those three are skipped; and in this container they could not run
#     whatever the unit allows, since systemd-nspawn mounts /proc/sys read-only for every process
#     in it (recorded below). When the probe is not slow, the experiment stops after `measure`.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
begin_check
need_active
conf=/etc/iodrift/iodrift.yaml

if out=$(ct iodriftctl diagnose --help 2>&1) && grep -q drop_caches <<<"$out"; then
  pass "iodriftctl diagnose --help lists the steps"
else
  fail "iodriftctl diagnose --help: $out"
fi

if ct grep -A1 '^diagnose:' "$conf" | ct grep -q 'enabled: true'; then
  echo "    note: diagnose is already enabled in $conf (an earlier run): the default is not checked"
elif out=$(CT_TIMEOUT=30 ct_as bob iodriftctl diagnose loop-direct 2>&1); then
  fail "diagnose ran while diagnose.enabled is false: $out"
else
  grep -q 'diagnose.enabled' <<<"$out" && pass "off by default: $(head -1 <<<"$out")" \
    || fail "refused without naming diagnose.enabled: $out"
fi

cursor=$(journal_cursor)
ct sed -i '/^diagnose:/,/^[a-z]/ s/^\(  enabled:\) false/\1 true/' "$conf"
grep -q 'enabled: true' <<<"$(ct grep -A1 '^diagnose:' "$conf")" || die "could not enable diagnose in $conf"
ct systemctl reload iodrift
applied() { grep -q 'reload: applied' <<<"$(journal_after "$cursor")"; }
wait_until 20 "reload: applied" applied || fail "the reload enabling diagnose was not applied"

if out=$(CT_TIMEOUT=30 ct_as alice iodriftctl diagnose loop-direct 2>&1); then
  fail "diagnose allowed to an ordinary user: $out"
elif grep -qi AccessDenied <<<"$out"; then
  pass "diagnose refused to an ordinary user: $(head -1 <<<"$out")"
else
  fail "diagnose as alice failed, but not with AccessDenied: $out"
fi

rc=0
out=$(CT_TIMEOUT=150 ct_as bob iodriftctl diagnose loop-direct 2>&1) || rc=$?
echo "    iodriftctl diagnose loop-direct (exit $rc):"
sed 's/^/      /' <<<"$out"
if [ "$rc" -le 1 ] && grep -q '^probe loop-direct: ' <<<"$out" && grep -q '^  measure: ' <<<"$out"; then
  pass "diagnose answered as group iodrift (exit $rc): $(head -1 <<<"$out")"
else
  fail "diagnose as bob: exit $rc"
fi

# Each later step is reported with its outcome, a skip naming the file it could not write; or
# none ran because the first measurement was already within 10 % of the baseline.
if grep -q '^probe loop-direct: nothing to recover' <<<"$out"; then
  echo "    note: the probe was not slow, so no step after measure ran"
else
  for step in drop_caches drop_slab compact warm_free_memory; do
    line=$(grep "^  $step: " <<<"$out" || true)
    if grep -qE "^  $step: (figure |skipped \(cannot (open|write) /proc/sys/vm/)" <<<"$line" \
       || grep -qE "^  $step: skipped \(diagnose.timeout" <<<"$line"; then
      pass "step reported:$line"
    else
      fail "step $step: '${line:-not reported}'"
    fi
  done
fi

# What the container allows: /proc/sys is read-only for every process in it.
sysopts=$(ct awk '$5 == "/proc/sys" { print $6 }' /proc/1/mountinfo)
echo "    /proc/sys in the container: ${sysopts:-not a separate mount}"
[[ ",$sysopts," == *,ro,* ]] && pass "recorded: /proc/sys is read-only here (systemd-nspawn), so the /proc/sys/vm steps cannot run in this test" \
  || fail "/proc/sys is '$sysopts' in the container; this test assumed read-only"
finish
