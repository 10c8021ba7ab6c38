#!/usr/bin/env bash
# Benchmark: how close each iodrift probe kind comes to the reference tool that measures the same
# thing, on one loop device and one regular file on ext4, and what the default probe schedule
# costs per hour. Prints a table of medians and ratios (iodrift / reference, each ratio the median
# of the per-pair ratios), then key=value lines. See tests/bench/README.md.
#
#   IODRIFT_BENCH=1 tests/bench/accuracy_vs_reference.sh          # as root
#
# Without IODRIFT_BENCH=1, or when not root (loop devices, hdparm's BLKFLSBUF, bonnie++ -u root),
# it exits 77 at once, so a plain `ctest` reports it skipped.
#
# Pairs. Every round runs three blocks, each block an `iodriftd --once --json` run and the
# reference tools it is compared with (their order within a block alternates between rounds):
#   loop   cached, buffered, direct, random (64 requests, and the default: 1000 within 1 s) on a
#          1 GiB loop device of
#          urandom data (--direct-io=on, backing file synced) against hdparm -T, hdparm -t,
#          fio (buffered and O_DIRECT sequential, randread qd1) and ioping -D
#   file   buffered, direct, random on a 1 GiB urandom file on ext4 against fio and ioping
#   misc   metadata (64 and 16384 files) against bonnie++ -n 16 -s 0 (create, stat and delete:
#          the probe's shuffled-order stat/delete against bonnie++'s random phase, which does the
#          same, and against its readdir-order sequential phase), memory against a memcpy loop
#          compiled here with cc -O2
# Memory-state sensitive steps (buffered reads, first-touch allocation) start after `sync` and a
# 3 s pause, as hdparm -t does itself: on a VM with free page reporting, memory freed less than
# 2 s earlier is much cheaper to allocate than memory that has been free for longer
# (docs/probes.md, "Why buffered next to direct"), and that would decide the ratio instead of the method.
# CPU priority. The reference tools run at nice 0, so the probe threads do too (scheduler.nice:
# 0 in the generated configs). The daemon's default is nice 10; one more iodriftd run per round
# (cached on the loop device, memory) keeps that default and gives the "as deployed" rows: on a
# host whose CPUs are busy, CPU-bound probes at nice 10 get a smaller share of a CPU.
#
# Environment:
#   IODRIFTD            iodriftd binary (default <source>/build/bin/iodriftd; built with
#                       tools/dev.sh build when missing)
#   ACC_PAIRS           rounds, i.e. pairs per figure (default 5; the figures are medians)
#   ACC_SIZE_MIB        buffered/direct byte budget and fio --size (default 64)
#   ACC_IDLE_SECONDS    idle window for the daemon's own CPU (default 60)
#   ACC_SETTLE_SECONDS  pause before memory-state sensitive steps (default 3)
#   ACC_WORKDIR         where the temp dir goes (default /var/tmp). The regular file and the
#                       metadata directories live there when it is ext4; otherwise, or with
#                       ACC_FS=loop, on an ext4 made on a second loop device
#   ACC_DEADLINE        seconds; no new round starts when it would end the script past this
#                       (default 350)
#   ACC_NICE            scheduler.nice of the probe threads in the compared runs (default 0)
#   ACC_BONNIE_N        bonnie++ -n, in units of 1024 files (default 16)
#   ACC_KEEP_RAW        a directory: copy every raw tool output there before cleaning up
set -euo pipefail

SKIP=77
if [ "${IODRIFT_BENCH:-}" != 1 ]; then
  echo "SKIPPED: benchmark; run with IODRIFT_BENCH=1 (see tests/bench/README.md)"
  exit $SKIP
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
iodriftd=${IODRIFTD:-$source_dir/build/bin/iodriftd}
pairs=${ACC_PAIRS:-5}
size_mib=${ACC_SIZE_MIB:-64}
idle_s=${ACC_IDLE_SECONDS:-60}
settle_s=${ACC_SETTLE_SECONDS:-3}
deadline=${ACC_DEADLINE:-350}
nice_level=${ACC_NICE:-0}
bonnie_n=${ACC_BONNIE_N:-16}
helper=$here/accuracy.py

