#!/usr/bin/env python3
"""Measurement half of bench_vs_node_exporter.sh (python3, stdlib only).

The shell script starts the two exporters and owns their lifetime; this helper only measures
them, given each one's name, PID and metrics URL:

  scrape_bench.py --target iodriftd PID URL --target node_exporter PID URL [options]

The first target is the candidate (iodriftd), the second the reference (node_exporter); every
ratio is first / second. Each figure is taken in ROUNDS rounds, the two targets alternating
inside a round (A B, then B A in the next round) so drift in the machine's load hits both
alike, and the median over the rounds is reported.

Figures:
  cpu_ms_per_scrape_{plain,gzip}  server CPU (utime+stime of /proc/PID/stat, all threads) per
                                  scrape over SCRAPES sequential keep-alive scrapes (at least
                                  MIN_SECONDS of them; cut at MAX_SECONDS when the machine is
                                  slow), one connection, tight client loop
  p50_ms_c{1,8}, p99_ms_c{1,8}    wrk --latency with 1 and 8 connections, Accept-Encoding: gzip
  rps_c8, cpu_ms_per_req_c8       wrk's requests/s with 8 connections and server CPU per request
  rss_warm_mib                    VmRSS after a warm-up of 50 plain + 50 gzip scrapes
  anon_warm_mib                   its anonymous part (RssAnon: heap, malloc arenas, stacks)
  uss_warm_mib, pss_warm_mib      private (unshared) and proportional set size, smaps_rollup
  rss_end_mib, hwm_end_mib        VmRSS and VmHWM (peak RSS) after the whole run
  bytes_{plain,gzip}              body bytes on the wire per scrape
  series                          sample lines in one plain scrape
"""
import argparse
import collections
import http.client
import os
import re
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse

CLK_TCK = os.sysconf("SC_CLK_TCK")
MIN_SCRAPES = 100


class Target:
    def __init__(self, name, pid, url):
        self.name = name
        self.pid = int(pid)
        parsed = urllib.parse.urlsplit(url)
        self.url = url
        self.host = parsed.hostname
        self.port = parsed.port
        self.path = parsed.path or "/metrics"
        self.rounds = {}  # figure -> [value per round]
        self.once = {}  # figure -> value measured once
        self.warnings = []

    def record(self, key, value):
        self.rounds.setdefault(key, []).append(value)

    def value(self, key):
        if key in self.once:
            return self.once[key]
        values = self.rounds.get(key)
        return statistics.median(values) if values else None


# --- /proc readers -------------------------------------------------------------------------------

