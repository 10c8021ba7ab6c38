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

need_baseline "$probe" 90

# --- The throttle ---------------------------------------------------------------------------------
majmin=$(printf '%d:%d' "0x$(stat -c %t "$LOOP")" "0x$(stat -c %T "$LOOP")")
if ct grep -qw io /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
  ct systemctl set-property --runtime iodrift.service "IOReadBandwidthMax=$LOOP $THROTTLE_BPS"
  undo_on_exit "ct systemctl set-property --runtime iodrift.service 'IOReadBandwidthMax=' >/dev/null"
  how="IOReadBandwidthMax=$LOOP $THROTTLE_BPS on iodrift.service (the container's cgroup v2 io)"
else
  host_pid=$(main_host_pid)
  [ -n "$host_pid" ] || die "no host process for the service's MainPID $(main_pid)"
  blkio=/sys/fs/cgroup/blkio
  [ -f "$blkio/cgroup.procs" ] || skip "neither the container's io controller nor the host's v1 blkio"
  old=$(awk -F: '$2 == "blkio" { print $3 }' "/proc/$host_pid/cgroup")
  cg=$blkio/iodrift-installed-$$
  mkdir "$cg"
  undo_on_exit "rmdir '$cg'"
  echo "$majmin $THROTTLE_BPS" >"$cg/blkio.throttle.read_bps_device"
  echo "$host_pid" >"$cg/cgroup.procs"
  undo_on_exit "echo $host_pid >'$blkio$old/cgroup.procs'"
  how="cgroup v1 blkio.throttle.read_bps_device $majmin $THROTTLE_BPS on host pid $host_pid"
fi
echo "    throttle: $how"

# --- The verdict of each run ----------------------------------------------------------------------
api() { ct curl -sf --max-time 10 "http://127.0.0.1:9723/api/v1/probes?runs=0"; }
export -f api ct
export LEADER
rc=0
out=$(timeout 180 python3 "$here/verdict_watch.py" "$probe" device "$LASTING_RUNS" 2>&1) || rc=$?
printf '%s\n' "$out" | sed 's/^/    /'
case $rc in
  0) pass "$probe throttled on a stock machine: named device" ;;
  1) fail "$probe throttled: a run named a wrong cause (last line above)" ;;
  2) fail "$probe throttled: the slowdown lasted 3 runs, then $LASTING_RUNS more, all undetermined" ;;
  *) fail "$probe throttled: no verdict within 180 s (rc $rc)" ;;
esac
finish