log() { printf 'acc: %s\n' "$*" >&2; }
skip() { echo "SKIPPED: $*"; exit $SKIP; }

[ "$(id -u)" = 0 ] || skip "needs root (loop devices, hdparm BLKFLSBUF, bonnie++ -u root)"

# Tools: install what is missing (root only reaches this point).
declare -A pkg_of=([hdparm]=hdparm [fio]=fio [ioping]=ioping [bonnie++]=bonnie++ [cc]=gcc
                   [python3]=python3 [losetup]=mount [mkfs.ext4]=e2fsprogs [timeout]=coreutils)
missing=()
for tool in "${!pkg_of[@]}"; do
  command -v "$tool" >/dev/null || missing+=("${pkg_of[$tool]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } \
    >&2 || skip "could not install ${missing[*]}"
fi
if [ ! -x "$iodriftd" ]; then
  [ -z "${IODRIFTD:-}" ] || { log "IODRIFTD=$IODRIFTD is not an executable"; exit 1; }
  log "$iodriftd missing; building it with tools/dev.sh build"
  "$source_dir/tools/dev.sh" build >&2
fi

work_parent=${ACC_WORKDIR:-/var/tmp}
work=$(mktemp -d -p "$work_parent" iodrift-acc.XXXXXX)
loops=()
mounted=""
daemon_pid=""
sampler_pid=""
step_pid=""
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local rc=$? dev
  # Undo everything first and report afterwards: a closed stdout/stderr (… | head) must not stop
  # the loop devices from being detached.
  set +e
  trap '' PIPE
  if [ -n "$step_pid" ]; then kill -TERM "$step_pid" 2>/dev/null; wait "$step_pid" 2>/dev/null; fi
  if [ -n "$sampler_pid" ]; then kill -TERM "$sampler_pid" 2>/dev/null; wait "$sampler_pid" 2>/dev/null; fi
  if [ -n "$daemon_pid" ]; then
    kill -TERM "$daemon_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$daemon_pid" 2>/dev/null
    wait "$daemon_pid" 2>/dev/null
  fi
  local kept=""
  if [ -n "${ACC_KEEP_RAW:-}" ] && [ -d "$work/raw" ]; then
    mkdir -p "$ACC_KEEP_RAW" && cp -a "$work/raw/." "$ACC_KEEP_RAW/" && kept=$ACC_KEEP_RAW
  fi
  if [ -n "$mounted" ]; then umount "$mounted" 2>/dev/null || umount -l "$mounted" 2>/dev/null; fi
  for dev in "${loops[@]}"; do losetup -d "$dev" 2>/dev/null; done
  rm -rf "$work"
  [ -z "$kept" ] || log "raw outputs kept in $kept"
  if losetup -a 2>/dev/null | grep -qF "$work"; then
    log "warning: loop devices still attached after cleanup:"; losetup -a | grep -F "$work" >&2
  elif [ ${#loops[@]} -gt 0 ]; then
    log "cleanup: ${loops[*]} detached (losetup -a shows none of ours), $work removed"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------------
# Cost of the embedded default schedule (one probe of each kind on <state_dir>/probe, every
# 5 min), measured first. The daemon's idle window then runs beside the set-up and the first
# rounds: with no scrapes and its next probe runs 4.5-5.5 min away it does nothing but wait, and
# it touches no device the rounds use.
log "cost of the default schedule"
raw=$work/raw
cost=$raw/cost
mkdir -p "$cost" "$work/cost-state"
# First run: creates the probe file and calibrates the sequential budgets (a one-time cost).
"$iodriftd" --once --json --state-dir "$work/cost-state" --dbus none >"$cost/once1.json" 2>"$cost/once1.err" || true
"$iodriftd" --once --json --state-dir "$work/cost-state" --dbus none >"$cost/once2.json" 2>"$cost/once2.err" || true
stat -c 'probe_file_bytes=%s' "$work/cost-state/probe/iodrift-probe.dat" >"$cost/oneoff.txt" 2>/dev/null || true
sample() {  # LABEL: utime+stime (ticks), read_bytes, sum of the threads' schedstat run time (ns)
  local ns=0 t
  for t in /proc/"$daemon_pid"/task/*/schedstat; do ns=$((ns + $(cut -d' ' -f1 "$t" 2>/dev/null || echo 0))); done
  echo "$1 t=$(date +%s.%N) ticks=$(awk '{print $14 + $15}' "/proc/$daemon_pid/stat") read_bytes=$(awk '/^read_bytes/ {print $2}' "/proc/$daemon_pid/io") sched_ns=$ns"
}
"$iodriftd" --state-dir "$work/cost-state" --listen 127.0.0.1:0 --dbus none >"$cost/daemon.log" 2>&1 &
daemon_pid=$!
echo "clk_tck=$(getconf CLK_TCK) idle_s=$idle_s" >"$cost/samples.txt"
sample start >>"$cost/samples.txt"
url=""
for _ in $(seq 100); do
  url=$(sed -n 's|.*serving metrics on \(http://[^ ]*\).*|\1|p' "$cost/daemon.log" | head -1)
  [ -n "$url" ] && break
  kill -0 "$daemon_pid" 2>/dev/null || { log "iodriftd exited:"; cat "$cost/daemon.log" >&2; exit 1; }
  sleep 0.1
done
# First cycle: the scheduler starts the six probes 2 s after start, 1 s apart. Poll (1 scrape/s)
# until all six have a result, then leave it idle for ACC_IDLE_SECONDS in the background.
if python3 "$helper" wait-runs "$url" 6 40 >"$cost/wait.txt" 2>&1; then
  sample cycle_done >>"$cost/samples.txt"
  (
    sleep "$idle_s"
    sample idle_done >>"$cost/samples.txt"
    python3 "$helper" wait-runs "$url" 0 1 >>"$cost/wait.txt" 2>&1
    kill -TERM "$daemon_pid" 2>/dev/null
  ) &
  sampler_pid=$!
else
  log "warning: the daemon's first cycle did not complete: $(cat "$cost/wait.txt")"
  kill -TERM "$daemon_pid" 2>/dev/null || true
fi

# ---------------------------------------------------------------------------------------------
# Set-up: a 1 GiB urandom loop device and a 1 GiB urandom file on ext4.
fs_dir=$work/fs
mkdir -p "$fs_dir"
if [ "${ACC_FS:-auto}" = loop ] || [ "$(stat -f -c %T "$work")" != "ext2/ext3" ]; then
  log "$work_parent is not ext4: making an ext4 on a second loop device"
  truncate -s 1600M "$work/ext4.img"
  mkfs.ext4 -q -F "$work/ext4.img"
  dev=$(losetup --find --show "$work/ext4.img"); loops+=("$dev")
  mount "$dev" "$fs_dir"; mounted=$fs_dir
  fs_desc="ext4 on $dev (loop, backing file in $work_parent)"
else
  fs_desc="ext4 $(findmnt -no SOURCE --target "$work" 2>/dev/null || echo '?') (root filesystem)"
fi
log "writing 2 × 1 GiB of urandom data"
head -c 1G /dev/urandom >"$work/loop.img" &
gen1=$!
head -c 1G /dev/urandom >"$fs_dir/probe.dat" &
gen2=$!
wait "$gen1" "$gen2"
sync "$work/loop.img" "$fs_dir/probe.dat"   # a dirty backing file wrecks loop figures
# Clean page cache of both files out of the way (dd: count=0 + nocache drops the whole file).
dd if="$work/loop.img" iflag=nocache count=0 status=none
dd if="$fs_dir/probe.dat" iflag=nocache count=0 status=none
loopdev=$(losetup --direct-io=on --find --show "$work/loop.img"); loops+=("$loopdev")
lname=$(basename "$loopdev")
[ "$(cat "/sys/block/$lname/loop/dio" 2>/dev/null)" = 1 ] || log "warning: $loopdev has dio=0"
file=$fs_dir/probe.dat
loop_bytes=$(blockdev --getsize64 "$loopdev")
file_bytes=$(stat -c %s "$file")
mkdir -p "$fs_dir/meta64" "$fs_dir/meta16k" "$fs_dir/bonnie" "$work/state" "$work/raw" "$work/bin"

# The memcpy reference: the memory probe's method in plain C (memory.h): hot = 2 MiB -> 2 MiB,
# 2 warm-up copies, then 5 windows of 50 ms, median and max; stream = two mmapped S-byte
# buffers, first touch (one write per page) timed alone, one warm-up pass and one timed pass in
# 2 MiB chunks. Rates count the bytes copied (one side), as the probe does.
cat >"$work/bin/memcpy.c" <<'EOF'
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void clobber(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }
static char *map(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) { perror("mmap"); exit(1); }
  return p;
}
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
  const size_t H = 2u << 20, S = argc > 1 ? strtoull(argv[1], NULL, 10) : 512u << 20;
  const double window = argc > 2 ? atof(argv[2]) : 0.05;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  char *hs = map(H), *hd = map(H);
  for (size_t i = 0; i < H; i++) hs[i] = (char)(i * 131 + 7);
  memset(hd, 0, H);
  for (int i = 0; i < 2; i++) { memcpy(hd, hs, H); clobber(hd); }
  double r[5];
  for (int w = 0; w < 5; w++) {
    size_t n = 0; double t0 = now(), e;
    do { memcpy(hd, hs, H); clobber(hd); n += H; e = now() - t0; } while (e < window);
    r[w] = n / e;
  }
  qsort(r, 5, sizeof r[0], cmp);
  char *s = map(S), *d = map(S);
  double f0 = now();
  for (size_t o = 0; o < S; o += page) s[o] = 1;
  for (size_t o = 0; o < S; o += page) d[o] = 1;
  clobber(s); clobber(d);
  double tf = now() - f0, tc = 0;
  for (int pass = 0; pass < 2; pass++) {
    double t0 = now();
    for (size_t o = 0; o < S; o += H) memcpy(d + o, s + o, H);
    clobber(d);
    tc = now() - t0;
  }
  printf("hot_bytes_per_second=%.0f\nhot_max_bytes_per_second=%.0f\n", r[2], r[4]);
  printf("stream_bytes_per_second=%.0f\npage_alloc_bytes_per_second=%.0f\nstream_buffer_bytes=%zu\n",
         S / tc, 2.0 * S / tf, S);
  return 0;
}
EOF
cc -O2 -o "$work/bin/memcpy" "$work/bin/memcpy.c"
# The memory probe's default stream size: clamp(2 × LLC, 64 MiB, 512 MiB) (memory.h).
llc_kib=$(sed -n 's/K$//p' /sys/devices/system/cpu/cpu0/cache/index3/size 2>/dev/null || true)
stream_bytes=$(( ${llc_kib:-0} * 2048 ))
[ "$stream_bytes" -ge $((64 << 20)) ] || stream_bytes=$((64 << 20))
[ "$stream_bytes" -le $((512 << 20)) ] || stream_bytes=$((512 << 20))

# iodriftd configs (absolute paths; validated with --check-config).
sched="scheduler: {nice: $nice_level}"
meta_files=$((bonnie_n * 1024))
[ "$meta_files" -le 100000 ] || meta_files=100000   # the config's limit for `files`
cat >"$work/loop.yaml" <<EOF
state_dir: $work/state
log_level: warn
$sched
probes:
  - {name: loop-cached, kind: cached, target: $loopdev, interval: 5m, timeout: 30s}
  - {name: loop-buffered, kind: buffered, target: $loopdev, interval: 5m, size: ${size_mib}MiB, timeout: 30s, time_budget: 5s}
  - {name: loop-direct, kind: direct, target: $loopdev, interval: 5m, size: ${size_mib}MiB, timeout: 30s, time_budget: 5s}
  - {name: loop-random, kind: random, target: $loopdev, interval: 5m, requests: 64, timeout: 30s}
  - {name: loop-random-default, kind: random, target: $loopdev, interval: 5m, timeout: 30s}
EOF
cat >"$work/file.yaml" <<EOF
state_dir: $work/state
log_level: warn
$sched
probes:
  - {name: file-buffered, kind: buffered, target: $file, interval: 5m, size: ${size_mib}MiB, timeout: 30s, time_budget: 5s}
  - {name: file-direct, kind: direct, target: $file, interval: 5m, size: ${size_mib}MiB, timeout: 30s, time_budget: 5s}
  - {name: file-random, kind: random, target: $file, interval: 5m, requests: 64, timeout: 30s}
  - {name: file-random-default, kind: random, target: $file, interval: 5m, timeout: 30s}
EOF
cat >"$work/misc.yaml" <<EOF
state_dir: $work/state
log_level: warn
$sched
probes:
  - {name: meta-64, kind: metadata, target: $fs_dir/meta64, interval: 5m, files: 64, timeout: 30s}
  - {name: meta-16k, kind: metadata, target: $fs_dir/meta16k, interval: 5m, files: $meta_files, timeout: 60s}
  - {name: memory, kind: memory, interval: 5m, timeout: 30s}
EOF
# As deployed: the daemon's default niceness (no scheduler block). Memory with a 64 MiB stream:
# only its hot-copy figure is used here.
cat >"$work/nice10.yaml" <<EOF
state_dir: $work/state
log_level: warn
probes:
  - {name: loop-cached-default-nice, kind: cached, target: $loopdev, interval: 5m, timeout: 30s}
  - {name: memory-default-nice, kind: memory, interval: 5m, size: 64MiB, timeout: 30s}
EOF
if ! "$iodriftd" --check-config --config "$work/loop.yaml" >/dev/null 2>&1; then
  log "warning: this iodriftd does not take scheduler.nice; probe threads keep its default niceness"
  sed -i '/^scheduler: /d' "$work/loop.yaml" "$work/file.yaml" "$work/misc.yaml"
  nice_level=default
fi
for c in loop file misc nice10; do
  "$iodriftd" --check-config --config "$work/$c.yaml" >&2 || { log "invalid generated config $c.yaml"; exit 1; }
done

# ---------------------------------------------------------------------------------------------
# Steps. Each writes its stdout to raw/rN/NAME (stderr to NAME.err); a failing tool leaves the
# figure without that pair instead of ending the run.
round_dir=""
step() {  # NAME COMMAND...
  local name=$1 rc=0; shift
  # In the background and waited for, so that SIGTERM/SIGINT run the traps at once (bash defers
  # them while a foreground child runs); cleanup stops the step (timeout passes the signal on).
  timeout -k 5 90 "$@" >"$round_dir/$name" 2>"$round_dir/$name.err" &
  step_pid=$!
  wait "$step_pid" || rc=$?
  step_pid=""
  if [ "$rc" != 0 ]; then
    log "warning: round $round: $name failed: $(tail -n 2 "$round_dir/$name.err" | tr '\n' ' ')"
  fi
}
settle() { sync; sleep "$settle_s"; }
dropfile() { dd if="$file" iflag=nocache count=0 status=none; }
fio_common=(--readonly --ioengine=psync --iodepth=1 --numjobs=1 --output-format=json)
# Sequential, the probe's region and budget: [0, ACC_SIZE_MIB) in 1 MiB preads.
fio_seq_direct=(fio --name=seq-direct --direct=1 --rw=read --bs=1M --size="${size_mib}M" "${fio_common[@]}")
# Buffered: fio drops the region first (invalidate=1: fadvise DONTNEED on a file, BLKFLSBUF on a
# device) and, with fadvise_hint=0, reads with the default readahead as the probe does.
fio_seq_buffered=(fio --name=seq-buffered --direct=0 --invalidate=1 --fadvise_hint=0 --rw=read --bs=1M
                  --size="${size_mib}M" "${fio_common[@]}")
# 1000 requests over the whole target, fresh offsets every run (randrepeat=0), with replacement
# (norandommap), like the probe's PRNG.
fio_rand=(fio --name=randread --direct=1 --rw=randread --bs=4k --number_ios=1000 --randrepeat=0
          --norandommap "${fio_common[@]}")
# 65 requests back to back, the first a warm-up as in the probe; working set = the whole target
# (ioping's default -S is 1 MiB, a region that stays in every cache below).
ioping_cmd=(ioping -D -i 0 -c 65 -B)
once=("$iodriftd" --once --json --config)

block_loop_iodrift() { settle; step loop.json "${once[@]}" "$work/loop.yaml"; }
block_loop_ref() {
  step loop.hdparm_T hdparm -T "$loopdev"       # sync + 3 s pause, then 2 s of cached reads
  step loop.fio_buffered "${fio_seq_buffered[@]}" --filename="$loopdev"
  step loop.hdparm_t hdparm -t "$loopdev"       # sync + 3 s pause, then 3 s of buffered reads
  step loop.fio_direct "${fio_seq_direct[@]}" --filename="$loopdev"
  step loop.fio_rand "${fio_rand[@]}" --filename="$loopdev"
  step loop.ioping "${ioping_cmd[@]}" -S "$loop_bytes" "$loopdev"
}
block_file_iodrift() { dropfile; settle; step file.json "${once[@]}" "$work/file.yaml"; }
block_file_ref() {
  dropfile
  step file.fio_direct "${fio_seq_direct[@]}" --filename="$file"
  step file.fio_rand "${fio_rand[@]}" --filename="$file"
  step file.ioping "${ioping_cmd[@]}" -S "$file_bytes" "$file"
  settle
  step file.fio_buffered "${fio_seq_buffered[@]}" --filename="$file"
  dropfile
}
block_misc_iodrift() {
  settle
  step misc.json "${once[@]}" "$work/misc.yaml"
  step nice10.json "${once[@]}" "$work/nice10.yaml"
}
block_misc_ref() {
  step bonnie.csv bonnie++ -q -s 0 -n "$bonnie_n" -d "$fs_dir/bonnie" -u root
  settle
  step memcpy.txt "$work/bin/memcpy" "$stream_bytes" 0.05
}
block() {  # loop|file|misc: iodrift first in odd rounds, the reference tools first in even ones
  if [ $((round % 2)) = 1 ]; then "block_$1_iodrift"; "block_$1_ref"; else "block_$1_ref"; "block_$1_iodrift"; fi
}

# ---------------------------------------------------------------------------------------------
{
  echo "host=$(hostname) kernel=$(uname -r) cpus=$(nproc) load=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "iodriftd=$("$iodriftd" --version 2>&1 | head -1) path=$iodriftd"
  echo "loop=$loopdev dio=$(cat "/sys/block/$lname/loop/dio" 2>/dev/null) scheduler=$(sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/$lname/queue/scheduler") read_ahead_kb=$(cat "/sys/block/$lname/queue/read_ahead_kb") logical_block=$(cat "/sys/block/$lname/queue/logical_block_size") bytes=$loop_bytes backing=$(findmnt -no FSTYPE --target "$work")"
  echo "file=$file bytes=$file_bytes fs=$fs_desc"
  echo "tools=hdparm $(hdparm -V 2>&1 | awk '{print $2}'), $(fio --version), ioping $(ioping -v 2>&1 | awk '{print $2}'), $(cc --version | head -1)"
  echo "settings=size_mib=$size_mib stream_bytes=$stream_bytes settle_s=$settle_s nice=$nice_level bonnie_n=$bonnie_n"
} >"$raw/setup.txt"

round=0
round_seconds=0
cost_reserve=5
for round in $(seq 1 "$pairs"); do
  if [ "$round" -gt 1 ] && [ $((SECONDS + round_seconds + cost_reserve)) -gt "$deadline" ]; then
    log "warning: stopping after $((round - 1)) pairs to stay within ACC_DEADLINE=$deadline s"
    echo "stopped_early=$((round - 1))" >>"$raw/setup.txt"
    break
  fi
  round_dir=$raw/r$round
  mkdir -p "$round_dir"
  start=$SECONDS
  log "round $round/$pairs (t=${SECONDS}s)"
  block loop
  block file
  block misc
  round_seconds=$((SECONDS - start))
done
echo "rounds_end_seconds=$SECONDS" >>"$raw/setup.txt"

if [ -n "$sampler_pid" ]; then
  kill -0 "$sampler_pid" 2>/dev/null && log "waiting for the daemon's idle window to end"
  wait "$sampler_pid" 2>/dev/null || true
  sampler_pid=""
fi
if [ -n "$daemon_pid" ]; then
  kill -TERM "$daemon_pid" 2>/dev/null || true
  wait "$daemon_pid" 2>/dev/null || true
  daemon_pid=""
fi
echo "total_seconds=$SECONDS" >>"$raw/setup.txt"
echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$raw/setup.txt"

python3 "$helper" report "$raw"
