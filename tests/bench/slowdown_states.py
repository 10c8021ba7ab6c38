#!/usr/bin/env python3
"""What slows buffered reads on this machine: the source of the table in docs/diagnose.md.

Runs `iodriftd --once --json` with a buffered, a direct and a cached probe on a 256 MiB file of
random data on ext4 on a loop device (--direct-io=on: the backing file adds no second cache), in
each machine state below, REPS times, and prints per state and kind the median throughput and
the probe thread's kernel CPU per GiB read (cpu_seconds.system / GiB).

States:
  idle        free memory left alone for IDLE s before each run (free page reporting takes it back)
  warm        WARM bytes of anonymous memory touched and released right before each run
  pagecache   clean page cache filled from a sparse file until MemAvailable - 2 GiB is used
  slab        NEG million negative dentries (stat() of names that do not exist) made first
  fragmented  2 GiB of anonymous memory held with every other page released (order-0 holes)
  throttled   the daemon in a block cgroup with a 40 MiB/s read limit on the loop device

Usage (root): IODRIFTD=build/bin/iodriftd PYTHONPATH=tests/lib tests/bench/slowdown_states.py [REPS]
  --states=a,b: only these states.
  --python: the same buffered/direct reads done by this script (no cached), for a machine
  without a built daemon; kernel CPU is then the script thread's.
"""
import json
import mmap
import os
import resource
import statistics
import subprocess
import sys
import time

from iodrift_test.config import write_config
from iodrift_test.devices import Scratch, need_root, sh
from iodrift_test.slowdown import (Fragmented, PageCacheFiller, ReadThrottle, mem_available,
                                   negative_dentries, warm_free_memory)

REPS = int(next((a for a in sys.argv[1:] if a.isdigit()), 3))
FILE_BYTES = 256 << 20
IDLE = 6
WARM = 2 << 30
NEG = 2_000_000
THROTTLE = 40 << 20
GIB = 1 << 30


def py_read(path, kind, size):
    """The buffered/direct probe's read in Python (--python: no daemon binary needed): drop the
    region (fadvise DONTNEED), then 1 MiB reads; (bytes/s, bytes, thread system CPU s)."""
    flags = os.O_RDONLY | (os.O_DIRECT if kind == "direct" else 0)
    fd = os.open(path, flags)
    try:
        os.posix_fadvise(fd, 0, size, os.POSIX_FADV_DONTNEED)
        buf = mmap.mmap(-1, 1 << 20)
        r0 = resource.getrusage(resource.RUSAGE_THREAD)
        t0 = time.monotonic()
        off = 0
        while off < size:
            n = os.preadv(fd, [buf], off)
            if n <= 0:
                break
            off += n
        wall = time.monotonic() - t0
        r1 = resource.getrusage(resource.RUSAGE_THREAD)
        os.posix_fadvise(fd, 0, size, os.POSIX_FADV_DONTNEED)
        return off / wall, off, r1.ru_stime - r0.ru_stime
    finally:
        os.close(fd)


def once_python(target, throttle=None):
    if throttle:
        throttle.add(os.getpid())
    try:
        out = {}
        for kind in ("buffered", "direct"):
            tp, n, sys_s = py_read(target, kind, FILE_BYTES)
            out[kind] = {"throughput_bytes_per_second": tp, "bytes": n,
                         "cpu_seconds": {"system": sys_s}}
        return out
    finally:
        if throttle:
            throttle.release(os.getpid())


def once(iodriftd, config, throttle=None):
    if iodriftd is None:
        return once_python(config, throttle)
    proc = subprocess.Popen([iodriftd, "--config", config, "--once", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if throttle:
        throttle.add(proc.pid)
    out, _ = proc.communicate(timeout=300)
    return {p["name"]: p for p in json.loads(out)["probes"]}


def measure(label, iodriftd, config, before=None, throttle=None):
    rows = {}
    for _ in range(REPS):
        if before:
            before()
        for name, p in once(iodriftd, config, throttle).items():
            tp = p.get("throughput_bytes_per_second")
            gib = p.get("bytes", 0) / GIB
            sys_s = p.get("cpu_seconds", {}).get("system", 0)
            rows.setdefault(name, []).append((tp or 0, sys_s / gib if gib else float("nan")))
    for name in ("buffered", "direct", "cached"):
        if name not in rows:
            continue
        tps = [r[0] / (1 << 20) for r in rows.get(name, [])]
        cpu = [r[1] for r in rows.get(name, [])]
        print(f"| {label} | {name} | {statistics.median(tps):.0f} "
              f"({min(tps):.0f}-{max(tps):.0f}) | {statistics.median(cpu):.2f} |", flush=True)


ONLY = next((a.split("=", 1)[1].split(",") for a in sys.argv[1:] if a.startswith("--states=")),
            None)


def wanted(state):
    return ONLY is None or state in ONLY


def main():
    need_root("mkfs.ext4")
    python = "--python" in sys.argv
    iodriftd = None if python else os.environ.get("IODRIFTD", "build/bin/iodriftd")
    with Scratch("slowdown-bench") as s:
        dev = s.loop(1 << 30, "fs", losetup_args=("--direct-io=on",))
        mnt = s.mount(dev, "mnt")
        target = os.path.join(mnt, "data")
        with open(target, "wb") as f:
            for _ in range(FILE_BYTES >> 20):
                f.write(os.urandom(1 << 20))
            os.fsync(f.fileno())
        common = {"target": target, "size": "256MiB", "time_budget": "10s", "timeout": "60s"}
        config = write_config(s.path("bench.yaml"), [
            {"name": "buffered", "kind": "buffered", **common},
            {"name": "direct", "kind": "direct", **common},
            {"name": "cached", "kind": "cached", "target": target},
        ], state_dir=s.path("state"))
        os.makedirs(s.path("state"), exist_ok=True)
        if python:
            config = target  # once_python reads the file itself
        print(f"# {REPS} runs per state; MiB/s median (min-max) | kernel CPU s per GiB (median)")
        print("| state | kind | MiB/s | sys s/GiB |\n|---|---|---|---|")
        if wanted("idle"):
            measure("idle", iodriftd, config, before=lambda: time.sleep(IDLE))
        if wanted("warm"):
            measure("warm", iodriftd, config, before=lambda: warm_free_memory(WARM))
        if wanted("pagecache"):
            with PageCacheFiller(s.dir, max(mem_available() - (2 << 30), 1 << 30)):
                measure("pagecache", iodriftd, config)
        if wanted("slab"):
            neg = s.path("neg")
            os.makedirs(neg)
            negative_dentries(neg, NEG)
            measure("slab", iodriftd, config, before=lambda: time.sleep(IDLE))
            sh("sh", "-c", "echo 2 > /proc/sys/vm/drop_caches")
        if wanted("fragmented"):
            with Fragmented(2 << 30):
                measure("fragmented", iodriftd, config, before=lambda: time.sleep(IDLE))
        if wanted("throttled"):
            with ReadThrottle(dev, THROTTLE) as t:
                measure("throttled", iodriftd, config, before=lambda: time.sleep(IDLE),
                        throttle=t)
                measure("throttled+warm", iodriftd, config,
                        before=lambda: warm_free_memory(WARM), throttle=t)


main()
