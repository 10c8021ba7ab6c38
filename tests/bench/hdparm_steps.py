#!/usr/bin/env python3
"""Which step of `hdparm -t`'s method sets its figure: hdparm itself, a copy of its timing loop
with each step switched on or off (hdparm_steps.c), dd and iodrift's buffered probe, alternating
on one quiet loop device.

    sudo [IODRIFTD=build/bin/iodriftd] tests/bench/hdparm_steps.py [--rounds 8] [--size-mib 1024]
         [--backing DIR]

Needs root (losetup), hdparm and a C compiler; exits 77 otherwise (CTest skip). Before every
run the device's page cache is dropped (`blockdev --flushbufs`), so every variant starts from
the same cache state; the order of the variants rotates every round. Each variant reads the
whole device in 2 MiB read()s (hdparm: for up to 3 s), except iodrift (its `size`, 1 MiB
reads). A populated variant instead starts with the device in the cache and drops it
itself, after its 3 s sleep. Printed per variant: the median and range in MiB/s, the median
ratio to hdparm's run in the same round, and the free memory the guest reported to the host
during the run (free page reporting, where the kernel exports the count). docs/benchmarks.md "Parallel readers against fio --numjobs" has the reading.
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
import time

from readers_bench import hdparm, random_loop_device, skip

HERE = os.path.dirname(os.path.abspath(__file__))
ALL_STEPS = ["nonblock", "lock", "sync", "sleep", "touch", "itimer"]


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def dd(dev):
    err = sh("dd", f"if={dev}", "of=/dev/null", "bs=2M", timeout=120).stderr
    last = err.strip().splitlines()[-1]
    size = int(re.match(r"(\d+) bytes", last).group(1))
    return size / float(re.search(r"copied, ([\d.]+) s", last).group(1))


def iodrift(binary, work, dev, size_mib):
    config = os.path.join(work, "buffered.yaml")
    with open(config, "w") as f:
        f.write(f"state_dir: {work}/state\ndbus: none\nprobes:\n  - name: b\n    kind: buffered\n"
                f"    target: {dev}\n    size: {size_mib}MiB\n    time_budget: 60s\n"
                f"    timeout: 300s\n")
    doc = json.loads(sh(binary, "--once", "--json", "--config", config, "--dbus", "none",
                        "--state-dir", f"{work}/state", timeout=600).stdout)
    p = doc["probes"][0]
    if not p["success"]:
        raise SystemExit(f"iodrift buffered failed: {p['error']}")
    return p["throughput_bytes_per_second"]


def reported_kib():
    """Free memory reported to the host so far (KiB), where this kernel exports it; else None."""
    try:
        with open("/sys/module/page_reporting/parameters/reported_kib") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--backing", default="/var/tmp")
    args = ap.parse_args()
    if os.environ.get("IODRIFT_BENCH_CTEST") == "1" and os.environ.get("IODRIFT_BENCH") != "1":
        skip("set IODRIFT_BENCH=1 to run the benchmark")
    if os.geteuid() != 0:
        skip("needs root (losetup)")
    for tool in ("hdparm", "losetup", "blockdev", "cc"):
        if shutil.which(tool) is None:
            skip(f"{tool} is not installed")
    work = tempfile.mkdtemp(prefix="iodrift-hdparm-steps-", dir="/var/tmp")
    clone = os.path.join(work, "hdparm_steps")
    sh("cc", "-O2", "-o", clone, os.path.join(HERE, "hdparm_steps.c"))
    dev, img_dir = random_loop_device(args.size_mib + 16, args.backing)

    def steps(*on):
        return lambda: float(sh(clone, dev, *on, timeout=120).stdout)

    # name -> (run, populate): a populated variant starts with the whole device in the page
    # cache (read once) instead of dropped, and drops it itself (`drop`) when the step says so.
    variants = {
        "hdparm -t": (lambda: hdparm(dev, "-t"), False),
        "copy, every step": (steps(*ALL_STEPS), False),
        "copy, no 3 s sleep": (steps(*[s for s in ALL_STEPS if s != "sleep"]), False),
        "copy, no mlock": (steps(*[s for s in ALL_STEPS if s != "lock"]), False),
        "copy, only the sleep": (steps("sleep"), False),
        "copy, 3 s spin": (steps("spin"), False),
        "copy, sleep, then drop": (steps("sleep", "drop"), True),
        "copy, no step": (steps(), False),
        "O_DIRECT, 3 s sleep": (steps("direct", "sleep"), False),
        "O_DIRECT, no step": (steps("direct"), False),
        "dd bs=2M": (lambda: dd(dev), False),
    }
    binary = os.environ.get("IODRIFTD")
    if binary:
        variants["iodrift buffered"] = (lambda: iodrift(binary, work, dev, args.size_mib), False)

        def iodrift_after_sleep():
            time.sleep(3)
            return iodrift(binary, work, dev, args.size_mib)
        variants["iodrift, 3 s sleep first"] = (iodrift_after_sleep, False)
    names = list(variants)
    got = {n: [] for n in names}
    reported = {n: [] for n in names}
    try:
        for r in range(args.rounds):
            k = r % len(names)
            for n in names[k:] + names[:k]:
                run, populate = variants[n]
                if populate:
                    sh("dd", f"if={dev}", "of=/dev/null", "bs=2M", timeout=120)
                else:
                    sh("blockdev", "--flushbufs", dev)
                before = reported_kib()
                got[n].append(run())
                after = reported_kib()
                if before is not None and after is not None:
                    reported[n].append((after - before) / 1024)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        subprocess.run(["losetup", "-d", dev])
        subprocess.run(["rm", "-rf", work, img_dir])
    print(f"device: loop --direct-io=on over {args.size_mib + 16} MiB in {args.backing}; "
          f"{args.rounds} rounds, order rotating, page cache dropped before every run")
    print(f"{'variant':24} {'median':>8} {'range':>13} {'/ hdparm':>9} {'reported':>9}")
    for n in names:
        v = [x / (1 << 20) for x in got[n]]
        ratio = statistics.median(a / b for a, b in zip(got[n], got["hdparm -t"]))
        rep = f"{statistics.median(reported[n]):9.0f}" if reported[n] else f"{'–':>9}"
        print(f"{n:24} {statistics.median(v):8.0f} {min(v):6.0f}–{max(v):<6.0f} {ratio:9.2f} {rep}")
    print("MiB/s; / hdparm: median of the per-round ratios to hdparm -t; reported: median MiB of "
          "free memory the guest reported to the host during the run "
          "(/sys/module/page_reporting/parameters/reported_kib, where the kernel has it)")

if __name__ == "__main__":
    main()
