#!/usr/bin/env python3
"""CPU per gzip scrape of iodriftd and node_exporter like for like, and against the floor:

  IODRIFT_BENCH=1 python3 tests/bench/fair_cost.py [--rounds 5] [--scrapes 300]
      [--spaced-cycles 8] [--spacing 15] [--only back-to-back|spaced]

Both sides export the same /proc files with every field: iodriftd with meminfo, vmstat (`fields:
all`), slabinfo (every cache), pressure, buddyinfo and boot; node_exporter
(`--web.disable-exporter-metrics`, so no go_*/process_* series) with meminfo, vmstat
(`--collector.vmstat.fields=.*`), slabinfo, pressure, buddyinfo and stat (the boot time). The
series counts of both are printed. iodriftd re-reads /proc/slabinfo at most every 10 s and
node_exporter on every scrape, so slabinfo is compared only where that cannot matter:

  back-to-back  slabinfo off on both sides, ROUNDS rounds of SCRAPES keep-alive gzip scrapes,
                iodriftd without probes, with the shipped 6 default probes, node_exporter,
                and the floor, the order rotating every round;
  spaced        slabinfo on on both sides, one gzip scrape per daemon every SPACING seconds
                (>= 10 s, the scrape interval of a real Prometheus; a new connection each, as
                iodriftd closes connections idle for 10 s), SPACED_CYCLES cycles, and the floor
                at the same spacing.

CPU: the scheduler's on-CPU nanoseconds of every thread (/proc/PID/task/*/schedstat); a spaced
scrape's window runs from just before the request to SETTLE s after the response, with no
other request to the daemon in between (a probe run since the previous cycle, seen in the
measured scrape's own iodrift_probe_runs_total, drops that sample). The floor is what any exporter of these bytes
must pay: the kernel generating the same /proc and /sys files (every such file the iodriftd
daemon holds open, read with pread, plus /proc/slabinfo when on) and zlib deflating the same
plain exposition body at iodriftd's level (1), timed by this process's thread CPU clock. The
strict floor deflates only the lines a scrape has to deflate (not the iodrift_probe_* lines,
which iodriftd deflates once per probe run). Back to back it also measures the HTTP part alone
(keep-alive GET /-/healthy). Prints medians, min-max, the ratios iodriftd / node_exporter and
iodriftd / floor, the series counts, and each exporter's PSS and USS (smaps_rollup) after its
scrapes, and iodriftd's PSS as the only iodriftd (root). Without IODRIFT_BENCH=1 it exits 77
(skipped). Environment: IODRIFTD, NODE_EXPORTER.
"""
import argparse
import gzip
import http.client
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import cost_table  # noqa: E402
import scrape_bench  # noqa: E402
from iodrift_test.net import free_port  # noqa: E402

GZIP_LEVEL = 1  # daemon/http_server.h gzip_level
ALL_COLLECTORS = """collectors:
  meminfo: true
  vmstat:
    fields: all
  slabinfo:
    enabled: {slab}
    include: ""
  pressure: true
  buddyinfo: true
  boot: true
  dentries: false
  balloon: false
"""


def fair_config(work, port, slab, probes, name):
    """The shipped config (default probes) or no probes, with the like-for-like collectors."""
    text = open(cost_table.default_config(work, port, name=name)).read()
    start = text.index("\ncollectors:") + 1
    end = start + re.search(r"\n[a-z_]+:", text[start:]).start() + 1
    text = text[:start] + ALL_COLLECTORS.format(slab="true" if slab else "false") + text[end:]
    if not probes:
        text = text[:text.index("\nprobes:")] + "\nprobes: []\n"
    path = os.path.join(work, f"{name}.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def scrape_once(target, gzip_ok=True):
    conn = http.client.HTTPConnection(target.host, target.port, timeout=10)
    try:
        enc = "gzip" if gzip_ok else "identity"
        conn.request("GET", target.path, headers={"Accept-Encoding": enc})
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"{target.name}: {resp.status}")
        return body
    finally:
        conn.close()


def runs_in(body):
    """The sum of iodrift_probe_runs_total in an exposition body."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in body.decode().splitlines()
               if line.startswith("iodrift_probe_runs_total{"))


def series(body):
    return sum(1 for line in body.decode().splitlines() if line and not line.startswith("#"))


class Floor:
    """Reads of the files `pid` keeps open under /proc and /sys (and /proc/slabinfo if asked)
    plus deflate of `body`, on this thread's CPU clock."""

    def __init__(self, pid, slab, body):
        paths = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith(("/proc/", "/sys/")):
                paths.add(link)
        if slab:
            paths.add("/proc/slabinfo")
        else:
            paths.discard("/proc/slabinfo")
        self.paths = sorted(paths)
        self.fds = [os.open(p, os.O_RDONLY) for p in self.paths]
        self.body = body
        # The part a scrape has to deflate: iodriftd deflates its probe families' text once per
        # run (daemon/prepared_body.h), so the strict floor leaves those lines out.
        self.changing = b"".join(line for line in body.splitlines(keepends=True)
                                 if b"iodrift_probe_" not in line)
        self.buffer = bytearray(1 << 20)  # preadv into it: no allocation per read

    def once_ns(self):
        t0 = time.thread_time_ns()
        for fd in self.fds:
            try:
                os.preadv(fd, [self.buffer], 0)
            except OSError:
                pass
        t1 = time.thread_time_ns()
        z = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
        z.compress(self.body)
        z.flush()
        t2 = time.thread_time_ns()
        z = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
        z.compress(self.changing)
        z.flush()
        t3 = time.thread_time_ns()
        return t1 - t0, t2 - t1, t3 - t2

    def close(self):
        for fd in self.fds:
            os.close(fd)


