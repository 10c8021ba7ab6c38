#!/bin/bash
# installed.reclaim: the installed service names a memory-reclaim slowdown on a stock machine.
#   The service runs as user iodrift in its own cgroup, delay accounting as the machine has it
#   (kernel.task_delayacct, 0 by default, is not changed here). Once loop-buffered (a buffered
#   probe on the loop device, from installed.service) has its baseline, its memory is squeezed the
#   way the cause zoo's memory_high case does it: the service's process, as the host sees it, goes
#   into a new host cgroup v1 memory cgroup whose limit leaves ROOM bytes above what it charges
#   there, shared with a dirty writer (dd at nice 19 to a loop device over a file in a tmpfs of
#   its own: its writeback reaches no disk and no device of the probe's). The probe's readahead is
#   reclaimed before it is read and read again, and its reads stall on reclaim (the service's
#   cgroup memory.pressure inside the container). Each run of loop-buffered is then read from
#   /api/v1/probes (verdict_watch.py):
#   - a run naming a cause other than `memory_reclaim` fails at once — but `cpu_contention` in a
#     run during which the machine's CPU pressure was >= 10 % (the zoo's co-present rule: on a
#     loaded machine the readers did wait for a CPU too);
#   - once the slowdown lasted (3 slow runs in a row, the verdict's rule), `memory_reclaim` must
#     be named within LASTING_RUNS runs — undetermined (or co-present) throughout fails;
#   - the service must keep running (no OOM kill in the cgroup: a task finding no memory waits);
#   - a squeeze that never slowed the probe for 3 runs in a row within WATCH_SECONDS says skipped
#     with the runs' figures (the effect is the kernel's, not ours to assert); so does a run in
#     which another test switched delay accounting on (a different mode) and memory_reclaim was
#     not named;
#   - the writer, its loop device and tmpfs, the process's move and the cgroup are undone
#     whatever happens.
# A host without the cgroup v1 memory hierarchy (cgroup v2 only) says skipped: the squeeze is
# written for v1 hosts.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
begin_check python3 losetup
need_active
probe=loop-buffered
ROOM=${ROOM:-$((8 << 20))}  # page cache left to the probe and the writer together
LASTING_RUNS=${LASTING_RUNS:-6}
WATCH_SECONDS=${WATCH_SECONDS:-60}
delayacct() { cat /proc/sys/kernel/task_delayacct 2>/dev/null || echo '?'; }
delayacct_before=$(delayacct)
echo "    kernel.task_delayacct = $delayacct_before (left as it is)"

memory=/sys/fs/cgroup/memory
[ -f "$memory/cgroup.procs" ] || skip "the host has no cgroup v1 memory hierarchy ($memory): the squeeze is written for one"
pid=$(main_pid)
host_pid=$(main_host_pid)
[ -n "$host_pid" ] || die "no host process for the service's MainPID $(main_pid)"

need_baseline "$probe" 60

# --- The squeeze ----------------------------------------------------------------------------------
# The writer's device: a loop device over a file in a tmpfs of this run's own.
wdir=$(mktemp -d "$state/reclaim-writer.XXXXXX")
undo_on_exit "rmdir '$wdir'"
mount -t tmpfs -o size=300m iodrift-reclaim "$wdir"
undo_on_exit "umount '$wdir'"
truncate -s 256M "$wdir/writer.img"
wloop=$(losetup --find --show "$wdir/writer.img")
undo_on_exit "losetup -d '$wloop'"

cg=$memory/iodrift-installed-$$
mkdir "$cg"
# On the way out (in this order): the limit lifted (frees any task waiting for memory in it), the
# service's process back where it was, then whatever is left in the cgroup (the writer) killed
# until it is empty, and the cgroup removed.
drained() {
  local p
  while read -r p; do kill -KILL "$p" 2>/dev/null; done <"$cg/cgroup.procs"
  [ -z "$(cat "$cg/cgroup.procs")" ] && rmdir "$cg"
}
undo_on_exit "wait_until 10 'the writer gone and $cg removed' drained"
old=$(awk -F: '$2 == "memory" { print $3 }' "/proc/$host_pid/cgroup")
echo "$host_pid" >"$cg/cgroup.procs"
undo_on_exit "echo $host_pid >'$memory$old/cgroup.procs'"
# Its charges stay where they were made: the limit counts what it charges from now on.
limit=$(($(cat "$cg/memory.usage_in_bytes") + ROOM))
echo "$limit" >"$cg/memory.limit_in_bytes"
undo_on_exit "echo -1 >'$cg/memory.limit_in_bytes'"
# No OOM kill in it: a task that finds no memory waits for some (the writer's pages being
# written back, else the limit lifted on the way out) instead of the service being killed.
echo 1 >"$cg/memory.oom_control"
sh -c "echo \$\$ >'$cg/cgroup.procs' && exec nice -n 19 sh -c \
  'while :; do dd if=/dev/zero of=$wloop bs=1M count=256 conv=notrunc 2>/dev/null; done'" &
disown
echo "    squeeze: host pid $host_pid in $cg, memory.limit_in_bytes $limit ($((ROOM >> 20)) MiB of room), dirty writer to $wloop (tmpfs) in the same cgroup"

# --- The verdict of each run ----------------------------------------------------------------------
api() { ct curl -sf --max-time 10 "http://127.0.0.1:9723/api/v1/probes?runs=0"; }
export -f api ct
export LEADER
rc=0
out=$(timeout $((WATCH_SECONDS + 10)) python3 "$here/verdict_watch.py" "$probe" memory_reclaim \
        "$LASTING_RUNS" "$WATCH_SECONDS" cpu_contention 2>&1) || rc=$?
printf '%s\n' "$out" | sed 's/^/    /'
echo "    memory cgroup: failcnt $(cat "$cg/memory.failcnt"), $(paste -sd' ' "$cg/memory.oom_control")"
if [ "$(main_pid)" = "$pid" ]; then
  pass "the service kept running through the squeeze (pid $pid)"
else
  fail "the service's MainPID changed during the squeeze: $pid -> $(main_pid)"
fi
# This check is the stock machine's. Delay accounting switched on meanwhile (by another test:
# /run/iodrift-test-delayacct.json) gives the service, which has no CAP_NET_ADMIN and so no
# taskstats, its readers' block I/O wait (/proc/thread-self/stat, in clock ticks) but no reclaim
# delay: a different mode, whose answers are not judged here.
delayacct_after=$(delayacct)
if [ "$rc" -ne 0 ] && [ "$delayacct_before$delayacct_after" != 00 ]; then
  needs_quiet "kernel.task_delayacct was $delayacct_before before, $delayacct_after after (switched on by another test): not the stock mode; runs above"
  rc=-1
fi
case $rc in
  -1) ;;
  0) pass "$probe squeezed (task_delayacct $delayacct_before): named memory_reclaim" ;;
  1) fail "$probe squeezed: a run named a wrong cause (last line above)" ;;
  2) fail "$probe squeezed: the slowdown lasted 3 runs, then $LASTING_RUNS more, none named memory_reclaim" ;;
  4) [ "$failures" -ne 0 ] || skip "the squeeze did not slow $probe for 3 runs in a row within $WATCH_SECONDS s (runs above)" ;;
  *) fail "$probe squeezed: no verdict within $WATCH_SECONDS s (rc $rc)" ;;
esac
finish
