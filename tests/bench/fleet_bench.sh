#!/bin/sh
# Fleet bench: tests/fleet/fleet_test.py with 100 iodriftd instances, a 2 s
# scrape/evaluation interval, probes every 10 s and a 120 s measuring window; prints the figures of
# docs/fleet.md "A fleet: Prometheus per site, VictoriaMetrics central" (series per host, samples/s
# ingested by VictoriaMetrics, rule evaluation time, bytes per sample, 10,000-host extrapolation).
# Not a timed test: exits 77 (skipped) unless IODRIFT_BENCH=1. Every FLEET_* can be overridden:
#   IODRIFT_BENCH=1 IODRIFTD=build/bin/iodriftd tests/bench/fleet_bench.sh
#   IODRIFT_BENCH=1 ctest --test-dir build -R bench.fleet -V
set -eu
if [ "${IODRIFT_BENCH:-}" != 1 ]; then
  echo "SKIPPED: set IODRIFT_BENCH=1 to run the fleet bench (~5 min)"
  exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export IODRIFTD="${IODRIFTD:-$repo/build/bin/iodriftd}"
export IODRIFT_SOURCE_DIR="${IODRIFT_SOURCE_DIR:-$repo}"
export PYTHONPATH="$repo/tests/lib${PYTHONPATH:+:$PYTHONPATH}"
export FLEET_N="${FLEET_N:-100}" FLEET_SECONDS="${FLEET_SECONDS:-120}"
export FLEET_INTERVAL="${FLEET_INTERVAL:-2}" FLEET_PROBE_INTERVAL="${FLEET_PROBE_INTERVAL:-10}"
export FLEET_DEADLINE="${FLEET_DEADLINE:-600}"
exec python3 "$repo/tests/fleet/fleet_test.py"
