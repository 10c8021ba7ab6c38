#!/usr/bin/env python3
"""Issue 17's cost table, side by side in one run (python3, stdlib + wrk):

  IODRIFT_BENCH=1 tests/bench/cost_table.py [--rounds 3] [--idle-seconds 60]

Starts three exporters on loopback and measures them alternately (the order rotates every
round, so drift in the machine's load hits all alike), reporting the median over the rounds:
  * iodriftd with every memory-state collector and no probes (tests/e2e/no-probes.yaml),
  * iodriftd with the shipped config/iodrift.yaml (its 6 default probes; state dir and probe
    target moved into a temporary directory, D-Bus off),
  * Debian's prometheus-node-exporter with the comparable collectors (meminfo, vmstat, pressure,
    buddyinfo, slabinfo, stat).
Rows:
  CPU per gzip scrape        utime+stime of the process per sequential keep-alive gzip scrape
  p50 / p99, 1 connection    wrk --latency -c1, Accept-Encoding: gzip
  VmRSS after 1000 scrapes   /proc/PID/status after 1000 gzip scrapes (plus the warm-up)
  idle CPU, no scrapes       CPU-s per hour over --idle-seconds without a request, from the
                             scheduler's nanosecond run time of every thread
                             (/proc/PID/task/*/schedstat; utime's 10 ms ticks are too coarse)
  peak RSS during a memory probe: measured by tests/bench/memory_probe_bench.py (cost-mem); a
                             hook row here reads it from MEMORY_PROBE_PEAK_MIB if set.
The ratio column is iodriftd with the default probes / node_exporter; the goal column is the
issue's. Without IODRIFT_BENCH=1 it exits 77 (skipped), like the other benchmarks.

Environment: IODRIFTD (default <source>/build/bin/iodriftd), NODE_EXPORTER (default
/usr/bin/prometheus-node-exporter).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scrape_bench  # noqa: E402  (the shared measuring helpers next to this script)
from iodrift_test.net import free_port, wait_ready  # noqa: E402

SKIP = 77
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))


def server_ready(name, proc, url, log, timeout=30):
    why = wait_ready(url, [proc], timeout=timeout, interval=0.1)
    if why:
        sys.exit(f"{name}: {why}:\n{open(log).read()}")


def run_ns(pid):
    """Nanoseconds on CPU of every live thread of `pid` (schedstat's first field)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    # Exited threads' time is in the process's utime/stime only; add their ticks.
    return total


def default_config(work, port):
    """config/iodrift.yaml with its paths moved into `work`."""
    with open(os.path.join(SOURCE, "config/iodrift.yaml")) as f:
        text = f.read()
    state = os.path.join(work, "state-default")
    os.makedirs(os.path.join(state, "probe"), exist_ok=True)
    text = text.replace("/var/lib/iodrift/probe", os.path.join(state, "probe"))
    text = re.sub(r"(?m)^state_dir:.*$", f"state_dir: {state}", text)
    text = re.sub(r"(?m)^listen:.*$", f'listen: "127.0.0.1:{port}"', text)
    text = re.sub(r"(?m)^dbus:.*$", "dbus: none", text)
    path = os.path.join(work, "default.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


GOALS = {
    "cpu": "≤ 0.20",
    "p50p99": "p50 ≤ 0.20, p99 ≤ 0.33",
    "rss": "≤ 0.33",
    "peak": "≤ +32 MiB",
    "idle": "≤ 2× NE without probes; default ≤ 7.2 CPU-s/h",
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--scrapes", type=int, default=300, help="gzip scrapes per CPU figure")
    p.add_argument("--rss-scrapes", type=int, default=1000)
    p.add_argument("--wrk-seconds", type=int, default=5)
    p.add_argument("--idle-seconds", type=float, default=60.0)
    args = p.parse_args()
    if os.environ.get("IODRIFT_BENCH") != "1":
        print("SKIPPED: benchmark; run with IODRIFT_BENCH=1")
        return SKIP
    iodriftd = os.environ.get("IODRIFTD", os.path.join(SOURCE, "build/bin/iodriftd"))
    node_exporter = os.environ.get("NODE_EXPORTER", "/usr/bin/prometheus-node-exporter")
    wrk = shutil.which("wrk")
    for what, path in (("iodriftd", iodriftd), ("node_exporter", node_exporter)):
        if not os.access(path, os.X_OK):
            print(f"SKIPPED: {what} not found at {path}")
            return SKIP
    if wrk is None:
        print("SKIPPED: wrk not installed")
        return SKIP

    work = tempfile.mkdtemp(prefix="iodrift-cost.")
    procs = []
    try:
        targets = []
        lua = os.path.join(work, "gzip.lua")
        with open(lua, "w") as f:
            f.write('wrk.headers["Accept-Encoding"] = "gzip"\n')
        ports = set()

        def port():
            while True:
                n = free_port()
                if n not in ports:
                    ports.add(n)
                    return n

        def start(name, cmd, url):
            log = os.path.join(work, name + ".log")
            proc = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT)
            procs.append(proc)
            server_ready(name, proc, url, log)
            targets.append(scrape_bench.Target(name, proc.pid, url))

        n1 = port()
        os.makedirs(os.path.join(work, "state-none"))
        start("iodrift no probes",
              [iodriftd, "--config", os.path.join(SOURCE, "tests/e2e/no-probes.yaml"),
               "--listen", f"127.0.0.1:{n1}", "--dbus", "none",
               "--state-dir", os.path.join(work, "state-none")],
              f"http://127.0.0.1:{n1}/metrics")
        n2 = port()
        start("iodrift default probes", [iodriftd, "--config", default_config(work, n2)],
              f"http://127.0.0.1:{n2}/metrics")
        n3 = port()
        start("node_exporter",
              [node_exporter, "--collector.disable-defaults", "--collector.meminfo",
               "--collector.vmstat", "--collector.pressure", "--collector.buddyinfo",
               "--collector.slabinfo", "--collector.stat",
               f"--web.listen-address=127.0.0.1:{n3}"],
              f"http://127.0.0.1:{n3}/metrics")

        for t in targets:  # warm-up
            scrape_bench.scrape_loop(t, True, 50, 0)
            scrape_bench.scrape_loop(t, False, 50, 0)
        for r in range(args.rounds):
            order = targets[r % 3:] + targets[:r % 3]
            for t in order:
                scrape_bench.measure_cpu(t, True, args.scrapes, 1.0, 6.0)
                scrape_bench.run_wrk(wrk, lua, t, 1, args.wrk_seconds)
            # Idle: all three at once, nobody scraping.
            before = {t.name: run_ns(t.pid) for t in targets}
            t0 = time.monotonic()
            time.sleep(args.idle_seconds)
            dt = time.monotonic() - t0
            for t in targets:
                t.record("idle_cpu_s_per_h", (run_ns(t.pid) - before[t.name]) / 1e9 / dt * 3600)
            print(f"cost_table: round {r + 1}/{args.rounds} done", file=sys.stderr)
        for t in targets:
            scrape_bench.scrape_loop(t, True, args.rss_scrapes, 0)
            t.once["rss_mib"] = scrape_bench.status_kib(t.pid, "VmRSS") / 1024.0

        none, default, ne = targets
        v = lambda t, k: t.value(k)  # noqa: E731

        def ratio(k):
            a, b = v(default, k), v(ne, k)
            return f"{a / b:.2f}" if a is not None and b else "-"

        def ms(x):
            return "-" if x is None else f"{x:.2f} ms"

        peak = os.environ.get("MEMORY_PROBE_PEAK_MIB")
        rows = [
            ("CPU per gzip scrape", *(ms(v(t, "cpu_ms_per_scrape_gzip")) for t in targets),
             ratio("cpu_ms_per_scrape_gzip"), GOALS["cpu"]),
            ("p50 / p99, 1 connection",
             *(f'{v(t, "p50_ms_c1"):.2f} / {v(t, "p99_ms_c1"):.2f} ms' for t in targets),
             f'{ratio("p50_ms_c1")} / {ratio("p99_ms_c1")}', GOALS["p50p99"]),
            (f"VmRSS after {args.rss_scrapes} scrapes",
             *(f'{v(t, "rss_mib"):.1f} MiB' for t in targets), ratio("rss_mib"), GOALS["rss"]),
            ("peak RSS during a memory probe", "—",
             f"+{peak} MiB" if peak else "see memory_probe_bench.py", "—", "—", GOALS["peak"]),
            ("idle CPU, no scrapes",
             *(f'{v(t, "idle_cpu_s_per_h"):.4f} CPU-s/h' for t in targets),
             f'{v(none, "idle_cpu_s_per_h") / v(ne, "idle_cpu_s_per_h"):.2f} (no probes)'
             if v(ne, "idle_cpu_s_per_h") else "-", GOALS["idle"]),
        ]
        head = ("figure", "iodrift, no probes", "iodrift, default 6 probes", "node_exporter",
                "ratio (default / NE)", "goal")
        print(f"\nmedians of {args.rounds} rounds; idle window {args.idle_seconds:.0f} s; "
              f"load average {os.getloadavg()[0]:.1f}\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        for t in targets:
            for w in t.warnings:
                print(f"warning: {t.name}: {w}")
        return 0
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
