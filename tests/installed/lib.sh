# shellcheck shell=bash
# Shared by the tests/installed/ scripts (sourced): the booted container's state, running a
# command inside it, bounded waits, and per-check PASS/FAIL lines.
#
# The state of the booted container lives in $IODRIFT_INSTALLED_STATE (a directory; CTest passes
# it): `env` holds NSPAWN_PID (the host's systemd-nspawn), LEADER (the container's PID 1 as seen
# from the host), LOOP (the loop device passed in, same path inside) and DEB (the package file).
set -euo pipefail

state=${IODRIFT_INSTALLED_STATE:?IODRIFT_INSTALLED_STATE is not set}
failures=0

skip() { echo "skip: $*"; exit 77; }
# skip_guaranteed REASON: skip for lack of what CI provides (root, nspawn, dev.sh's packages, the
# booted container); a failure under IODRIFT_CI_GUARANTEED=1 (.ci/run, docs/testing.md "Skips").
skip_guaranteed() {
  [ "${IODRIFT_CI_GUARANTEED:-}" != 1 ] || die "skip on a condition CI guarantees (IODRIFT_CI_GUARANTEED=1): $*"
  skip "$@"
}
die() { echo "FAIL: $*"; exit 1; }
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# check DESCRIPTION COMMAND...: PASS or FAIL on the command's status (output shown on FAIL).
check() {
  local what=$1 out
  shift
  if out=$("$@" 2>&1); then pass "$what"; else fail "$what"; printf '%s\n' "$out" | tail -20 | sed 's/^/    /'; fi
}
# needs_quiet REASON: a check that needs a quiet machine could not be made (figures in REASON);
# the other checks go on, and the test ends skipped (77) unless one of them failed.
quiet_reason=""
needs_quiet() { echo "    not checked (needs a quiet machine): $*"; quiet_reason="${quiet_reason:+$quiet_reason; }$*"; }
finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
  [ -z "$quiet_reason" ] || skip "every other check passed; needs a quiet machine: $quiet_reason"
  echo "all checks passed"
}

need_root_and_tools() {
  [ "$(id -u)" -eq 0 ] || skip_guaranteed "needs root (boots a container, makes loop devices)"
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || skip_guaranteed "$tool is not installed (tools/dev.sh deps installs it)"
  done
}

load_state() {
  [ -f "$state/env" ] || skip_guaranteed "no booted container (installed.setup did not run or failed)"
  # shellcheck disable=SC1091
  . "$state/env"
  kill -0 "$LEADER" 2>/dev/null || die "the container (PID 1 = host pid $LEADER) is gone"
}

# begin_check [TOOL...]: skip without root, nsenter or a TOOL; load the container's state.
begin_check() {
  need_root_and_tools nsenter "$@"
  load_state
}
need_active() { ct systemctl is-active --quiet iodrift || die "iodrift is not active (installed.service failed?)"; }

# ct COMMAND...: run COMMAND as root inside the booted container (all its namespaces, its root),
# with a clean environment. Bounded: a command that hangs is killed after CT_TIMEOUT (60 s).
ct() {
  timeout -k 5 "${CT_TIMEOUT:-60}" nsenter -t "$LEADER" -a \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root "$@"
}
# ct_as USER COMMAND...: the same as USER (with USER's groups from the container's /etc/group).
ct_as() {
  local user=$1
  shift
  ct setpriv --reuid="$user" --regid="$user" --init-groups \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/ "$@"
}
# The value of one property of a unit inside the container (systemctl show -p NAME --value).
unit_prop() { ct systemctl show -p "$2" --value "$1"; }

# wait_until SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.5 s until it succeeds; returns
# 1 (and says what it waited for) when SECONDS pass first.
wait_until() {
  local limit=$1 what=$2 deadline
  shift 2
  deadline=$(($(date +%s) + limit))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "    gave up after ${limit} s waiting for: $what"
      return 1
    fi
    sleep 0.5
  done
}

# wait_baseline PROBE SECONDS: 0 once PROBE has a baseline (iodrift_probe_baseline_ratio). Else 1
# when its runs were kept out of the baseline only for the machine's state (suspects io_pressure,
# memory_pressure, low_free_memory: other work on a busy machine; collectors/probes/context.h
# kMachineStateSuspects), printing its figures; else 2 (a real failure), printing them too.
has_ratio() { local m; m=$(metrics) && grep -qE "^iodrift_probe_baseline_ratio\{[^}]*probe=\"$1\"" <<<"$m"; }
wait_baseline() {
  wait_until "$2" "iodrift_probe_baseline_ratio{probe=$1}" has_ratio "$1" && return 0
  ct curl -sf --max-time 10 "http://127.0.0.1:9723/api/v1/probes?runs=0" |
    PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")/../lib" python3 -c '
import json, sys
from iodrift_test.suspects import machine_only
for p in json.load(sys.stdin)["probes"]:
    if p.get("name") == sys.argv[1]:
        suspect = p.get("suspect") or []
        runs, error = p.get("runs"), p.get("error")
        print(f"{sys.argv[1]}: runs {runs}, last suspect {suspect}, error {error!r}")
        sys.exit(1 if machine_only(suspect) else 2)
print(f"{sys.argv[1]}: not in /api/v1/probes")
sys.exit(2)
' "$1"
}

# need_baseline PROBE SECONDS: wait_baseline, for a check that cannot go on without it: ends the
# check skipped (needs a quiet machine) or failed when PROBE formed none.
need_baseline() {
  local rc=0 why
  why=$(wait_baseline "$1" "$2") || rc=$?
  case $rc in
    0) ;;
    1) needs_quiet "$1 formed no baseline: $why"; finish ;;
    *) die "$1 formed no baseline: $why" ;;
  esac
}

# undo_on_exit COMMAND: eval COMMAND when the check exits (also on failure, TERM or INT), after
# the commands queued after it (last in, first out); a failing one does not stop the others.
undo=()
undo_all() {
  local i
  for ((i = ${#undo[@]} - 1; i >= 0; i--)); do eval "${undo[i]}" || true; done
}
undo_on_exit() {
  [ ${#undo[@]} -gt 0 ] || { trap undo_all EXIT; trap 'exit 143' TERM INT; }
  undo+=("$1")
}

# The daemon's main PID inside the container's pid namespace, and as the host sees it (the
# process in the container's pid namespace whose innermost pid is the unit's MainPID; empty when
# there is none).
main_pid() { unit_prop iodrift.service MainPID; }
main_host_pid() {
  local mp pidns status p
  mp=$(main_pid)
  pidns=$(readlink "/proc/$LEADER/ns/pid")
  for status in /proc/[0-9]*/status; do
    p=${status#/proc/}
    p=${p%/status}
    [ "$(readlink "/proc/$p/ns/pid" 2>/dev/null)" = "$pidns" ] || continue
    [ "$(awk '/^NSpid:/ { print $NF }' "$status" 2>/dev/null)" = "$mp" ] || continue
    echo "$p"
    return 0
  done
}
# The journal's position now, and the iodrift unit's messages after such a position.
journal_cursor() { ct journalctl -u iodrift -n 0 --show-cursor --no-pager | sed -n 's/^-- cursor: //p'; }
journal_after() { ct journalctl -u iodrift --after-cursor="$1" --no-pager -o cat; }
metrics() { ct curl -sf --max-time 10 http://127.0.0.1:9723/metrics; }
