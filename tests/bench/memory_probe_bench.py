#!/usr/bin/env python3
"""The memory probe's stream figure at its 7 MiB buffers against `mbw`.

Not a timed test. Each pair runs, in alternating order (probe first, then reference first in the
next pair, so load drift hits both alike):

  probe      `iodriftd --once --json` with one `memory` probe (default size: two 7 MiB buffers,
             scheduler.nice 0 like the reference): extra.stream_copy_bytes_per_second, and its
             peak RSS (GNU time %M of a --once run, against one without probes)
  mbw-large  `mbw -q -t0 -n N SIZE` with two SIZE-MiB arrays (default 512 MiB, far beyond any
             last-level cache): memcpy bandwidth from DRAM, the reference
  mbw-same   `mbw` at the probe's own size (7 MiB): the same working set, to tell the method
             from the size

and prints medians over --pairs (default 7, at least 5) with the ratios probe / mbw-large and
probe / mbw-same. mbw's figure is MiB/s (2^20); all figures below are converted to bytes/s.

  IODRIFT_BENCH=1 python3 tests/bench/memory_probe_bench.py [--iodriftd build/bin/iodriftd] [--pairs 7]
      [--probe-mib 3 7]

--probe-mib S... runs the probe (`size: S MiB`, two S MiB buffers) and mbw-same at each size in
every pair: what a smaller stream buffer would measure on this machine.

Exits 77 (skipped) without mbw (Debian package mbw) or iodriftd.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77
PROBE_MIB = 7
TIME = "/usr/bin/time"  # GNU time (Debian package time)


def run_probe(iodriftd, config, state):
    proc = subprocess.Popen([iodriftd, "--once", "--json", "--config", config, "--state-dir",
                             state, "--dbus", "none"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=120)
    if proc.returncode != 0:
        raise SystemExit(f"iodriftd --once exited {proc.returncode}: {err[-2000:]}")
    doc = json.loads(out)
    probe = doc["probes"][0]
    if not probe.get("success"):
        raise SystemExit(f"memory probe failed: {probe.get('error')}")
    extra = probe.get("extra", {})
    return float(extra.get("stream_copy_bytes_per_second", probe["throughput_bytes_per_second"]))


def run_mbw(mbw, mib, iterations):
    out = subprocess.run([mbw, "-q", "-t0", "-n", str(iterations), str(mib)], check=True,
                         capture_output=True, text=True, timeout=300).stdout
    m = re.search(r"^AVG\s+Method: MEMCPY.*Copy:\s*([0-9.]+)\s*MiB/s", out, re.M)
    if not m:
        raise SystemExit(f"cannot parse mbw output: {out[-500:]}")
    return float(m.group(1)) * 2**20


def peak_rss_of_once(iodriftd, config, state, extra_args=()):
    """Peak RSS (bytes) of one `iodriftd --once` run, by GNU time's %M (ru_maxrss).

    Not this process's own wait4: Linux keeps ru_maxrss across exec, so a child forked from
    this Python process starts with Python's peak RSS (~15 MiB) and a run below that reads as
    Python's figure (a run without probes read 15.3 MiB instead of 9.6). GNU time is small,
    and the child it forks starts from its RSS."""
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.run([TIME, "-f", "%M", "-o", out.name, iodriftd, "--once", "--json",
                        "--config", config, "--state-dir", state, "--dbus", "none",
                        *extra_args], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=300)
        return int(out.read().split()[-1]) * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iodriftd", default=os.environ.get("IODRIFTD",
                                                         os.path.join(ROOT, "build/bin/iodriftd")))
    ap.add_argument("--mbw", default=shutil.which("mbw") or "/usr/bin/mbw")
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--large-mib", type=int, default=512)
    ap.add_argument("--probe-mib", type=int, nargs="+", default=[PROBE_MIB],
                    help=f"stream buffer sizes to run the probe and mbw-same at (default {PROBE_MIB})")
    args = ap.parse_args()
    if os.environ.get("IODRIFT_BENCH") != "1":
        print("SKIPPED: a benchmark, not a test: set IODRIFT_BENCH=1 to run it")
        return SKIP
    if args.pairs < 5:
        ap.error("--pairs must be at least 5")
    for tool in (args.iodriftd, args.mbw, TIME):
        if not os.path.exists(tool):
            print(f"SKIPPED: {tool} not found (apt-get install mbw time)")
            return SKIP
    work = tempfile.mkdtemp(prefix="iodrift-membench-")
    try:
        configs = {}
        for mib in args.probe_mib:
            configs[mib] = os.path.join(work, f"iodrift-{mib}.yaml")
            with open(configs[mib], "w") as f:
                f.write("dbus: none\nscheduler:\n  nice: 0\nprobes:\n"
                        "  - name: memory\n    kind: memory\n    timeout: 60s\n"
                        f"    size: {mib}MiB\n")
        config = configs[args.probe_mib[0]]
        state = os.path.join(work, "state")
        os.makedirs(state)
        large = []
        probes = {mib: [] for mib in args.probe_mib}
        sames = {mib: [] for mib in args.probe_mib}
        for i in range(args.pairs):
            steps = [lambda: [probes[m].append(run_probe(args.iodriftd, configs[m], state))
                              for m in args.probe_mib],
                     lambda: (large.append(run_mbw(args.mbw, args.large_mib, 3)),
                              [sames[m].append(run_mbw(args.mbw, m, 20)) for m in args.probe_mib])]
            if i % 2:
                steps.reverse()
            for step in steps:
                step()
            print(f"pair {i + 1}: mbw {args.large_mib} MiB {large[-1] / 1e9:.2f} GB/s; " + "; ".join(
                f"{m} MiB: probe {probes[m][-1] / 1e9:.2f}, mbw {sames[m][-1] / 1e9:.2f} GB/s"
                for m in args.probe_mib), file=sys.stderr, flush=True)
        # Peak RSS of a --once run with the memory probe against one with no probes at all.
        empty = os.path.join(work, "empty.yaml")
        with open(empty, "w") as f:
            f.write("dbus: none\nprobes: []\n")
        # Alternating, 5 each: the medians (the figure moves by ~0.3 MiB between runs).
        peaks, empties = [], []
        for _ in range(5):
            peaks.append(peak_rss_of_once(args.iodriftd, config, state))
            empties.append(peak_rss_of_once(args.iodriftd, empty, state))
        peak, peak_empty = statistics.median(peaks), statistics.median(empties)
        l = statistics.median(large)
        llc = None
        try:
            for index in sorted(os.listdir("/sys/devices/system/cpu/cpu0/cache")):
                with open(f"/sys/devices/system/cpu/cpu0/cache/{index}/size") as fh:
                    llc = fh.read().strip()
        except OSError:
            pass
        print(f"memory probe stream copy vs mbw memcpy, medians of {args.pairs} alternating pairs"
              f" (LLC: {llc or 'unknown to sysfs'})")
        print(f"{'figure':<44} {'GB/s':>8}")
        print(f"{f'mbw -t0, 2 x {args.large_mib} MiB (DRAM reference)':<44} {l / 1e9:>8.2f}")
        for m in args.probe_mib:
            p, s = statistics.median(probes[m]), statistics.median(sames[m])
            print(f"{f'probe, 2 x {m} MiB (stream_copy)':<44} {p / 1e9:>8.2f}")
            print(f"{f'mbw -t0, 2 x {m} MiB (same working set)':<44} {s / 1e9:>8.2f}")
            print(f"ratio probe {m} MiB / mbw {args.large_mib} MiB: {p / l:.3f}; "
                  f"mbw {m} MiB / mbw {args.large_mib} MiB: {s / l:.3f}; "
                  f"probe / mbw {m} MiB: {p / s:.3f}")
        print(f"peak RSS of iodriftd --once: {peak / 2**20:.1f} MiB with the memory probe, "
              f"{peak_empty / 2**20:.1f} MiB without probes (+{(peak - peak_empty) / 2**20:.1f} MiB)")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