def cpu_seconds(pid):
    """utime + stime of the whole process (live and exited threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def rollup_kib(pid):
    """Pss and Private_Clean + Private_Dirty (USS) from smaps_rollup, in KiB."""
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("Pss", "Private_Clean", "Private_Dirty"):
                out[key] = int(rest.split()[0])
    return out.get("Pss"), out.get("Private_Clean", 0) + out.get("Private_Dirty", 0)


def _mapped_pfns(pid, files_only=False):
    """[(mapping, PFN)] of every present page of `pid`, or of its file mappings only with
    files_only (/proc/PID/smaps + pagemap; root). The mapping is the file's base name, or
    [heap], [stack], [anon] ..."""
    page = os.sysconf("SC_PAGE_SIZE")
    ranges = []
    with open(f"/proc/{pid}/smaps") as f:
        start = end = name = None
        for line in f:
            fields = line.split()
            if "-" in fields[0] and not fields[0].endswith(":"):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                name = os.path.basename(fields[5]) if len(fields) > 5 else "[anon]"
            elif fields[0] == "Rss:" and int(fields[1]) > 0:
                if not files_only or not name.startswith("["):
                    ranges.append((start, end, name))
    out = []
    chunk = 1 << 16  # pages per pagemap read (512 KiB of entries)
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        for start, end, name in ranges:
            for first in range(start // page, end // page, chunk):
                f.seek(first * 8)
                data = f.read(min(chunk, end // page - first) * 8)
                for (entry,) in struct.iter_unpack("<Q", data):
                    if entry >> 63:  # present
                        out.append((name, entry & ((1 << 55) - 1)))
    return out


def other_iodriftd_pids(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != pid:
            try:
                if os.path.basename(os.readlink(f"/proc/{d}/exe")).startswith("iodriftd"):
                    out.append(int(d))
            except OSError:
                pass
    return out


def pss_alone_by_mapping(pid):
    """PSS of `pid` as if it were the only iodriftd on the machine, KiB per mapping: every present
    page counts page_size / (its map count less the other iodriftd processes mapping it), so
    shared library pages are still split with every other program (as on a real host) but not
    with the other daemons of a benchmark or a test run (which halve a library's PSS per extra
    instance). Needs root (/proc/PID/pagemap's PFNs, /proc/kpagecount); None otherwise."""
    page_kib = os.sysconf("SC_PAGE_SIZE") / 1024
    try:
        mine = _mapped_pfns(pid)
        others = collections.Counter()
        for other in other_iodriftd_pids(pid):
            try:
                # Only file pages are shared between processes (an ASan build's anonymous
                # shadow spans terabytes: never read whole).
                others.update({pfn for _, pfn in _mapped_pfns(other, files_only=True)})
            except OSError:
                pass  # exited meanwhile
        out = collections.Counter()
        with open("/proc/kpagecount", "rb") as kpc:
            for name, pfn in mine:
                if pfn == 0:
                    return None  # PFNs hidden: not root
                kpc.seek(pfn * 8)
                count = struct.unpack("<Q", kpc.read(8))[0]
                out[name] += page_kib / max(1, count - others.get(pfn, 0))
        return out
    except PermissionError:
        return None


def pss_alone_kib(pid):
    """Sum of pss_alone_by_mapping (KiB), or None."""
    by_mapping = pss_alone_by_mapping(pid)
    return None if by_mapping is None else sum(by_mapping.values())

def alive(target):
    return os.path.exists(f"/proc/{target.pid}/stat")


# --- scraping ------------------------------------------------------------------------------------

def scrape_loop(target, gzip_ok, min_count, min_seconds, max_seconds=None):
    """Sequential keep-alive GETs until min_count and min_seconds are both reached, or until
    max_seconds once at least MIN_SCRAPES were made (an overloaded machine must not stretch the
    run). Returns (count, last body bytes, last body, content-encoding)."""
    headers = {"Accept-Encoding": "gzip"} if gzip_ok else {"Accept-Encoding": "identity"}
    conn = http.client.HTTPConnection(target.host, target.port, timeout=10)
    count = 0
    body = b""
    encoding = None
    start = time.monotonic()
    try:
        while count < min_count or time.monotonic() - start < min_seconds:
            if (max_seconds is not None and count >= MIN_SCRAPES
                    and time.monotonic() - start >= max_seconds):
                break
            conn.request("GET", target.path, headers=headers)
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"{target.name}: GET {target.url} returned {resp.status}")
            encoding = resp.getheader("Content-Encoding")
            count += 1
    finally:
        conn.close()
    return count, len(body), body, encoding


def measure_cpu(target, gzip_ok, scrapes, min_seconds, max_seconds):
    before = cpu_seconds(target.pid)
    count, nbytes, body, encoding = scrape_loop(target, gzip_ok, scrapes, min_seconds,
                                                max_seconds)
    after = cpu_seconds(target.pid)
    kind = "gzip" if gzip_ok else "plain"
    target.record(f"cpu_ms_per_scrape_{kind}", (after - before) * 1000.0 / count)
    target.record(f"bytes_{kind}", nbytes)
    target.record(f"scrapes_{kind}", count)
    if gzip_ok and not body.startswith(b"\x1f\x8b"):
        warn(target, f"asked for gzip but got Content-Encoding {encoding!r}")
    if not gzip_ok:
        text = body.decode(errors="replace")
        target.record("series", sum(1 for line in text.splitlines()
                                    if line and not line.startswith("#")))
        target.once["families"] = sum(1 for line in text.splitlines()
                                      if line.startswith("# TYPE "))
        failed = sorted(set(re.findall(r'_collector_success\{collector="([^"]+)"\} 0\b', text)))
        if failed:
            warn(target, "collectors reporting success 0: " + ", ".join(failed))


def warn(target, message):
    if message not in target.warnings:
        target.warnings.append(message)


# --- wrk -----------------------------------------------------------------------------------------

UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0, "h": 3600000.0}


def parse_time_ms(text):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m|h)", text)
    if not m:
        raise ValueError(f"cannot parse wrk time {text!r}")
    return float(m.group(1)) * UNITS_MS[m.group(2)]


