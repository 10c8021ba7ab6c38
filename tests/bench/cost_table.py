#!/usr/bin/env python3
"""The cost table, side by side in one run (python3, stdlib + wrk):

  IODRIFT_BENCH=1 tests/bench/cost_table.py [--rounds 3] [--idle-seconds 60]

Starts three exporters on loopback and measures them alternately (the order rotates every
round, so drift in the machine's load hits all alike), reporting the median over the rounds:
  * iodriftd with every memory-state collector and no probes (tests/e2e/no-probes.yaml),
  * iodriftd with the shipped config/iodrift.yaml (its 6 default probes; state dir and probe
    target moved into a temporary directory, D-Bus off),
  * iodriftd with the same config and 50 probes (the 6 kinds repeated, small sizes, 1 h
    interval), to show what each probe adds to a scrape,
  * Debian's prometheus-node-exporter with the comparable collectors (meminfo, vmstat, pressure,
    buddyinfo, slabinfo, stat).
The probe daemons are measured only once every probe has run (the first cycle's CPU is not a
scrape's); a probe run during a measurement is reported as a warning.
Rows:
  CPU per gzip scrape        CPU time of every thread of the process (schedstat, ns) per
                             sequential keep-alive gzip scrape
  p50 / p99, 1 connection    wrk --latency -c1, Accept-Encoding: gzip
  VmRSS after 1000 scrapes   /proc/PID/status after 1000 gzip scrapes (plus the warm-up)
  PSS / USS, same moment     /proc/PID/smaps_rollup (PSS splits shared library pages among the
                             processes mapping them: run it with no other iodriftd around)
  PSS as the only iodriftd   per round after its scrapes: every present page (pagemap) counts
                             page / (its kpagecount less the other iodriftd processes mapping it);
                             library pages stay split with other programs, not with the other
                             daemons of this run or of other runs on the machine (root)
  anonymous RSS              RssAnon, per round (heap, malloc arenas, stacks)
  VmHWM (peak RSS)           /proc/PID/status, over the whole run (start-up and probe runs)
  idle CPU, no scrapes       CPU-s per hour over --idle-seconds without a request, from the
                             scheduler's nanosecond run time of every thread
                             (/proc/PID/task/*/schedstat; utime's 10 ms ticks are too coarse)
  peak RSS during a memory probe: measured by tests/bench/memory_probe_bench.py (cost-mem); a
                             hook row here reads it from MEMORY_PROBE_PEAK_MIB if set.
The ratio column is iodriftd with the default probes / node_exporter; the goal column is the
issue's. `--compare NAME=COMMAND` (repeatable) adds a column: another iodriftd with the default
probes, measured the same way in the same rounds (COMMAND is split like a shell would and may
start with `env VAR=VALUE`, e.g. `--compare 'old=/tmp/old/iodriftd'`,
`--compare 'two arenas=env MALLOC_ARENA_MAX=2 build/bin/iodriftd'`). Without IODRIFT_BENCH=1 it exits 77 (skipped), like the other benchmarks.

Environment: IODRIFTD (default <source>/build/bin/iodriftd), NODE_EXPORTER (default
/usr/bin/prometheus-node-exporter).
"""
import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

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


