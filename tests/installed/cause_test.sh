#!/bin/bash
# installed.cause: the installed service names a device slowdown on a stock machine.
#   The service runs as user iodrift in its own cgroup, with delay accounting as the machine has
#   it (kernel.task_delayacct, 0 by default, is neither read nor changed here). Once loop-direct
#   has its baseline, its reads of the loop device are throttled to THROTTLE_BPS, from inside the
#   container (`systemctl set-property --runtime iodrift.service IOReadBandwidthMax=`) where the
#   container's cgroup tree has the io controller, else from the host (a cgroup v1 blkio throttle
#   on the service's process, as the host sees it). Each run of loop-direct is then read from
#   /api/v1/probes:
#   - no run may name a cause other than `device` (a wrong answer fails at once);
#   - once the slowdown lasted (3 slow runs in a row, the verdict's rule), the probe must be named
#     `device` within LASTING_RUNS runs — "undetermined" on a lasting device slowdown fails;
#   - the throttle is removed (and the process back in its cgroup) whatever happens.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
begin_check python3
need_active
probe=loop-direct
THROTTLE_BPS=${THROTTLE_BPS:-1048576}  # 1 MiB/s: a 4 MiB run takes its whole time budget
LASTING_RUNS=${LASTING_RUNS:-6}
echo "    kernel.task_delayacct = $(cat /proc/sys/kernel/task_delayacct 2>/dev/null || echo '?') (left as it is)"

rc=0
why=$(wait_baseline "$probe" 90) || rc=$?
case $rc in
  0) ;;
  1) needs_quiet "$probe formed no baseline: $why"; finish ;;
  *) die "$probe formed no baseline: $why" ;;
esac

# --- The throttle ---------------------------------------------------------------------------------
majmin=$(printf '%d:%d' "0x$(stat -c %t "$LOOP")" "0x$(stat -c %T "$LOOP")")
undo=()
cleanup() {
  local i
  for ((i = ${#undo[@]} - 1; i >= 0; i--)); do eval "${undo[i]}" || true; done
}
trap cleanup EXIT
if ct grep -qw io /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
  ct systemctl set-property --runtime iodrift.service "IOReadBandwidthMax=$LOOP $THROTTLE_BPS"
  undo+=("ct systemctl set-property --runtime iodrift.service 'IOReadBandwidthMax=' >/dev/null")
  how="IOReadBandwidthMax=$LOOP $THROTTLE_BPS on iodrift.service (the container's cgroup v2 io)"
else
  # The service's process as the host sees it: same pid namespace as the container's PID 1, the
  # innermost pid is the unit's MainPID.
  mp=$(main_pid)
  pidns=$(readlink "/proc/$LEADER/ns/pid")
  host_pid=
  for status in /proc/[0-9]*/status; do
    p=${status#/proc/}
    p=${p%/status}
    [ "$(readlink "/proc/$p/ns/pid" 2>/dev/null)" = "$pidns" ] || continue
    [ "$(awk '/^NSpid:/ { print $NF }' "$status" 2>/dev/null)" = "$mp" ] || continue
    host_pid=$p
    break
  done
  [ -n "$host_pid" ] || die "no host process for the service's MainPID $mp"
  blkio=/sys/fs/cgroup/blkio
  [ -f "$blkio/cgroup.procs" ] || skip "neither the container's io controller nor the host's v1 blkio"
  old=$(awk -F: '$2 == "blkio" { print $3 }' "/proc/$host_pid/cgroup")
  cg=$blkio/iodrift-installed-$$
  mkdir "$cg"
  undo+=("rmdir '$cg'")
  echo "$majmin $THROTTLE_BPS" >"$cg/blkio.throttle.read_bps_device"
  echo "$host_pid" >"$cg/cgroup.procs"
  undo+=("echo $host_pid >'$blkio$old/cgroup.procs'")
  how="cgroup v1 blkio.throttle.read_bps_device $majmin $THROTTLE_BPS on host pid $host_pid"
fi
echo "    throttle: $how"

# --- The verdict of each run ----------------------------------------------------------------------
# Reads the probe after each new run (its ok+error count grows); prints one line per run and exits
# 0 when `device` was named after the slowdown lasted, 1 on a wrong cause, 2 when LASTING_RUNS
# runs of a lasting slowdown went by undetermined, 3 on a timeout.
api() { ct curl -sf --max-time 10 "http://127.0.0.1:9723/api/v1/probes?runs=0"; }
export -f api ct
export LEADER
read -r -d '' watch <<'EOF' || true
import json, subprocess, sys, time
probe, lasting_runs = sys.argv[1], int(sys.argv[2])
SLOW, SUSTAINED = 0.9, 3  # the verdict's kSlowdownRatio and kSustainedRuns (verdict.h)
def read():
    out = subprocess.run(["bash", "-c", "api"], capture_output=True, text=True).stdout
    for p in json.loads(out or '{"probes": []}')["probes"]:
        if p.get("name") == probe:
            return p
    return None
seen, slow_in_row, lasting = None, 0, 0
deadline = time.monotonic() + 170
while time.monotonic() < deadline:
    p = read()
    runs = sum((p or {}).get("runs", {}).values()) if p else None
    if p is None or runs == seen:
        time.sleep(0.3)
        continue
    first = seen is None
    seen = runs
    if first:
        continue  # the run in progress when the throttle came may have been half throttled
    ratio, cause = p.get("ratio"), p.get("cause") or p.get("verdict")
    print(f"run {runs}: ratio {ratio}, {p.get('verdict_text', '')}", flush=True)
    if cause not in ("undetermined", "device"):
        sys.exit(1)
    slow_in_row = slow_in_row + 1 if ratio is not None and ratio < SLOW else 0
    if slow_in_row >= SUSTAINED:
        if cause == "device":
            sys.exit(0)
        lasting += 1
        if lasting >= lasting_runs:
            sys.exit(2)
sys.exit(3)
EOF
rc=0
out=$(timeout 180 python3 -c "$watch" "$probe" "$LASTING_RUNS" 2>&1) || rc=$?
printf '%s\n' "$out" | sed 's/^/    /'
case $rc in
  0) pass "$probe throttled on a stock machine: named device" ;;
  1) fail "$probe throttled: a run named a wrong cause (last line above)" ;;
  2) fail "$probe throttled: the slowdown lasted 3 runs, then $LASTING_RUNS more, all undetermined" ;;
  *) fail "$probe throttled: no verdict within 180 s (rc $rc)" ;;
esac
finish