def run_wrk(wrk, lua, target, connections, seconds):
    threads = min(connections, os.cpu_count() or 1)
    cmd = [wrk, "--latency", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s",
           "-s", lua, target.url]
    before = cpu_seconds(target.pid)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30)
    after = cpu_seconds(target.pid)
    if out.returncode != 0:
        raise RuntimeError(f"wrk failed ({out.returncode}): {out.stderr.strip()}")
    text = out.stdout
    pct = dict(re.findall(r"^\s+(50|75|90|99)%\s+(\S+)\s*$", text, re.M))
    requests = re.search(r"^\s+(\d+) requests in", text, re.M)
    rps = re.search(r"^Requests/sec:\s+([0-9.]+)", text, re.M)
    if "50" not in pct or "99" not in pct or not requests or not rps:
        raise RuntimeError(f"cannot parse wrk output:\n{text}")
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if bad:
        warn(target, f"wrk -c{connections}: {bad.group(1)} non-2xx responses")
    errors = re.search(r"Socket errors: (.*)", text)
    if errors:
        warn(target, f"wrk -c{connections}: socket errors: {errors.group(1)}")
    c = connections
    target.record(f"p50_ms_c{c}", parse_time_ms(pct["50"]))
    target.record(f"p99_ms_c{c}", parse_time_ms(pct["99"]))
    target.record(f"rps_c{c}", float(rps.group(1)))
    n = int(requests.group(1))
    if n:
        target.record(f"cpu_ms_per_req_c{c}", (after - before) * 1000.0 / n)


# --- report --------------------------------------------------------------------------------------

# (key, label, unit scale/format, target ratio or None)
ROWS = [
    ("cpu_ms_per_scrape_plain", "CPU per scrape, plain", "ms", None),
    ("cpu_ms_per_scrape_gzip", "CPU per scrape, gzip", "ms", 1 / 5),
    ("p50_ms_c1", "latency p50, 1 conn, gzip", "ms", 1 / 3),
    ("p99_ms_c1", "latency p99, 1 conn, gzip", "ms", None),
    ("p50_ms_c8", "latency p50, 8 conns, gzip", "ms", None),
    ("p99_ms_c8", "latency p99, 8 conns, gzip", "ms", None),
    ("rps_c8", "throughput, 8 conns, gzip", "req/s", None),
    ("cpu_ms_per_req_c8", "CPU per request, 8 conns", "ms", None),
    ("rss_warm_mib", "RSS after warm-up", "MiB", 1 / 3),
    ("anon_warm_mib", "  of which anonymous", "MiB", None),
    ("uss_warm_mib", "USS (private) after warm-up", "MiB", None),
    ("pss_warm_mib", "PSS after warm-up", "MiB", None),
    ("rss_end_mib", "RSS after the run", "MiB", None),
    ("hwm_end_mib", "peak RSS (VmHWM)", "MiB", None),
    ("bytes_plain", "bytes per scrape, plain", "B", None),
    ("bytes_gzip", "bytes per scrape, gzip", "B", None),
    ("series", "series per scrape", "", None),
    ("families", "metric families", "", None),
    ("cpu_us_per_series_gzip", "CPU per series, gzip", "us", None),
]


def fmt(value, unit):
    if value is None:
        return "-"
    if unit in ("B", "", "req/s"):
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def report(a, b, args, started):
    for t in (a, b):
        gz = t.value("cpu_ms_per_scrape_gzip")
        series = t.value("series")
        if gz is not None and series:
            t.once["cpu_us_per_series_gzip"] = gz * 1000.0 / series

    uname = os.uname()
    print()
    print(f"iodrift benchmark: {a.name} vs {b.name} on loopback — median of {args.rounds} rounds")
    print(f"host {uname.nodename}, kernel {uname.release}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}; {args.scrapes} scrapes per CPU figure, "
          f"wrk {args.wrk_seconds} s per latency figure")
    print()
    header = f"{'figure':<28} {'unit':>5} {a.name:>12} {b.name:>14} {'ratio':>7}  target"
    print(header)
    print("-" * len(header) + "-------")
    kv = []
    failed = []
    for key, label, unit, goal in ROWS:
        va, vb = a.value(key), b.value(key)
        ratio = va / vb if va is not None and vb else None
        verdict = ""
        if goal is not None and ratio is not None:
            ok = ratio <= goal
            verdict = f"<= 1/{round(1 / goal)} {'PASS' if ok else 'MISS'}"
            if not ok:
                failed.append(key)
        print(f"{label:<28} {unit:>5} {fmt(va, unit):>12} {fmt(vb, unit):>14} "
              f"{(f'{ratio:.3f}' if ratio is not None else '-'):>7}  {verdict}".rstrip())
        for t, v in ((a, va), (b, vb)):
            if v is not None:
                kv.append(f"bench.{t.name}.{key}={v:.6g}")
                per_round = t.rounds.get(key)
                if per_round and len(per_round) > 1:
                    kv.append(f"bench.{t.name}.{key}.rounds="
                              + ",".join(f"{x:.6g}" for x in per_round))
        if ratio is not None:
            kv.append(f"bench.ratio.{key}={ratio:.4g}")
        if goal is not None and ratio is not None:
            kv.append(f"bench.target.{key}={'pass' if ratio <= goal else 'miss'}")
    print()
    for t in (a, b):
        counts = t.rounds.get("scrapes_plain", []) + t.rounds.get("scrapes_gzip", [])
        if counts and min(counts) < args.scrapes:
            warn(t, f"slow machine: CPU loops cut at {args.max_seconds:g} s after "
                    f"{min(counts)}-{max(counts)} scrapes instead of {args.scrapes}")
        for w in t.warnings:
            print(f"warning: {t.name}: {w}")
    print(f"ratio = {a.name} / {b.name}; lower is better for every row except throughput.")
    print(f"targets: {'all met' if not failed else 'missed: ' + ', '.join(failed)}; "
          f"took {time.monotonic() - started:.0f} s")
    print()
    for t in (a, b):
        for kind in ("plain", "gzip"):
            counts = t.rounds.get(f"scrapes_{kind}")
            if counts:
                kv.append(f"bench.{t.name}.scrapes_{kind}.rounds=" + ",".join(map(str, counts)))
    kv.append(f"bench.rounds={args.rounds}")
    kv.append(f"bench.cpus={os.cpu_count()}")
    kv.append(f"bench.kernel={uname.release}")
    kv.append(f"bench.targets_met={'yes' if not failed else 'no'}")
    kv.append(f"bench.seconds={time.monotonic() - started:.0f}")
    print("\n".join(kv))
    return failed


