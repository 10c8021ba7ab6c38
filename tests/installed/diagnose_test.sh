#!/bin/bash
# installed.diagnose: `iodriftctl diagnose` as installed, as far as a container allows.
#   - `iodriftctl diagnose --help` names the steps;
#   - off by default (diagnose.enabled: false): a member of group iodrift is refused with a reason;
#   - enabled in /etc/iodrift/iodrift.yaml (with `cooldown: 0s`, so root may follow at once) and
#     reloaded: refused to an ordinary user (AccessDenied); a member of group iodrift gets an
#     answer on loop-direct (exit 0 or 1, the report's first line and its `control` step),
#     printed in full, with the three /proc/sys/vm steps "skipped (needs root …)" and
#     warm_free_memory measured (the daemon does it as itself);
#   - root's `iodriftctl diagnose` makes the /proc/sys/vm writes itself (the daemon stays
#     unprivileged): each of those steps is measured, or skipped with the file root could not
#     write — in this container always the latter, since systemd-nspawn mounts /proc/sys
#     read-only for every process in it (recorded below). When the probe is not slow, the
#     experiment stops after `control`.
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
ct sed -i '/^diagnose:/,/^[a-z]/ s/^\(  cooldown:\) .*/\1 0s/' "$conf"
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

# One experiment: print it; check the answer's shape and each step's line against `$2`, an
# extended regex per root step (the /proc/sys/vm ones) — warm_free_memory is the daemon's own.
check_experiment() {  # WHO ROOT_STEP_REGEX RC OUT
  local who=$1 root_re=$2 rc=$3 out=$4 step line
  echo "    iodriftctl diagnose loop-direct as $who (exit $rc):"
  sed 's/^/      /' <<<"$out"
  if [ "$rc" -le 1 ] && grep -q '^probe loop-direct: ' <<<"$out" && grep -q '^  control: ' <<<"$out"; then
    pass "diagnose answered $who (exit $rc): $(grep '^probe loop-direct: ' <<<"$out" | cut -c1-160)"
  else
    fail "diagnose as $who: exit $rc"
    return
  fi
  if grep -q '^probe loop-direct: nothing to recover' <<<"$out"; then
    echo "    note: the probe was not slow, so no step after control ran"
    return
  fi
  # On a busy machine the daemon stops the experiment when PSI crosses diagnose.max_*_pressure
  # (as configured): the steps after that point are not run, and that is what is checked.
  local aborted
  aborted=$(grep -o 'aborted: [^;]*(diagnose\.max_[a-z_]*)' <<<"$out" | head -1 || true)
  for step in drop_caches drop_slab compact warm_free_memory; do
    line=$(grep "^  $step: " <<<"$out" || true)
    local re=$root_re
    [ "$step" = warm_free_memory ] && re='(median |skipped \()'
    if grep -qE "^  $step: $re" <<<"$line" || grep -qE "^  $step: skipped \(diagnose.timeout" <<<"$line"; then
      pass "$who: step reported:$line"
    elif [ -z "$line" ] && [ -n "$aborted" ]; then
      echo "    note: $who: step $step not run: the experiment was $aborted (machine pressure)"
    else
      fail "$who: step $step: '${line:-not reported}'"
    fi
  done
}

# An experiment needs the probe's baseline (installed.device waited for it; wait here too, so
# that this test holds alone and on a loaded machine).
brc=0
why=$(wait_baseline loop-direct 90) || brc=$?
if [ "$brc" -eq 0 ]; then
  rc=0
  out=$(CT_TIMEOUT=150 ct_as bob iodriftctl diagnose loop-direct 2>&1) || rc=$?
  check_experiment "bob (group iodrift)" 'skipped \(needs root' "$rc" "$out"

  # bob's experiment runs were charged to the RunProbe limiter's global bucket (experiment runs
  # count): root may have to wait for that debt; the refusal says how long. Bounded.
  for _ in $(seq 1 20); do
    rc=0
    out=$(CT_TIMEOUT=150 ct iodriftctl diagnose loop-direct 2>&1) || rc=$?
    grep -q 'rate limited' <<<"$out" || break
    echo "    root refused for now: $(grep -m1 'rate limited' <<<"$out" | cut -c1-160)"
    sleep 3
  done
  check_experiment root '(median |skipped \(cannot (open|write) /proc/sys/vm/)' "$rc" "$out"
elif [ "$brc" -eq 1 ]; then
  needs_quiet "no experiment: loop-direct has no baseline, other work's pressure kept its runs out ($why)"
else
  fail "loop-direct has no baseline for an experiment: $why"
fi

# What the container allows: /proc/sys is read-only for every process in it.
sysopts=$(ct awk '$5 == "/proc/sys" { print $6 }' /proc/1/mountinfo)
echo "    /proc/sys in the container: ${sysopts:-not a separate mount}"
[[ ",$sysopts," == *,ro,* ]] && pass "recorded: /proc/sys is read-only here (systemd-nspawn), so the /proc/sys/vm steps cannot run in this test" \
  || fail "/proc/sys is '$sysopts' in the container; this test assumed read-only"
finish
