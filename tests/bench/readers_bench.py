#!/usr/bin/env python3
"""Parallel readers vs fio --numjobs: iodrift `readers: [1, 2, 4, 8]` against
fio with the same number of jobs, on one loop device, medians of alternating rounds.

    sudo IODRIFTD=build/iodriftd tests/bench/readers_bench.py [--rounds 5] [--size-mib 256]

Needs root (losetup) and fio; exits 77 otherwise (CTest skip), and unless IODRIFT_BENCH=1 when
run from CTest. Per round, in alternating order (iodrift first in odd rounds, fio first in even):
  iodrift  `iodriftd --once --json` with three probes on the device, each `readers: [1, 2, 4, 8]`:
           buffered and direct read the first SIZE bytes (N readers: N disjoint slices of SIZE/N),
           random issues REQUESTS 4 KiB O_DIRECT reads (N readers: REQUESTS/N each);
  fio      for each N: --numjobs=N --group_reporting with the same split: sequential 1 MiB reads of
           --size=SIZE/N at --offset_increment=SIZE/N (buffered: --direct=0 --invalidate=1 — fio
           drops the file's cache first, as the probe does; direct: --direct=1); random
           --rw=randread --bs=4k --direct=1 --iodepth=1 --number_ios=REQUESTS/N per job, each job
           in its own 1/N of the device (--offset_increment).
Figures: aggregate bytes/s (sequential) or IOPS (random) per N; the ratio iodrift/fio of the
medians, and each side's scaling efficiency rate(N)/(N x rate(1)). The loop device uses
--direct-io=on so the reads reach the backing disk, not the host's page cache.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

COUNTS = [1, 2, 4, 8]
KINDS = ["buffered", "direct", "random"]


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(77)


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def fio(dev, kind, n, size, requests):
    args = ["fio", "--output-format=json", "--name=r", f"--filename={dev}", f"--numjobs={n}",
            "--group_reporting", "--ioengine=psync", "--thread"]
    if kind == "random":
        per = size // n // 4096 * 4096
        args += ["--rw=randread", "--bs=4k", "--direct=1", "--iodepth=1",
                 f"--size={per}", f"--offset_increment={per}",
                 f"--number_ios={max(1, requests // n)}", "--randrepeat=0"]
    else:
        per = size // n // (1 << 20) * (1 << 20)
        args += ["--rw=read", "--bs=1M", f"--size={per}", f"--offset_increment={per}"]
        args += ["--direct=1"] if kind == "direct" else ["--direct=0", "--invalidate=1"]
    doc = json.loads(sh(*args, timeout=600))
    read = doc["jobs"][0]["read"]
    return read["iops"] if kind == "random" else read["bw_bytes"]


def iodrift(binary, config, state):
    out = sh(binary, "--once", "--json", "--config", config, "--dbus", "none", "--state-dir",
             state, timeout=900)
    doc = json.loads(out)
    figures = {}
    for p in doc["probes"]:
        if not p["success"]:
            raise SystemExit(f"iodrift {p['name']} failed: {p['error']}")
        figures[p["kind"]] = {int(n): v for n, v in p["readers"]["rate"].items()}
    return figures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--requests", type=int, default=4000)
    args = ap.parse_args()
    if os.environ.get("IODRIFT_BENCH_CTEST") == "1" and os.environ.get("IODRIFT_BENCH") != "1":
        skip("set IODRIFT_BENCH=1 to run the benchmark")
    if os.geteuid() != 0:
        skip("needs root (losetup)")
    for tool in ("fio", "losetup"):
        if subprocess.run(["which", tool], capture_output=True).returncode != 0:
            skip(f"{tool} is not installed")
    binary = os.environ.get("IODRIFTD", "build/iodriftd")
    size = args.size_mib << 20
    work = tempfile.mkdtemp(prefix="iodrift-readers-bench-", dir="/var/tmp")
    img = os.path.join(work, "dev.img")
    with open(img, "wb") as f:
        for _ in range(args.size_mib + 16):
            f.write(os.urandom(1 << 20))
        os.fsync(f.fileno())
    dev = sh("losetup", "--show", "-f", "--direct-io=on", img).strip()
    try:
        state = os.path.join(work, "state")
        config = os.path.join(work, "iodrift.yaml")
        with open(config, "w") as f:
            f.write(f"state_dir: {state}\ndbus: none\nprobes:\n")
            for kind in KINDS:
                f.write(f"  - name: b-{kind}\n    kind: {kind}\n    target: {dev}\n"
                        f"    readers: {COUNTS}\n    time_budget: 60s\n    timeout: 600s\n")
                f.write(f"    requests: {args.requests}\n" if kind == "random" else
                        f"    size: {args.size_mib}MiB\n")
        mine = {k: {n: [] for n in COUNTS} for k in KINDS}
        ref = {k: {n: [] for n in COUNTS} for k in KINDS}
        for r in range(args.rounds):
            def run_iodrift():
                for kind, curve in iodrift(binary, config, state).items():
                    for n in COUNTS:
                        mine[kind][n].append(curve[n])

            def run_fio():
                for kind in KINDS:
                    for n in COUNTS:
                        ref[kind][n].append(fio(dev, kind, n, size, args.requests))
            order = (run_iodrift, run_fio) if r % 2 == 0 else (run_fio, run_iodrift)
            for step in order:
                step()
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        subprocess.run(["losetup", "-d", dev])
        subprocess.run(["rm", "-rf", work])

    print(f"device: loop --direct-io=on over {args.size_mib + 16} MiB in /var/tmp; "
          f"region {args.size_mib} MiB; random {args.requests} requests; "
          f"medians of {args.rounds} alternating rounds")
    print(f"{'kind':9} {'N':>2} {'iodrift':>12} {'fio':>12} {'ratio':>6} {'eff iodrift':>11} "
          f"{'eff fio':>8}")
    for kind in KINDS:
        unit = 1 if kind == "random" else 1 << 20
        m1 = statistics.median(mine[kind][1])
        f1 = statistics.median(ref[kind][1])
        for n in COUNTS:
            m = statistics.median(mine[kind][n])
            f = statistics.median(ref[kind][n])
            print(f"{kind:9} {n:>2} {m / unit:>12.1f} {f / unit:>12.1f} {m / f:>6.2f} "
                  f"{m / (n * m1):>11.2f} {f / (n * f1):>8.2f}")
            print(f"key {kind}_readers{n}_ratio={m / f:.3f}", file=sys.stderr)
    print("units: MiB/s for buffered and direct, IOPS for random")


if __name__ == "__main__":
    main()
