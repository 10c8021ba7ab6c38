#!/usr/bin/env bash
# Soak: iodriftd with fast probes of every kind, scraped every second, RunProbe/Snapshot over a
# private D-Bus every 10 s and a config reload (SIGHUP) every 5 min, for SOAK_SECONDS (default
# 3600). Samples VmRSS, open fds and threads every minute into $SOAK_DIR/samples.csv and fails
# when a scrape fails, the daemon dies, or — from the first sample after 10 % of the run to the
# end — RSS grows by more than SOAK_RSS_SLACK_KIB (default 16384) or fds by more than 4.
#
#   IODRIFT_BENCH=1 SOAK_SECONDS=3600 IODRIFTD=build/bin/iodriftd \
#     IODRIFTCTL=build/bin/iodriftctl tests/reliability/soak.sh
#   (or: IODRIFT_BENCH=1 SOAK_SECONDS=3600 ctest --test-dir build -R reliability.soak -V)
#
# Skipped (77) unless IODRIFT_BENCH=1: a soak is not a CI test. No root needed.
set -euo pipefail

[ "${IODRIFT_BENCH:-}" = 1 ] || { echo "SKIPPED: set IODRIFT_BENCH=1 to soak"; exit 77; }
: "${IODRIFTD:?IODRIFTD must name the iodriftd binary}"
command -v curl >/dev/null || { echo "SKIPPED: curl is not installed"; exit 77; }
duration=${SOAK_SECONDS:-3600}
rss_slack=${SOAK_RSS_SLACK_KIB:-16384}
work=$(mktemp -d "${SOAK_DIR:-/var/tmp}/iodrift-soak-XXXXXX")
daemon_pid= bus_pid=
cleanup() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null || true
  [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  [ -n "${SOAK_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAILED: $*"; tail -n 30 "$work/daemon.log" || true; exit 1; }

mkdir -p "$work/target" "$work/state"
head -c $((32 << 20)) /dev/urandom > "$work/target/data.bin"
cat > "$work/iodrift.yaml" <<YAML
state_dir: $work/state
log_level: info
probes:
  - {name: soak-cached, kind: cached, target: $work/target/data.bin, interval: 5s}
  - {name: soak-buffered, kind: buffered, target: $work/target/data.bin, interval: 5s, size: 16MiB}
  - {name: soak-direct, kind: direct, target: $work/target, interval: 7s, size: 16MiB}
  - {name: soak-random, kind: random, target: $work/target, interval: 5s}
  - {name: soak-metadata, kind: metadata, target: $work/target, interval: 3s}
  - {name: soak-memory, kind: memory, interval: 60s}
YAML

bus=none
if command -v dbus-daemon >/dev/null && [ -n "${IODRIFTCTL:-}" ]; then
  cat > "$work/bus.conf" <<XML
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:dir=$work</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>
<allow own="*"/></policy></busconfig>
XML
  dbus-daemon --config-file="$work/bus.conf" --print-address=3 --nofork 3>"$work/bus.addr" \
    2>"$work/bus.log" &
  bus_pid=$!
  for _ in $(seq 50); do [ -s "$work/bus.addr" ] && break; sleep 0.1; done
  bus=$(head -n1 "$work/bus.addr")
fi

"$IODRIFTD" --config "$work/iodrift.yaml" --listen 127.0.0.1:0 --dbus "$bus" \
  2>"$work/daemon.log" >/dev/null &
daemon_pid=$!
port=
for _ in $(seq 200); do
  port=$(sed -n 's|.*serving metrics on http://[^ ]*:\([0-9]*\)/metrics.*|\1|p' "$work/daemon.log" | head -n1)
  [ -n "$port" ] && break
  kill -0 "$daemon_pid" 2>/dev/null || fail "iodriftd exited at start"
  sleep 0.1
done
[ -n "$port" ] || fail "iodriftd did not report its port"
echo "soak: ${duration}s, pid $daemon_pid, port $port, bus $bus, work $work"

sample() {
  local rss fds threads r
  # The lowest of 5 readings 0.3 s apart: the memory probe maps up to 1 GiB for about a second.
  rss=
  for _ in 1 2 3 4 5; do
    r=$(awk '/^VmRSS:/ {print $2}' "/proc/$daemon_pid/status")
    if [ -z "$rss" ] || [ "$r" -lt "$rss" ]; then rss=$r; fi
    sleep 0.3
  done
  threads=$(awk '/^Threads:/ {print $2}' "/proc/$daemon_pid/status")
  fds=$(ls "/proc/$daemon_pid/fd" | wc -l)
  echo "$1,$rss,$fds,$threads" >> "$work/samples.csv"
  echo "soak: t=${1}s rss=${rss}KiB fds=$fds threads=$threads scrapes=$scrapes failed=$failed"
}
echo "seconds,rss_kib,fds,threads" > "$work/samples.csv"
start=$(date +%s)
scrapes=0 failed=0 next_sample=0 baseline_row=
while :; do
  now=$(( $(date +%s) - start ))
  [ "$now" -ge "$duration" ] && break
  kill -0 "$daemon_pid" 2>/dev/null || fail "iodriftd died after ${now}s"
  if curl -sf --max-time 10 -H 'Accept-Encoding: gzip' "http://127.0.0.1:$port/metrics" -o /dev/null; then
    scrapes=$((scrapes + 1))
  else
    failed=$((failed + 1))
    echo "soak: scrape failed at ${now}s"
  fi
  if [ "$bus" != none ] && [ $((now % 10)) -eq 0 ]; then
    "$IODRIFTCTL" --bus "$bus" run soak-random >/dev/null 2>&1 || true  # may be rate limited
    "$IODRIFTCTL" --bus "$bus" snapshot >/dev/null || fail "iodriftctl snapshot failed at ${now}s"
  fi
  if [ $((now % 300)) -eq 299 ]; then kill -HUP "$daemon_pid"; fi
  if [ "$now" -ge "$next_sample" ]; then
    sample "$now"
    next_sample=$((next_sample + 60))
    if [ -z "$baseline_row" ] && [ "$now" -ge $((duration / 10)) ]; then
      baseline_row=$(tail -n1 "$work/samples.csv")
    fi
  fi
  sleep 1
done
sample "$duration"
[ -n "$baseline_row" ] || baseline_row=$(sed -n 2p "$work/samples.csv")
last_row=$(tail -n1 "$work/samples.csv")
IFS=, read -r _ rss0 fds0 _ <<<"$baseline_row"
IFS=, read -r _ rss1 fds1 _ <<<"$last_row"
echo "soak: RSS ${rss0} -> ${rss1} KiB, fds ${fds0} -> ${fds1}, $scrapes scrapes ok, $failed failed"
errors=$(grep -c ' error ' "$work/daemon.log" || true)
echo "soak: probe outcomes (last scrape):"
curl -sf "http://127.0.0.1:$port/metrics" | grep '^iodrift_probe_runs_total' | grep -v ' 0$' || true
[ "$failed" -eq 0 ] || fail "$failed scrapes failed"
[ $((rss1 - rss0)) -le "$rss_slack" ] || fail "RSS grew by $((rss1 - rss0)) KiB (slack $rss_slack)"
[ $((fds1 - fds0)) -le 4 ] || fail "open fds grew from $fds0 to $fds1"
kill -TERM "$daemon_pid"
rc=0; wait "$daemon_pid" || rc=$?
daemon_pid=
[ "$rc" -eq 0 ] || fail "iodriftd exited $rc on SIGTERM"
echo "soak: ok ($errors error lines in the log)"
