#!/usr/bin/env python3
"""Where each run's time went, on every probe kind, with a real device.

`iodriftd --once --json` runs one probe of each kind on a loop device (raw, and ext4 on a second
one for file/directory kinds) and:
  1. every result has `time_seconds` whose parts (user_cpu + kernel_cpu + runqueue_wait +
     device_wait + other) add up to its `wall` (the timed read only, no longer than the run's
     duration_seconds) within 10 %; run-queue wait is known (schedstat) and the loop device's
     busy time is known for the kinds that read it; the direct probe's busy time is no more
     than the kernel's io_ticks over the whole process, and none only where the kernel's is 0;
  2. a slower device moves the right part: the direct probe on the raw loop device, run again
     inside a block read throttle (cgroup io.max / blkio), spends >= 3x the off-CPU wait per GiB,
     and the wait grew >= 10x more per GiB than the kernel CPU.

Needs root (losetup, mkfs.ext4, mount, cgroups); exits 77 otherwise.
"""
import json
import os
import subprocess

from iodrift_test.config import write_config
from iodrift_test.daemon import binary
from iodrift_test.devices import Scratch, need_root
from iodrift_test.skip import fail, skip
from iodrift_test.throttle import ReadThrottle

need_root("mkfs.ext4")
GIB = float(1 << 30)
PARTS = ("user_cpu", "kernel_cpu", "runqueue_wait", "device_wait", "other")