def summary(values):
    med = statistics.median(values)
    return med, f"{med:.3f} ms ({min(values):.3f}-{max(values):.3f})"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--scrapes", type=int, default=300)
    p.add_argument("--spaced-cycles", type=int, default=8)
    p.add_argument("--spacing", type=float, default=15.0)
    p.add_argument("--settle", type=float, default=0.3)
    p.add_argument("--only", choices=("back-to-back", "spaced"))
    args = p.parse_args()
    if os.environ.get("IODRIFT_BENCH") != "1":
        print("SKIPPED: benchmark; run with IODRIFT_BENCH=1")
        return cost_table.SKIP
    if args.spacing < 10:
        p.error("--spacing must be >= 10 s (iodriftd's slabinfo cache)")
    iodriftd = os.environ.get("IODRIFTD", os.path.join(cost_table.SOURCE, "build/bin/iodriftd"))
    node_exporter = os.environ.get("NODE_EXPORTER", "/usr/bin/prometheus-node-exporter")
    for what, path in (("iodriftd", iodriftd), ("node_exporter", node_exporter)):
        if not os.access(path, os.X_OK):
            print(f"SKIPPED: {what} not found at {path}")
            return cost_table.SKIP
    load = [os.getloadavg()[0]]
    work = tempfile.mkdtemp(prefix="iodrift-fair.")
    procs = []

    def start(name, cmd, url):
        log = os.path.join(work, re.sub(r"\W", "_", name) + ".log")
        proc = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT)
        procs.append(proc)
        cost_table.server_ready(name, proc, url, log)
        return scrape_bench.Target(name, proc.pid, url)

    def iodrift(name, slab, probes):
        port = free_port()
        cfg = fair_config(work, port, slab, probes, re.sub(r"\W", "_", name))
        t = start(name, [iodriftd, "--config", cfg], f"http://127.0.0.1:{port}/metrics")
        t.probes = probes
        return t

    def node(name, slab):
        port = free_port()
        cmd = [node_exporter, "--web.disable-exporter-metrics", "--collector.disable-defaults",
               "--collector.meminfo", "--collector.vmstat", "--collector.vmstat.fields=.*",
               "--collector.pressure", "--collector.buddyinfo", "--collector.stat",
               f"--web.listen-address=127.0.0.1:{port}"]
        if slab:
            cmd.append("--collector.slabinfo")
        t = start(name, cmd, f"http://127.0.0.1:{port}/metrics")
        t.probes = False
        return t

    def runs(t):
        return cost_table.probe_runs(t.url)[1] if t.probes else 0

    try:
        sections = []
        if args.only != "spaced":
            sections.append(("back-to-back, slabinfo off on both", False, [
                iodrift("iodrift, no probes", False, False),
                iodrift("iodrift, default probes", False, True),
                node("node_exporter", False)]))
        if args.only != "back-to-back":
            sections.append((f"one scrape every {args.spacing:.0f} s, slabinfo on on both", True, [
                iodrift("iodrift, no probes, slab", True, False),
                iodrift("iodrift, default probes, slab", True, True),
                node("node_exporter, slab", True)]))
        for _, _, targets in sections:
            for t in targets:
                if t.probes:
                    cost_table.wait_probes_ran(t.name, t.url, 6)
                scrape_bench.scrape_loop(t, True, 50, 0)
                plain = scrape_once(t, False)
                t.once["series"] = series(plain)
                t.once["bytes_plain"] = len(plain)
                if "iodrift" in t.name:
                    t.plain = plain
        results = []
        for title, slab, targets in sections:
            floors = {t.name: Floor(t.pid, slab, t.plain) for t in targets if hasattr(t, "plain")}
            if slab:  # spaced: one scrape per daemon and cycle, order rotating
                # No request but the measured one: an extra scrape (to see whether a probe ran)
                # would read slabinfo and warm the caches for the measured one. A probe run is
                # seen in the measured scrape's own runs counter instead: when it moved since
                # the previous cycle the sample is dropped.
                last = {t.name: runs(t) for t in targets}
                time.sleep(args.spacing)
                for c in range(args.spaced_cycles):
                    cycle_start = time.monotonic()
                    order = targets[c % len(targets):] + targets[:c % len(targets)]
                    for t in order:
                        before = cost_table.run_ns(t.pid)
                        body = scrape_once(t)
                        time.sleep(args.settle)
                        used = cost_table.run_ns(t.pid) - before
                        now = runs_in(gzip.decompress(body)) if t.probes else 0
                        if now != last[t.name]:
                            scrape_bench.warn(t, "a probe ran since the last cycle; sample dropped")
                        else:
                            t.record("cpu", used / 1e6)
                        last[t.name] = now
                    for name, fl in floors.items():
                        reads, deflate, strict = fl.once_ns()
                        t = next(t for t in targets if t.name == name)
                        t.record("floor", (reads + deflate) / 1e6)
                        t.record("strict", (reads + strict) / 1e6)
                        t.record("reads", reads / 1e6)
                    print(f"fair_cost: spaced cycle {c + 1}/{args.spaced_cycles}, load "
                          f"{os.getloadavg()[0]:.1f}", file=sys.stderr)
                    time.sleep(max(0.0, args.spacing - (time.monotonic() - cycle_start)))
            else:
                for r in range(args.rounds):
                    order = targets[r % len(targets):] + targets[:r % len(targets)]
                    for t in order:
                        if t is targets[0]:  # the HTTP part alone: GET /-/healthy ("ok")
                            h = scrape_bench.Target("healthy", t.pid, t.url.replace(
                                "/metrics", "/-/healthy"))
                            before = cost_table.run_ns(t.pid)
                            n = scrape_bench.scrape_loop(h, True, args.scrapes, 0)[0]
                            t.record("http", (cost_table.run_ns(t.pid) - before) / 1e6 / n)
                        cost_table.measure_cpu_ns(t, args.scrapes, t.probes)
                        t.rounds["cpu"] = t.rounds["cpu_ms_per_scrape_gzip"]
                        if t.name in floors:
                            fl, total, strict, reads = floors[t.name], 0, 0, 0
                            for _ in range(args.scrapes):
                                a, b, c = fl.once_ns()
                                total, strict, reads = total + a + b, strict + a + c, reads + a
                            t.record("floor", total / 1e6 / args.scrapes)
                            t.record("strict", strict / 1e6 / args.scrapes)
                            t.record("reads", reads / 1e6 / args.scrapes)
                    print(f"fair_cost: round {r + 1}/{args.rounds}, load "
                          f"{os.getloadavg()[0]:.1f}", file=sys.stderr)
            for t in targets:  # memory of one instance, after the scrapes
                pss, uss = scrape_bench.rollup_kib(t.pid)
                alone = scrape_bench.pss_alone_kib(t.pid) if "iodrift" in t.name else None
                t.once["memory"] = (f"PSS {pss / 1024:.2f} MiB, USS {uss / 1024:.2f} MiB"
                                    + ("" if alone is None else
                                       f", PSS as the only iodriftd {alone / 1024:.2f} MiB"))
            load.append(os.getloadavg()[0])
            results.append((title, targets, floors))
            for fl in floors.values():
                fl.close()

        print(f"\nload average {load[0]:.1f} at the start, "
              + ", ".join(f"{x:.1f}" for x in load[1:]) + " after each part")
        for title, targets, floors in results:
            ne = targets[-1]
            ne_med = statistics.median(ne.rounds["cpu"])
            samples = len(ne.rounds["cpu"])
            print(f"\n{title} (medians of {samples}, min-max)\n")
            print("| exporter | series | CPU per gzip scrape | floor: reads + deflate | "
                  "of which reads | / floor | strict floor | / strict floor | / node_exporter |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
            for t in targets:
                med, cpu = summary(t.rounds["cpu"])
                if "floor" in t.rounds:
                    fmed, floor = summary(t.rounds["floor"])
                    _, reads = summary(t.rounds["reads"])
                    smed, strict = summary(t.rounds["strict"])
                    vs_floor, vs_strict = f"{med / fmed:.2f}", f"{med / smed:.2f}"
                else:
                    floor = reads = vs_floor = strict = vs_strict = "—"
                print(f"| {t.name} | {t.once['series']:,} | {cpu} | {floor} | {reads} | "
                      f"{vs_floor} | {strict} | {vs_strict} | {med / ne_med:.2f} |")
            if "http" in targets[0].rounds:
                print(f"HTTP alone (keep-alive GET /-/healthy of {targets[0].name}): "
                      + summary(targets[0].rounds["http"])[1])
            for t in targets:
                print(f"memory: {t.name}: {t.once['memory']}")
            for t in targets:
                for w in t.warnings:
                    print(f"warning: {t.name}: {w}")
            for name, fl in floors.items():
                print(f"floor files ({name}): {' '.join(fl.paths)}")
        return 0
    finally:
        cost_table.stop_all(procs, work)


if __name__ == "__main__":
    sys.exit(main())
