#!/usr/bin/env bash
# Scrape flood: `wrk -c 8 -t 2 -d 30s --latency` against iodriftd's /metrics while probes run
# (a metadata and a cached probe on a scratch directory, every 2 s). Reports the daemon's RSS
# (VmRSS from /proc/PID/status) before and after, wrk's non-2xx responses and socket errors,
# requests/s and the latency percentiles; with FLOOD_TLS=1 the same again over HTTPS with basic
# auth (throw-away certificate, bcrypt cost 10: shows the verification cache at work).
#
#   IODRIFT_BENCH=1 tests/bench/scrape_flood.sh
#   IODRIFT_BENCH=1 ctest --test-dir build -R bench.scrape_flood -V
#
# Without IODRIFT_BENCH=1 it exits 77 at once (CTest: skipped). Not a timed test: it fails only
# when a request gets a non-2xx answer or a socket error, or the daemon dies. Loopback only; the
# daemon is stopped on exit.
#
# Environment:
#   IODRIFTD        iodriftd binary (default <source>/build/bin/iodriftd)
#   FLOOD_DURATION  wrk duration (default 30s)
#   FLOOD_TLS=1     also flood over HTTPS + basic auth
set -euo pipefail

SKIP=77
if [ "${IODRIFT_BENCH:-}" != 1 ]; then
  echo "SKIPPED: benchmark; run with IODRIFT_BENCH=1"
  exit $SKIP
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
iodriftd=${IODRIFTD:-$source_dir/build/bin/iodriftd}
duration=${FLOOD_DURATION:-30s}

skip() { echo "SKIPPED: $*"; exit $SKIP; }
log() { printf 'flood: %s\n' "$*" >&2; }
command -v wrk >/dev/null || skip "wrk not installed (apt-get install wrk)"
command -v curl >/dev/null || skip "curl not installed"
command -v python3 >/dev/null || skip "python3 not installed"
[ -x "$iodriftd" ] || { log "IODRIFTD=$iodriftd is not an executable; build it first"; exit 1; }

work=$(mktemp -d -t iodrift-flood.XXXXXX)
pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# Starts iodriftd on $1 (config file), sets pid, port, base.
start() {
  "$iodriftd" --config "$1" --listen 127.0.0.1:0 --dbus none --state-dir "$work/state" \
    2>"$work/stderr.log" &
  pid=$!
  local i
  for i in $(seq 200); do
    base=$(sed -n 's|.*serving metrics on \(https\?://[^ ]*\)/metrics.*|\1|p' "$work/stderr.log")
    [ -n "$base" ] && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$work/stderr.log" >&2; log "iodriftd exited"; exit 1; }
    sleep 0.05
  done
  log "iodriftd did not report its address"; exit 1
}

stop() { kill -TERM "$pid"; wait "$pid" || true; pid=; }

# flood NAME URL [wrk args...]: prints a summary line, fails on errors.
flood() {
  local name=$1 url=$2; shift 2
  sleep 3  # let the probes run a few times first
  local rss_before; rss_before=$(rss_kib "$pid")
  wrk -c 8 -t 2 -d "$duration" --latency "$@" "$url" >"$work/wrk-$name.txt"
  sleep 1
  local rss_after; rss_after=$(rss_kib "$pid")
  kill -0 "$pid" 2>/dev/null || { log "$name: iodriftd died during the flood"; exit 1; }
  cat "$work/wrk-$name.txt" >&2
  python3 - "$work/wrk-$name.txt" "$name" "$rss_before" "$rss_after" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
name, before, after = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def grab(pattern, default="0"):
    m = re.search(pattern, text)
    return m.group(1) if m else default
requests = int(grab(r"(\d+) requests in"))
non2xx = int(grab(r"Non-2xx or 3xx responses: (\d+)"))
m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
socket_errors = sum(map(int, m.groups())) if m else 0
rps = grab(r"Requests/sec:\s+([\d.]+)")
p50, p90, p99 = (grab(p + r"%\s+(\S+)") for p in ("50", "90", "99"))
print(f"flood {name}: requests={requests} rps={rps} p50={p50} p90={p90} p99={p99} "
      f"non2xx={non2xx} socket_errors={socket_errors} "
      f"rss_before_kib={before} rss_after_kib={after} rss_growth_kib={after - before}")
sys.exit(1 if non2xx or socket_errors or requests == 0 else 0)
PY
}

mkdir -p "$work/probe"
# No memory probe: its copy buffers come and go with each run and would swamp the RSS figures.
probes="probes:
  - name: flood-metadata
    kind: metadata
    target: $work/probe
    interval: 2s
  - name: flood-cached
    kind: cached
    target: $work/probe
    interval: 2s
    size: 8MiB"
printf '%s\n' "$probes" >"$work/plain.yaml"
start "$work/plain.yaml"
flood plain "$base/metrics"
grep -q 'probe="flood-metadata"' <(curl -sS "$base/metrics") || { log "probes did not run"; exit 1; }
stop

if [ "${FLOOD_TLS:-}" = 1 ]; then
  command -v openssl >/dev/null || skip "openssl not installed"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=localhost -keyout "$work/tls.key" -out "$work/tls.crt" >/dev/null 2>&1
  hash=$(python3 -W ignore -c 'import crypt; print(crypt.crypt("flood", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))')
  printf 'http:\n  tls_cert_file: %s\n  tls_key_file: %s\n  basic_auth_users:\n    wrk: %s\n%s\n' \
    "$work/tls.crt" "$work/tls.key" "$hash" "$probes" >"$work/tls.yaml"
  start "$work/tls.yaml"
  flood tls+auth "$base/metrics" -H "Authorization: Basic $(printf 'wrk:flood' | base64)"
  stop
fi