def once(cmd_prefix, config):
    res = subprocess.run(cmd_prefix + [binary(), "--once", "--json", "--config", config],
                         capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        fail(f"--once exited {res.returncode}:\n{res.stdout[-3000:]}\n{res.stderr[-2000:]}")
    return {p["name"]: p for p in json.loads(res.stdout)["probes"]}


def io_ticks_ms(dev):
    """/sys/block/NAME/stat field 10: milliseconds the device had I/O in flight."""
    with open(f"/sys/block/{os.path.basename(dev)}/stat") as f:
        return int(f.read().split()[9])


def per_gib(p, *parts):
    t = p["time_seconds"]
    return sum(t[k] or 0 for k in parts) / (p["bytes"] / GIB)


with Scratch("timeparts") as scratch:
    raw = scratch.loop(64 << 20, "raw", fill_random=True, mkfs=False,
                       losetup_args=("--direct-io=on",))
    fsdev = scratch.loop(2 << 30, "fs")
    mnt = scratch.mount(fsdev, "mnt")
    data = os.path.join(mnt, "data.bin")
    with open(data, "wb") as f:
        f.write(os.urandom(32 << 20))
        os.fsync(f.fileno())
    probes = [
        {"name": "t-cached", "kind": "cached", "target": data},
        {"name": "t-buffered", "kind": "buffered", "target": raw, "size": "32MiB"},
        {"name": "t-direct", "kind": "direct", "target": raw, "size": "32MiB"},
        {"name": "t-random", "kind": "random", "target": raw},
        {"name": "t-metadata", "kind": "metadata", "target": mnt},
        {"name": "t-memory", "kind": "memory"},
    ]
    for p in probes:
        p["timeout"] = "60s"
    config = write_config(scratch.path("iodrift.yaml"), probes, scratch.path("state"),
                          dbus=None, log_level=None)

    # 1. Every kind: the parts add up to the wall time.
    got = once([], config)
    devices = {"t-buffered": os.path.basename(raw), "t-direct": os.path.basename(raw),
               "t-random": os.path.basename(raw), "t-metadata": os.path.basename(fsdev)}
    for p in probes:
        r = got.get(p["name"])
        if not r or not r["success"]:
            fail(f"{p['name']}: {r and r['error']}")
        t = r.get("time_seconds")
        if not t:
            fail(f"{p['name']}: no time_seconds in {r}")
        total = sum(t[k] or 0 for k in PARTS)
        wall = t["wall"]
        if not 0 < wall <= r["duration_seconds"]:
            fail(f"{p['name']}: timed-read wall {wall}s outside (0, duration "
                 f"{r['duration_seconds']}s]")
        print(f"{p['name']:<11} wall {wall:.4f}s parts " +
              " ".join(f"{k}={t[k]}" for k in PARTS + ("device_busy", "psi_io_stall")))
        # 10 %, and at least 1 ms: each reader's CPU counters are sampled just outside its timed
        # read, so a sub-millisecond run (metadata) carries the samples' own CPU (~0.1 ms, more
        # on a loaded machine) over its wall.
        slack = max(0.1 * wall, 0.001)
        if abs(total - wall) > slack:
            fail(f"{p['name']}: parts add up to {total:.4f}s, wall {wall:.4f}s (> {slack:.4f}s "
                 f"apart): {t}")
        if t["runqueue_wait"] is None:
            fail(f"{p['name']}: run-queue wait unknown (no /proc/thread-self/schedstat?)")
        if p["name"] in devices:
            if r["target_info"]["device"] != devices[p["name"]] or t["device_busy"] is None:
                fail(f"{p['name']}: device busy time of {devices[p['name']]} unknown: "
                     f"device {r['target_info']['device']!r}, {t}")

    # 2. A slower device: the off-CPU wait per GiB grows, kernel CPU per GiB does not.
    direct_only = write_config(scratch.path("direct.yaml"), [probes[2]], scratch.path("state2"),
                               dbus=None, log_level=None)
    # The device's busy time against the kernel's own count over the whole process (the direct
    # probe is then the only reader of the raw device): iodrift's share of the timed read can
    # be no more than the kernel's total, and none only where the kernel counted none. The
    # kernel counts io_ticks in jiffies (4 ms at HZ=250) and, under load, has left a 25 ms read
    # of this loop device at 0: that is the machine's, not iodrift's.
    ticks_before = io_ticks_ms(raw)
    free = once([], direct_only)["t-direct"]
    ticks_whole = io_ticks_ms(raw) - ticks_before
    busy = free["time_seconds"]["device_busy"]
    print(f"t-direct alone: device busy {busy}s in the timed read of "
          f"{free['time_seconds']['wall']:.4f}s; the kernel's io_ticks over the whole process "
          f"{ticks_whole} ms")
    if busy is None or busy * 1e3 > ticks_whole + 1:
        fail(f"t-direct: device busy {busy}s in the timed read, more than the {ticks_whole} ms "
             f"the kernel counted for {raw} over the whole process")
    if busy <= 0 and ticks_whole > 0:
        fail(f"t-direct read 32 MiB from {raw}: the kernel counted {ticks_whole} ms busy over "
             f"the process, iodrift none in the timed read: {free['time_seconds']}")
    if ticks_whole <= 0:
        print(f"NOT ASSERTED (machine): the kernel counted no busy time for {raw} over a 32 MiB "
              f"direct read, so iodrift's 0 is not judged")
    with ReadThrottle(raw, 8 << 20) as throttle:
        slow = once(throttle.wrap([]), direct_only)["t-direct"]
    print(f"throttle: {throttle.kind}")
    for label, r in (("unthrottled", free), ("throttled", slow)):
        print(f"{label:<12} {r['throughput_bytes_per_second'] / (1 << 20):8.1f} MiB/s  "
              f"wait {per_gib(r, 'device_wait', 'other'):.3f} s/GiB  "
              f"kernel CPU {per_gib(r, 'kernel_cpu'):.3f} s/GiB  "
              f"device busy {per_gib(r, 'device_busy'):.3f} s/GiB  {r['time_seconds']}")
    if slow["throughput_bytes_per_second"] > 0.5 * free["throughput_bytes_per_second"]:
        # The claim needs the throttle's effect; without it there is nothing to attribute.
        skip(f"the throttle ({throttle.kind}) did not slow direct reads: "
             f"{slow['throughput_bytes_per_second']:.0f} vs {free['throughput_bytes_per_second']:.0f} B/s")
    wait_free, wait_slow = per_gib(free, "device_wait", "other"), per_gib(slow, "device_wait", "other")
    if wait_slow < 3 * wait_free:
        fail(f"throttled: off-CPU wait {wait_slow:.3f} s/GiB vs {wait_free:.3f} unthrottled (< 3x)")
    # Kernel CPU per GiB may rise a little (a throttled run reads less, so its fixed costs weigh
    # more per GiB), but the time the throttle added must be off-CPU wait, not kernel CPU.
    cpu_free, cpu_slow = per_gib(free, "kernel_cpu"), per_gib(slow, "kernel_cpu")
    if wait_slow - wait_free < 10 * (cpu_slow - cpu_free):
        fail(f"throttled: wait grew {wait_slow - wait_free:.3f} s/GiB, kernel CPU "
             f"{cpu_slow - cpu_free:.3f} s/GiB: the added time is not mostly off-CPU wait")
    print("ok")