def stop_all(procs, work):
    """Terminates `procs` (killed after 10 s) and removes the directory `work`."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    shutil.rmtree(work, ignore_errors=True)


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


FIFTY_KINDS = [  # (kind, amount key and value): small so that the first cycle is quick
    ("cached", "size: 2MiB"), ("buffered", "size: 4MiB"), ("direct", "size: 4MiB"),
    ("random", "requests: 50"), ("metadata", "files: 16"), ("memory", "size: 1MiB")]


def default_config(work, port, probes=None, name="default"):
    """config/iodrift.yaml with its paths moved into `work`; `probes`: that many probes instead
    of the shipped ones (the kinds in turn, FIFTY_KINDS' sizes, interval 1h)."""
    with open(os.path.join(SOURCE, "config/iodrift.yaml")) as f:
        text = f.read()
    if probes is not None:
        text = text[:text.index("\nprobes:")] + "\nprobes:\n"
        for i in range(probes):
            kind, amount = FIFTY_KINDS[i % len(FIFTY_KINDS)]
            target = "" if kind == "memory" else "    target: /var/lib/iodrift/probe\n"
            text += (f"  - name: p{i:02d}-{kind}\n    kind: {kind}\n{target}"
                     f"    interval: 1h\n    {amount}\n")
    state = os.path.join(work, f"state-{name}")
    os.makedirs(os.path.join(state, "probe"), exist_ok=True)
    text = text.replace("/var/lib/iodrift/probe", os.path.join(state, "probe"))
    text = re.sub(r"(?m)^state_dir:.*$", f"state_dir: {state}", text)
    text = re.sub(r"(?m)^listen:.*$", f'listen: "127.0.0.1:{port}"', text)
    text = re.sub(r"(?m)^dbus:.*$", "dbus: none", text)
    path = os.path.join(work, f"{name}.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def probe_runs(url):
    """(probes with a run, all runs) from iodrift_probe_runs_total."""
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    probes, total = set(), 0.0
    for line in text.splitlines():
        if line.startswith("iodrift_probe_runs_total{"):
            value = float(line.rsplit(" ", 1)[1])
            if value > 0:
                probes.add(re.search(r'probe="([^"]*)"', line).group(1))
                total += value
    return len(probes), total


def wait_probes_ran(name, url, count, timeout=600):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe_runs(url)[0] >= count:
            return
        time.sleep(1)
    sys.exit(f"{name}: not all {count} probes ran within {timeout} s")


def measure_cpu_ns(target, scrapes, probes):
    """CPU (schedstat ns of every thread) per gzip scrape; warns when a probe ran meanwhile."""
    runs = probe_runs(target.url)[1] if probes else 0
    before = run_ns(target.pid)
    count, nbytes, _, _ = scrape_bench.scrape_loop(target, True, scrapes, 1.0, 6.0)
    target.record("cpu_ms_per_scrape_gzip", (run_ns(target.pid) - before) / 1e6 / count)
    target.once["bytes_gzip"] = nbytes
    if probes and probe_runs(target.url)[1] != runs:
        scrape_bench.warn(target, "a probe ran during a CPU measurement")


GOALS = {
    "cpu": "≤ 0.15 of NE; default ≤ 1.15× no probes",
    "p50p99": "p50 ≤ 0.20, p99 ≤ 0.33",
    "rss": "≤ 0.33",
    "pss": "≤ 0.25",
    "hwm": "default ≤ 1.5× its VmRSS",
    "peak": "≤ +16 MiB",
    "idle": "≤ 2× NE without probes; default ≤ 7.2 CPU-s/h",
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--scrapes", type=int, default=300, help="gzip scrapes per CPU figure")
    p.add_argument("--rss-scrapes", type=int, default=1000)
    p.add_argument("--wrk-seconds", type=int, default=5)
    p.add_argument("--idle-seconds", type=float, default=30.0)
    p.add_argument("--many-probes", type=int, default=50)
    p.add_argument("--compare", action="append", default=[], metavar="NAME=COMMAND",
                   help="another iodriftd (command) with the default probes, side by side")
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

    load_start = os.getloadavg()[0]
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
        n4 = port()
        start(f"iodrift {args.many_probes} probes",
              [iodriftd, "--config", default_config(work, n4, args.many_probes, "many")],
              f"http://127.0.0.1:{n4}/metrics")
        n3 = port()
        start("node_exporter",
              [node_exporter, "--collector.disable-defaults", "--collector.meminfo",
               "--collector.vmstat", "--collector.pressure", "--collector.buddyinfo",
               "--collector.slabinfo", "--collector.stat",
               f"--web.listen-address=127.0.0.1:{n3}"],
              f"http://127.0.0.1:{n3}/metrics")

        for i, spec in enumerate(args.compare):
            name, _, command = spec.partition("=")
            if not command:
                sys.exit(f"--compare {spec!r}: expected NAME=COMMAND")
            nc = port()
            start(name, [*shlex.split(command), "--config",
                         default_config(work, nc, name=f"compare{i}")],
                  f"http://127.0.0.1:{nc}/metrics")
        for t in [targets[1], *targets[4:]]:
            wait_probes_ran(t.name, t.url, 6)
        wait_probes_ran(targets[2].name, targets[2].url, args.many_probes)
        for t in targets:  # warm-up
            scrape_bench.scrape_loop(t, True, 50, 0)
            scrape_bench.scrape_loop(t, False, 50, 0)
        for r in range(args.rounds):
            order = targets[r % len(targets):] + targets[:r % len(targets)]
            for t in order:
                measure_cpu_ns(t, args.scrapes, t is not targets[0] and t is not targets[3])
                scrape_bench.run_wrk(wrk, lua, t, 1, args.wrk_seconds)
            for t in targets:
                alone = scrape_bench.pss_alone_kib(t.pid)
                if alone is not None:
                    t.record("pss_alone_mib", alone / 1024.0)
                t.record("anon_mib", scrape_bench.status_kib(t.pid, "RssAnon") / 1024.0)
            # Idle: all three at once, nobody scraping.
            before = {t.name: run_ns(t.pid) for t in targets}
            t0 = time.monotonic()
            time.sleep(args.idle_seconds)
            dt = time.monotonic() - t0
            for t in targets:
                t.record("idle_cpu_s_per_h", (run_ns(t.pid) - before[t.name]) / 1e9 / dt * 3600)
            print(f"cost_table: round {r + 1}/{args.rounds} done, load average "
                  f"{os.getloadavg()[0]:.1f}", file=sys.stderr)
        for t in targets:
            scrape_bench.scrape_loop(t, True, args.rss_scrapes, 0)
            t.once["rss_mib"] = scrape_bench.status_kib(t.pid, "VmRSS") / 1024.0
            t.once["hwm_mib"] = scrape_bench.status_kib(t.pid, "VmHWM") / 1024.0
            pss, uss = scrape_bench.rollup_kib(t.pid)
            t.once["pss_mib"], t.once["uss_mib"] = pss / 1024.0, uss / 1024.0

        none, default, many, ne = targets[:4]
        v = lambda t, k: t.value(k)  # noqa: E731

        def ratio(k):
            a, b = v(default, k), v(ne, k)
            return f"{a / b:.2f}" if a is not None and b else "-"

        def ms(x):
            return "-" if x is None else f"{x:.2f} ms"

        peak = os.environ.get("MEMORY_PROBE_PEAK_MIB")
        rows = [
            ("CPU per gzip scrape", *(ms(v(t, "cpu_ms_per_scrape_gzip")) for t in targets),
             ratio("cpu_ms_per_scrape_gzip") + " (default / no probes: "
             f'{v(default, "cpu_ms_per_scrape_gzip") / v(none, "cpu_ms_per_scrape_gzip"):.2f}; '
             f'{args.many_probes} / no probes: '
             f'{v(many, "cpu_ms_per_scrape_gzip") / v(none, "cpu_ms_per_scrape_gzip"):.2f})',
             GOALS["cpu"]),
            ("bytes per gzip scrape", *(f'{v(t, "bytes_gzip"):,.0f}' for t in targets),
             ratio("bytes_gzip"), "—"),
            ("p50 / p99, 1 connection",
             *(f'{v(t, "p50_ms_c1"):.2f} / {v(t, "p99_ms_c1"):.2f} ms' for t in targets),
             f'{ratio("p50_ms_c1")} / {ratio("p99_ms_c1")}', GOALS["p50p99"]),
            (f"VmRSS after {args.rss_scrapes} scrapes",
             *(f'{v(t, "rss_mib"):.1f} MiB' for t in targets), ratio("rss_mib"), GOALS["rss"]),
            ("PSS / USS, same moment",
             *(f'{v(t, "pss_mib"):.1f} / {v(t, "uss_mib"):.1f} MiB' for t in targets),
             ratio("pss_mib"), GOALS["pss"]),
            ("PSS as the only iodriftd", *(
                "-" if v(t, "pss_alone_mib") is None else f'{v(t, "pss_alone_mib"):.2f} MiB'
                for t in targets), ratio("pss_alone_mib"), GOALS["pss"] + " (one instance)"),
            ("anonymous RSS", *(f'{v(t, "anon_mib"):.2f} MiB' for t in targets),
             ratio("anon_mib"), "—"),
            ("VmHWM (peak RSS), whole run", *(f'{v(t, "hwm_mib"):.1f} MiB' for t in targets),
             f'{v(default, "hwm_mib") / v(default, "rss_mib"):.2f}× its VmRSS', GOALS["hwm"]),
            ("peak RSS during a memory probe", "—",
             f"+{peak} MiB" if peak else "see memory_probe_bench.py", "—", "—", "—",
             *("—" for _ in targets[4:]), GOALS["peak"]),
            ("idle CPU, no scrapes",
             *(f'{v(t, "idle_cpu_s_per_h"):.4f} CPU-s/h' for t in targets),
             f'{v(none, "idle_cpu_s_per_h") / v(ne, "idle_cpu_s_per_h"):.2f} (no probes)'
             if v(ne, "idle_cpu_s_per_h") else "-", GOALS["idle"]),
        ]
        head = ("figure", "iodrift, no probes", "iodrift, default 6 probes",
                f"iodrift, {args.many_probes} probes", "node_exporter",
                *(t.name for t in targets[4:]), "ratio (default / NE)", "goal")
        print(f"\nmedians of {args.rounds} rounds; idle window {args.idle_seconds:.0f} s; "
              f"load average {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        for t in targets:
            for w in t.warnings:
                print(f"warning: {t.name}: {w}")
        return 0
    finally:
        stop_all(procs, work)


if __name__ == "__main__":
    sys.exit(main())
