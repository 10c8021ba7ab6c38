#!/usr/bin/env bash
# Benchmark: iodriftd against prometheus-node-exporter, side by side on loopback, both with only
# the comparable collectors (meminfo, vmstat, slabinfo, pressure, buddyinfo). Prints a table of
# server CPU per scrape, wrk latency, RSS, bytes and series for both, with the ratios
# iodriftd / node_exporter, then the same figures as key=value lines. See tests/bench/README.md.
#
#   IODRIFT_BENCH=1 tests/bench/bench_vs_node_exporter.sh
#
# Without IODRIFT_BENCH=1 it exits 77 at once, so a plain `ctest` reports it skipped.
#
# Environment:
#   IODRIFTD          iodriftd binary (default <source>/build/bin/iodriftd; built with
#                     tools/dev.sh build when missing)
#   NODE_EXPORTER     node_exporter binary (default /usr/bin/prometheus-node-exporter)
#   NODE_EXPORTER_ARGS  extra node_exporter flags, e.g. --collector.vmstat.fields=.*
#   BENCH_ROUNDS      rounds, each figure's median is reported (default 3)
#   BENCH_SCRAPES     sequential scrapes per CPU figure (default 500)
#   BENCH_WRK_SECONDS wrk duration per latency figure and round (default 6)
#   BENCH_ENFORCE=1   exit 1 when iodriftd misses a target (default: report only)
#   BENCH_TIMEOUT     hard limit on the measuring part, seconds (default 170)
set -euo pipefail

SKIP=77
if [ "${IODRIFT_BENCH:-}" != 1 ]; then
  echo "SKIPPED: benchmark; run with IODRIFT_BENCH=1 (see tests/bench/README.md)"
  exit $SKIP
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
iodriftd=${IODRIFTD:-$source_dir/build/bin/iodriftd}
node_exporter=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
config=$source_dir/tests/e2e/no-probes.yaml

log() { printf 'bench: %s\n' "$*" >&2; }
skip() { echo "SKIPPED: $*"; exit $SKIP; }

command -v python3 >/dev/null || skip "python3 not installed"
command -v wrk >/dev/null || skip "wrk not installed (apt-get install wrk)"
command -v curl >/dev/null || skip "curl not installed"
[ -x "$node_exporter" ] || skip "$node_exporter not found (apt-get install prometheus-node-exporter)"
if [ ! -x "$iodriftd" ]; then
  if [ -n "${IODRIFTD:-}" ]; then
    log "IODRIFTD=$IODRIFTD is not an executable; build it first"
    exit 1
  fi
  log "$iodriftd missing; building it with tools/dev.sh build"
  "$source_dir/tools/dev.sh" build >&2
fi
# node_exporter's slabinfo collector, like iodriftd's, reads /proc/slabinfo, which is mode 0400:
# as non-root both lose their slab series and the comparison shrinks (the helper warns).
[ -r /proc/slabinfo ] || log "warning: /proc/slabinfo unreadable (not root): no slabinfo on either side"

work=$(mktemp -d -t iodrift-bench.XXXXXX)
pids=()
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_ready() {  # NAME PID URL LOG
  local deadline=$((SECONDS + 20))
  while [ $SECONDS -lt $deadline ]; do
    kill -0 "$2" 2>/dev/null || { log "$1 exited at start-up:"; cat "$4" >&2; exit 1; }
    curl -sf -o /dev/null "$3" && return 0
    sleep 0.1
  done
  log "$1 not answering on $3 after 20 s:"; cat "$4" >&2; exit 1
}

io_port=$(free_port)
ne_port=$(free_port)
while [ "$ne_port" = "$io_port" ]; do ne_port=$(free_port); done

mkdir -p "$work/state"
"$iodriftd" --config "$config" --listen "127.0.0.1:$io_port" --dbus none \
  --state-dir "$work/state" >"$work/iodriftd.log" 2>&1 &
pids+=($!)
io_pid=$!

# All five collectors exist in Debian 12's node_exporter 1.5.0; buddyinfo and slabinfo are off by
# default there and pressure, meminfo, vmstat on. vmstat keeps its default field filter
# (^(oom_kill|pgpg|pswp|pg.*fault).*, 7 fields) while iodriftd exports its default set (44 fields
# on 6.18: reclaim, compaction, refaults, THP, I/O; `fields: all` for every one), and
# node_exporter's slabinfo exports every cache while iodriftd's exports a selected set: compare
# `series per scrape` before reading the per-scrape ratios.
# shellcheck disable=SC2086
"$node_exporter" --collector.disable-defaults \
  --collector.meminfo --collector.vmstat --collector.slabinfo --collector.pressure \
  --collector.buddyinfo --web.listen-address="127.0.0.1:$ne_port" ${NODE_EXPORTER_ARGS:-} \
  >"$work/node_exporter.log" 2>&1 &
pids+=($!)
ne_pid=$!

wait_ready iodriftd "$io_pid" "http://127.0.0.1:$io_port/metrics" "$work/iodriftd.log"
wait_ready node_exporter "$ne_pid" "http://127.0.0.1:$ne_port/metrics" "$work/node_exporter.log"

log "iodriftd $("$iodriftd" --version 2>&1 | head -1) ($iodriftd) pid $io_pid port $io_port"
log "$("$node_exporter" --version 2>&1 | head -1) pid $ne_pid port $ne_port"

enforce=()
[ "${BENCH_ENFORCE:-}" = 1 ] && enforce=(--enforce)
# In the background and waited for, so a SIGTERM/SIGINT to this script runs the traps at once
# (bash defers traps while a foreground child runs); timeout passes the signal on to the helper.
status=0
timeout --signal=TERM "${BENCH_TIMEOUT:-170}" python3 "$here/scrape_bench.py" \
  --target iodriftd "$io_pid" "http://127.0.0.1:$io_port/metrics" \
  --target node_exporter "$ne_pid" "http://127.0.0.1:$ne_port/metrics" \
  --rounds "${BENCH_ROUNDS:-3}" --scrapes "${BENCH_SCRAPES:-500}" \
  --wrk-seconds "${BENCH_WRK_SECONDS:-6}" --wrk "$(command -v wrk)" "${enforce[@]}" &
helper=$!
pids=("$helper" "${pids[@]}")
wait "$helper" || status=$?
if [ $status -eq 124 ]; then
  log "measurement exceeded ${BENCH_TIMEOUT:-170} s; stopped"
fi
exit $status
