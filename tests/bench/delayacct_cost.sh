#!/bin/bash
# What kernel.task_delayacct=1 costs the machine: `perf bench sched messaging` (hackbench: process
# groups passing messages over sockets, scheduler- and wakeup-heavy) and `perf bench sched pipe`
# (two tasks ping-ponging over a pipe: one context switch per message), run alternately with the
# sysctl at 0 and at 1, PAIRS pairs (the order flips each pair). Prints every run, the medians and
# the ratio on/off. Restores the sysctl to what it found, whatever happens. Not a timed test:
# IODRIFT_BENCH=1 runs it (root, perf); else exit 77.
#
#   sudo IODRIFT_BENCH=1 tests/bench/delayacct_cost.sh   # PAIRS=5, MESSAGING_LOOPS=2000: ~5 min on 2 CPUs
set -euo pipefail
[ "${IODRIFT_BENCH:-}" = 1 ] || { echo "skipped: set IODRIFT_BENCH=1 to run"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root (writes kernel.task_delayacct)"; exit 77; }
command -v perf >/dev/null || { echo "skipped: perf is not installed (linux-perf)"; exit 77; }
sysctl=/proc/sys/kernel/task_delayacct
[ -w "$sysctl" ] || { echo "skipped: $sysctl is not writable here"; exit 77; }
PAIRS=${PAIRS:-5}
found=$(cat "$sysctl")
trap 'echo "$found" >"$sysctl"' EXIT
declare -A runs
measure() {  # MODE: appends one figure of each benchmark
  echo "$1" >"$sysctl"
  local m p
  m=$(perf bench sched messaging -g 10 -l "${MESSAGING_LOOPS:-2000}" 2>/dev/null | awk '/Total time/ { print $3 }')
  p=$(perf bench sched pipe -l 200000 2>/dev/null | awk '/usecs\/op/ { print $1 }')
  runs[messaging_$1]+="$m "
  runs[pipe_$1]+="$p "
  printf 'delayacct=%s  messaging %s s  pipe %s usecs/op\n' "$1" "$m" "$p"
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; kernel $(uname -r)"
for ((i = 0; i < PAIRS; i++)); do
  if ((i % 2 == 0)); then measure 0; measure 1; else measure 1; measure 0; fi
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for b in messaging pipe; do
  off=$(median <<<"${runs[${b}_0]}")
  on=$(median <<<"${runs[${b}_1]}")
  printf '%-9s median off %s, on %s: on/off %.3f\n' "$b" "$off" "$on" "$(echo "$on / $off" | bc -l)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); kernel.task_delayacct restored to $found"
