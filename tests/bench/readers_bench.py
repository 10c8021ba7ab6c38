#!/usr/bin/env python3
"""Parallel readers vs fio --numjobs, and cached/buffered vs hdparm: iodrift against the
reference tools on one quiet loop device, cell by cell, with the reference against itself (A/A)
measured in the same alternation.

    sudo IODRIFTD=build/bin/iodriftd tests/bench/readers_bench.py [--rounds 9] [--size-mib 1024]
         [--requests 20000] [--backing DIR]

Needs root (losetup) and fio (hdparm for its two rows); exits 77 otherwise (CTest skip), and
unless IODRIFT_BENCH=1 when run from CTest.

Cells: buffered, direct and random at N = 1, 2, 4, 8 readers against fio --numjobs=N
--group_reporting with the same split (sequential 1 MiB reads of SIZE/N at --offset_increment
SIZE/N: buffered --direct=0 --invalidate=1, direct --direct=1; random --rw=randread --bs=4k
--direct=1 --iodepth=1 --number_ios=REQUESTS/N per job, each job in its own 1/N of the device);
cached at N=1 against `hdparm -T` and buffered at N=1 against `hdparm -t`.

Per round and cell, three runs back to back, the order rotating every round: iodrift
(`iodriftd --once --json`, one probe, `readers: [N]`), the reference, and the reference again.
The second reference run against the first is the A/A: how far the tool strays from itself on
this machine at this moment. Printed per cell: the medians, ratio = median iodrift / median
reference, the range of the per-round pair ratios, the A/A ratio and its pair range, and a
reading: "±10 %" when the ratio is within 10 %, "within A/A" when it is not but lies inside the
A/A pair range (the reference disagrees with itself by more than it disagrees with iodrift),
else "differs".

Definitions (docs/benchmarks.md "Parallel readers against fio --numjobs"): sequential figures
are all readers' bytes over the step's wall time on both sides (fio: the group's bytes over the
longest job's runtime). For random, fio's group IOPS is all requests over the longest job's
runtime, while iodrift's `rate` is the sum of each reader's own requests / Σ its request
latencies (gaps between calls left out, like the one-reader probe's ops/s); the `wall` column is
iodrift's requests over its step's wall time (`readers.bytes` / request size minus the warm-up
reads, over `readers.seconds`), fio's definition, compared too.
"""
import argparse
import json
import os
import re
import signal
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


