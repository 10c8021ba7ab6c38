#!/usr/bin/env python3
"""CPU per gzip scrape of two or more iodriftd binaries, A/B in one run (root not needed):

  IODRIFT_BENCH=1 python3 tests/bench/ab_scrape_cpu.py NAME=BINARY NAME=BINARY [...]
      [--rounds 10] [--scrapes 300] [--new-connections]

Each binary runs the shipped config/iodrift.yaml (its 6 default probes; paths moved into a
temporary directory, D-Bus off) on its own port. Once every probe has run, the binaries are
measured alternately (the order reverses every round, so drift in the machine's load hits all
alike): SCRAPES sequential keep-alive gzip scrapes each, CPU from the scheduler's nanosecond run
time of every thread (cost_table.measure_cpu_ns); with --new-connections every scrape comes on
a new connection, as Prometheus' do at a 15 s interval (iodriftd closes connections idle for
connection_timeout, 10 s). Prints the median, min and max per binary
and the ratio of each median to the first binary's. A probe run inside a measurement is
reported as a warning. Without IODRIFT_BENCH=1 it exits 77 (skipped), like the other
benchmarks.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import cost_table  # noqa: E402
import fair_cost  # noqa: E402
import scrape_bench  # noqa: E402
from iodrift_test.net import free_port  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("binaries", nargs="+", metavar="NAME=BINARY")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--scrapes", type=int, default=300)
    p.add_argument("--new-connections", action="store_true",
                   help="one connection per scrape (default: keep-alive)")
    args = p.parse_args()
    if os.environ.get("IODRIFT_BENCH") != "1":
        print("skipped: set IODRIFT_BENCH=1 to run benchmarks")
        sys.exit(cost_table.SKIP)
    binaries = []
    for item in args.binaries:
        name, sep, binary = item.partition("=")
        if not sep or not os.access(binary, os.X_OK):
            p.error(f"{item}: expected NAME=BINARY with an executable BINARY")
        binaries.append((name, binary))
    work = tempfile.mkdtemp(prefix="iodrift-ab-")
    procs, targets = [], []
    try:
        for name, binary in binaries:
            port = free_port()
            url = f"http://127.0.0.1:{port}/metrics"
            log = os.path.join(work, name.replace("/", "_") + ".log")
            config = cost_table.default_config(work, port, name=name.replace("/", "_"))
            proc = subprocess.Popen([binary, "--config", config], stdout=open(log, "w"),
                                    stderr=subprocess.STDOUT)
            procs.append(proc)
            cost_table.server_ready(name, proc, url, log)
            targets.append(scrape_bench.Target(name, proc.pid, url))
        for t in targets:
            cost_table.wait_probes_ran(t.name, t.url, 6)
            scrape_bench.scrape_loop(t, True, 100, 0.5)  # warm-up
        for r in range(args.rounds):
            for t in (targets if r % 2 == 0 else targets[::-1]):
                if args.new_connections:
                    runs, before = cost_table.probe_runs(t.url)[1], cost_table.run_ns(t.pid)
                    for _ in range(args.scrapes):
                        fair_cost.scrape_once(t)
                    t.record("cpu_ms_per_scrape_gzip",
                             (cost_table.run_ns(t.pid) - before) / 1e6 / args.scrapes)
                    if cost_table.probe_runs(t.url)[1] != runs:
                        scrape_bench.warn(t, "a probe ran during a CPU measurement")
                else:
                    cost_table.measure_cpu_ns(t, args.scrapes, True)
        first = None
        print(f"{args.rounds} rounds x {args.scrapes} gzip scrapes"
              f"{' on new connections' if args.new_connections else ', keep-alive'}; load average "
              f"{os.getloadavg()[0]:.1f}")
        for t in targets:
            v = t.rounds["cpu_ms_per_scrape_gzip"]
            med = statistics.median(v)
            first = first or med
            print(f"{t.name}: CPU per gzip scrape median {med:.3f} ms (min {min(v):.3f}, "
                  f"max {max(v):.3f}), {med / first:.3f}x the first"
                  + (f"; warnings: {'; '.join(t.warnings)}" if t.warnings else ""))
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
