#!/usr/bin/env python3
"""`readers: [1, 2, 4]` on a real loop device: every step runs, the readers read disjoint regions,
and the readers metrics appear.

Disjoint regions, from the device's own counter (/sys/block/loopN/stat, sectors read), one probe
per `--once` run:
  direct    O_DIRECT has no cache and no readahead: the sectors read equal the bytes the probe
            reports (3 steps x the region), and each step's bytes equal the region — so N readers
            read N slices that add up to the region exactly, none twice, none past it;
  buffered  each step drops the region's cache first; a reader whose slice overlapped another's
            would be served from the page cache, so the device would read fewer bytes than the
            probe: the sectors read are at least the bytes reported (less the 1 % the probe lets
            stay cached) and at most readahead more;
  random    the device reads exactly what the probe reports, and each step's bytes are the
            requests shared out plus one warm-up read per reader.
Then the scheduled daemon exports the curve: aggregate per reader count, per-reader spread and
scaling efficiency. No timing is asserted. Needs root (losetup); exits 77 otherwise.
"""
import os
import shutil
import subprocess
import time

from iodrift_test import prom
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, once_json
from iodrift_test.devices import Scratch, need_root
from iodrift_test.skip import fail

need_root("losetup")

REGION = 16 << 20
COUNTS = [1, 2, 4]


def sectors_read(dev):
    return int(open(f"/sys/block/{os.path.basename(dev)}/stat").read().split()[2])


def probe(name, kind, dev):
    p = {"name": name, "kind": kind, "target": dev, "interval": "1h", "timeout": "120s",
         "time_budget": "60s", "readers": "[1, 2, 4]"}
    if kind == "random":
        p["requests"] = 64
    else:
        p["size"] = "16MiB"
    return p


def check_curve(name, p):
    if not p["success"]:
        fail(f"{name}: {p['error']}")
    readers = p.get("readers")
    if not readers:
        fail(f"{name}: no readers curve in {p}")
    if sorted(int(n) for n in readers["rate"]) != COUNTS:
        fail(f"{name}: steps {sorted(readers['rate'])}, want {COUNTS}")
    for n in map(str, COUNTS):
        if not readers["rate"][n] > 0:
            fail(f"{name}: readers {n}: rate {readers['rate'][n]}")
        if not 0 < readers["per_reader_min"][n] <= readers["per_reader_max"][n]:
            fail(f"{name}: readers {n}: spread {readers['per_reader_min'][n]} .. "
                 f"{readers['per_reader_max'][n]}")
        if n not in readers["scaling_efficiency"]:
            fail(f"{name}: readers {n}: no scaling efficiency")
    return readers


with Scratch("readers") as scratch:
    work = scratch.dir
    dev = scratch.loop(64 << 20, "raw", fill_random=True, mkfs=False)
    # udev's first look at a new device (blkid) would add reads of its own to the counter.
    if shutil.which("udevadm"):
        subprocess.run(["udevadm", "settle", "--timeout=30"], capture_output=True)
    state = os.path.join(work, "state")

    for kind in ("direct", "buffered", "random"):
        config = write_config(os.path.join(work, f"{kind}.yaml"),
                              [probe(f"dev-{kind}", kind, dev)], state, dbus=None)
        before = sectors_read(dev)
        code, doc, stderr = once_json(config, state, timeout=300)
        read_bytes = (sectors_read(dev) - before) * 512
        if code != 0:
            fail(f"{kind}: --once exited {code}: {stderr[-2000:]}")
        p = doc["probes"][0]
        readers = check_curve(f"dev-{kind}", p)
        if kind == "random":
            request = int(p["extra"]["request_bytes"])
            # Requests shared out, one warm-up per reader: 64 + N requests per step.
            for n in COUNTS:
                if readers["bytes"][str(n)] != (64 + n) * request:
                    fail(f"random readers {n}: {readers['bytes'][str(n)]} bytes, want "
                         f"{(64 + n) * request}")
            if read_bytes != p["bytes"]:
                fail(f"random: device read {read_bytes} bytes, probe reports {p['bytes']}")
            continue
        for n in COUNTS:
            if readers["bytes"][str(n)] != REGION:
                fail(f"{kind} readers {n}: step read {readers['bytes'][str(n)]} bytes, want the "
                     f"region ({REGION})")
        if p["bytes"] != len(COUNTS) * REGION:
            fail(f"{kind}: {p['bytes']} bytes in all, want {len(COUNTS) * REGION}")
        if kind == "direct" and read_bytes != p["bytes"]:
            fail(f"direct: device read {read_bytes} bytes, probe reports {p['bytes']}")
        if kind == "buffered":
            readahead = int(open(f"/sys/block/{os.path.basename(dev)}/queue/read_ahead_kb")
                            .read()) << 10
            slack = len(COUNTS) * (2 << 20) + sum(COUNTS) * readahead
            # Up to 1 % of a region may stay cached after the drop (the probe's own limit).
            if not 0.99 * p["bytes"] <= read_bytes <= p["bytes"] + slack:
                fail(f"buffered: device read {read_bytes} bytes for {p['bytes']} reported "
                     f"(allowed: up to {slack} of readahead more, at most 1 % less)")
        print(f"ok {kind}: steps {COUNTS} read {read_bytes} device bytes for {p['bytes']}")

    # The scheduled daemon exports the curve.
    config = write_config(os.path.join(work, "daemon.yaml"),
                          [probe(f"dev-{k}", k, dev) for k in ("buffered", "direct", "random")],
                          state, dbus=None)
    with Daemon("--config", config) as d:
        deadline = time.monotonic() + 240
        names = ("dev-buffered", "dev-direct", "dev-random")
        while True:
            samples = prom.parse(d.get()[2])
            done = [name for name in names if prom.runs(samples, name, "ok") > 0]
            failed = [name for name in names if prom.runs(samples, name, "error") > 0]
            if failed:
                fail(f"{failed} failed: {d.stderr()[-2000:]}")
            if len(done) == len(names):
                break
            if time.monotonic() > deadline:
                fail(f"only {done} ran within 240 s")
            time.sleep(0.5)
    for name, family, spread in (
            ("dev-buffered", "iodrift_probe_readers_throughput_bytes_per_second",
             "iodrift_probe_reader_throughput_bytes_per_second"),
            ("dev-direct", "iodrift_probe_readers_throughput_bytes_per_second",
             "iodrift_probe_reader_throughput_bytes_per_second"),
            ("dev-random", "iodrift_probe_readers_ops_per_second",
             "iodrift_probe_reader_ops_per_second")):
        for n in map(str, COUNTS):
            def one(metric, **extra):
                v = prom.value(samples, metric, probe=name, readers=n, **extra)
                if v is None:
                    fail(f"{name}: no {metric}{{readers={n}, {extra}}}")
                return v
            if not one(family) > 0:
                fail(f"{name}: {family} readers={n} not positive")
            if not 0 < one(spread, stat="min") <= one(spread, stat="max"):
                fail(f"{name}: spread for readers={n}")
            if not one("iodrift_probe_readers_scaling_efficiency") > 0:
                fail(f"{name}: efficiency for readers={n}")
    print("ok: readers metrics exported for every step")