def random_loop_device(mib, backing):
    """A --direct-io=on loop device over MIB MiB of random data synced to a new directory in
    `backing`: (device, that directory), both for the caller to remove."""
    img_dir = tempfile.mkdtemp(prefix="iodrift-bench-img-", dir=backing)
    img = os.path.join(img_dir, "dev.img")
    with open(img, "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))
        os.fsync(f.fileno())
    return sh("losetup", "--show", "-f", "--direct-io=on", img).strip(), img_dir


def fio(dev, kind, n, size, requests):
    """fio's group figure: bytes/s (sequential) or IOPS (random)."""
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


def hdparm(dev, flag):
    """hdparm -T or -t: bytes/s from its `= X MB/sec` line (MB = 2^20 bytes in hdparm)."""
    out = sh("hdparm", flag, dev, timeout=120)
    m = re.search(r"=\s*([\d.]+)\s*([MG])B/sec", out)
    if not m:
        raise SystemExit(f"hdparm {flag}: no rate in {out!r}")
    return float(m.group(1)) * (1 << (30 if m.group(2) == "G" else 20))


class Iodrift:
    def __init__(self, binary, work, dev, size_mib, requests):
        self.binary, self.work, self.dev = binary, work, dev
        self.size_mib, self.requests = size_mib, requests

    def run(self, kind, n):
        """(rate, wall rate) of the probe's step with N readers; wall is None for sequential
        kinds (the same as rate there) and for cached."""
        state = os.path.join(self.work, "state")
        config = os.path.join(self.work, f"{kind}-{n}.yaml")
        with open(config, "w") as f:
            f.write(f"state_dir: {state}\ndbus: none\nprobes:\n"
                    f"  - name: b-{kind}\n    kind: {kind}\n    target: {self.dev}\n")
            if kind != "cached":  # cached: its own defaults, as hdparm -T its own
                f.write(f"    readers: [{n}]\n    time_budget: 60s\n    timeout: 600s\n")
            if kind == "random":
                f.write(f"    requests: {self.requests}\n")
            elif kind != "cached":
                f.write(f"    size: {self.size_mib}MiB\n")
        doc = json.loads(sh(self.binary, "--once", "--json", "--config", config, "--dbus",
                            "none", "--state-dir", state, timeout=900))
        p = doc["probes"][0]
        if not p["success"]:
            raise SystemExit(f"iodrift {kind} N={n} failed: {p['error']}")
        if kind == "cached":
            return p["throughput_bytes_per_second"], None
        rd = p["readers"]
        key = str(n) if str(n) in rd["rate"] else n
        rate = rd["rate"][key]
        if kind != "random":
            return rate, None
        requests = rd["bytes"][key] / p["extra"]["request_bytes"] - n  # minus the warm-ups
        return rate, requests / rd["seconds"][key]


def spread(values):
    return f"{min(values):.2f}–{max(values):.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--backing", default="/var/tmp",
                    help="directory of the loop device's backing file (default /var/tmp)")
    args = ap.parse_args()
    # CTest's timeout (SIGTERM) unwinds like an exception: the loop device and files go.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(f"signal {signum}"))
    if os.environ.get("IODRIFT_BENCH_CTEST") == "1" and os.environ.get("IODRIFT_BENCH") != "1":
        skip("set IODRIFT_BENCH=1 to run the benchmark")
    if os.geteuid() != 0:
        skip("needs root (losetup)")
    for tool in ("fio", "losetup"):
        if subprocess.run(["which", tool], capture_output=True).returncode != 0:
            skip(f"{tool} is not installed")
    with_hdparm = subprocess.run(["which", "hdparm"], capture_output=True).returncode == 0
    binary = os.environ.get("IODRIFTD", "build/bin/iodriftd")
    size = args.size_mib << 20
    work = tempfile.mkdtemp(prefix="iodrift-readers-bench-", dir="/var/tmp")
    dev, img_dir = random_loop_device(args.size_mib + 16, args.backing)
    cells = [(k, n, "fio") for k in KINDS for n in COUNTS]
    if with_hdparm:
        cells += [("cached", 1, "hdparm -T"), ("buffered", 1, "hdparm -t")]
    mine = {c: [] for c in cells}
    wall = {c: [] for c in cells}
    ref_a = {c: [] for c in cells}
    ref_b = {c: [] for c in cells}
    try:
        probe = Iodrift(binary, work, dev, args.size_mib, args.requests)
        for r in range(args.rounds):
            for cell in cells:
                kind, n, tool = cell

                def reference():
                    if tool == "fio":
                        return fio(dev, kind, n, size, args.requests)
                    return hdparm(dev, tool.split()[1])

                def run_iodrift():
                    rate, w = probe.run(kind, n)
                    mine[cell].append(rate)
                    if w is not None:
                        wall[cell].append(w)

                steps = [run_iodrift, lambda: ref_a[cell].append(reference()),
                         lambda: ref_b[cell].append(reference())]
                for i in range(3):
                    steps[(i + r) % 3]()
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        subprocess.run(["losetup", "-d", dev])
        subprocess.run(["rm", "-rf", work, img_dir])

    print(f"device: loop --direct-io=on over {args.size_mib + 16} MiB in {args.backing}; "
          f"region {args.size_mib} MiB; random {args.requests} requests; "
          f"{args.rounds} rounds, each cell: iodrift, reference, reference again (order rotating)")
    print(f"{'kind':8} {'N':>2} {'reference':10} {'iodrift':>10} {'ref':>10} {'ratio':>6} "
          f"{'pairs':>10} {'A/A':>5} {'A/A pairs':>10} {'wall':>5}  reading")
    for cell in cells:
        kind, n, tool = cell
        unit = 1 if kind == "random" else 1 << 20
        m, a, b = (statistics.median(x[cell]) for x in (mine, ref_a, ref_b))
        ratio, aa = m / a, b / a
        pairs = [x / y for x, y in zip(mine[cell], ref_a[cell])]
        aa_pairs = [x / y for x, y in zip(ref_b[cell], ref_a[cell])]
        w = f"{statistics.median(wall[cell]) / a:.2f}" if wall[cell] else "–"
        if abs(ratio - 1) <= 0.10:
            reading = "±10 %"
        elif min(aa_pairs) <= ratio <= max(aa_pairs):
            reading = "within A/A"
        else:
            reading = "differs"
        print(f"{kind:8} {n:>2} {tool:10} {m / unit:>10.1f} {a / unit:>10.1f} {ratio:>6.2f} "
              f"{spread(pairs):>10} {aa:>5.2f} {spread(aa_pairs):>10} {w:>5}  {reading}")
        print(f"key {kind}_readers{n}_{tool.replace(' ', '').replace('-', '')}_ratio={ratio:.3f}",
              file=sys.stderr)
    print("units: MiB/s (sequential, cached), IOPS (random); wall: iodrift's requests over its "
          "step's wall time / fio's IOPS")


if __name__ == "__main__":
    main()