def on_signal(signum, _frame):
    # SystemExit unwinds through subprocess.run, which kills a running wrk on the way out.
    raise SystemExit(128 + signum)


def main():
    signal.signal(signal.SIGTERM, on_signal)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--target", nargs=3, action="append", metavar=("NAME", "PID", "URL"),
                   required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--scrapes", type=int, default=500)
    p.add_argument("--min-seconds", type=float, default=1.0,
                   help="keep scraping at least this long, so a cheap server still gets "
                        "enough clock ticks of CPU time to measure")
    p.add_argument("--max-seconds", type=float, default=4.0,
                   help="stop a CPU figure's scrape loop after this long (at least "
                        f"{MIN_SCRAPES} scrapes are always made)")
    p.add_argument("--wrk", default="wrk")
    p.add_argument("--wrk-seconds", type=int, default=6)
    p.add_argument("--connections", default="1,8")
    p.add_argument("--enforce", action="store_true", help="exit 1 when a target is missed")
    args = p.parse_args()
    if len(args.target) != 2:
        p.error("exactly two --target")
    started = time.monotonic()
    a, b = (Target(*t) for t in args.target)
    conns = [int(c) for c in args.connections.split(",")]

    with tempfile.TemporaryDirectory(prefix="iodrift-bench-") as tmp:
        lua = os.path.join(tmp, "gzip.lua")
        with open(lua, "w") as f:
            f.write('wrk.method = "GET"\nwrk.headers["Accept-Encoding"] = "gzip"\n')

        # Warm-up: both servers have built their metric families and grown their buffers.
        for t in (a, b):
            scrape_loop(t, False, 50, 0)
            scrape_loop(t, True, 50, 0)
        time.sleep(0.5)
        for t in (a, b):
            t.once["rss_warm_mib"] = status_kib(t.pid, "VmRSS") / 1024.0
            t.once["anon_warm_mib"] = status_kib(t.pid, "RssAnon") / 1024.0
            pss, uss = rollup_kib(t.pid)
            t.once["uss_warm_mib"] = uss / 1024.0
            t.once["pss_warm_mib"] = pss / 1024.0
        print(f"warm: {a.name} {a.once['rss_warm_mib']:.1f} MiB, "
              f"{b.name} {b.once['rss_warm_mib']:.1f} MiB", file=sys.stderr)

        for r in range(args.rounds):
            order = (a, b) if r % 2 == 0 else (b, a)
            for gzip_ok in (False, True):
                for t in order:
                    measure_cpu(t, gzip_ok, args.scrapes, args.min_seconds, args.max_seconds)
            for c in conns:
                for t in order:
                    try:
                        run_wrk(args.wrk, lua, t, c, args.wrk_seconds)
                    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
                        # One bad sample leaves that round out of the median, not the whole run.
                        warn(t, f"round {r + 1}: wrk -c{c} failed: {e}")
            for t in (a, b):
                if not alive(t):
                    raise RuntimeError(f"{t.name} (pid {t.pid}) exited during the run")
            print(f"round {r + 1}/{args.rounds} done after "
                  f"{time.monotonic() - started:.0f} s", file=sys.stderr)

        time.sleep(0.2)
        for t in (a, b):
            t.once["rss_end_mib"] = status_kib(t.pid, "VmRSS") / 1024.0
            t.once["hwm_end_mib"] = status_kib(t.pid, "VmHWM") / 1024.0

    failed = report(a, b, args, started)
    return 1 if failed and args.enforce else 0


if __name__ == "__main__":
    sys.exit(main())
