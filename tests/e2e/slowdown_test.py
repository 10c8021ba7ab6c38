#!/usr/bin/env python3
"""Two real slowdowns of one buffered probe, and whether the verdict and `iodriftctl diagnose`
tell them apart.

A `buffered` probe and its `direct` twin (64 MiB, time budget 2 s, every 5 s: more than the ~2 s
after which this VM's free page reporting hands free memory back to the hypervisor) read a
128 MiB file of random data on ext4 on a loop device (--direct-io=on). Phases:

  1. warm: a helper process touches and releases 512 MiB of anonymous memory every 0.4 s, so
     free memory stays backed; the probe's baseline forms here.
  2. device: the daemon is put in a block cgroup with a 20 MiB/s read limit on the loop device
     (v1 blkio.throttle.read_bps_device or v2 io.max), helper still on. Once a buffered run is
     below 0.67 of the baseline, `iodriftctl diagnose` runs: it must NOT recover (no memory
     step can undo a device limit) and the direct twin is slow too.
  3. memory: limit removed, helper stopped, free memory left idle (reported to the host). When
     this makes buffered slower than 0.67 of the baseline (the state docs/probes.md, "Why buffered next to direct", measures and of
     the table in docs/diagnose.md), diagnose runs again; where one of its memory steps
     recovers it (in practice warm_free_memory or drop_caches, whose freed pages are backed)
     the answer is exported and shown. When the machine does not show that slowdown, or it
     does not yield to a memory step (bare metal, no free page reporting, a busy machine), the
     test is SKIPPED with the figures it measured — never passed.

Checked after each experiment: the recovery metrics (iodrift_probe_recovery_ratio{probe,step},
iodrift_probe_recovery_timestamp_seconds{probe}) and the status page's "last diagnose" section.

Verdict (`iodriftctl explain NAME --json` top-level "verdict"): check_verdicts() expects
"device" in phase 2 and "page_allocation" or "hypervisor_reclaim" in phase 3 (kernel CPU
allocating pages, the host having taken free memory back where free page reporting shows it),
each on the slow runs before diagnose re-measures, once the direct twin has a run from the same
moment (the twin rule); in phase 3 undetermined is accepted (never a wrong cause: how a memory
slowdown splits into time parts, and which evidence rules reclaim out, is the machine's).

Needs root, losetup, mkfs.ext4, dbus-daemon and a block cgroup controller; else exit 77.
"""
import html
import json
import os
import statistics
import subprocess
import sys
import time

from iodrift_test import delayacct, prom
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.dbus import Bus, ctl, wait_for_service
from iodrift_test.devices import Scratch, need_root
from iodrift_test.skip import fail, need_tools, skip
from iodrift_test.slowdown import ReadThrottle
from iodrift_test.wait import wait_for

FILE_BYTES = 128 << 20
THROTTLE = 20 << 20
SLOW = 0.67          # a run below this share of the baseline is "slow"
BUF, DIRECT = "sd-buffered", "sd-direct"

need_root("mkfs.ext4")
need_tools("dbus-daemon", "busctl")

WARMER = """
import mmap, os, sys, time
size = 512 << 20
page = os.sysconf("SC_PAGE_SIZE")
while True:
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for off in range(0, size, page):
        m[off] = 1
    m.close()
    time.sleep(0.4)
"""


def api(d):
    status, _, body = d.get("/api/v1/probes", timeout=30)
    if status != 200:
        fail(f"/api/v1/probes answered {status}")
    return {p["name"]: p for p in json.loads(body)["probes"]}


def runs_since(d, name, since):
    return [h for h in api(d).get(name, {}).get("history", [])
            if h["time_seconds"] >= since and h["result"] == "ok" and h["figure"]]


def diagnose(bus, name):
    res = ctl(bus.address, "diagnose", name, "--json", timeout=900)
    if res.returncode not in (0, 1) or not res.stdout.strip():
        fail(f"iodriftctl diagnose {name} exited {res.returncode}: {res.stdout} {res.stderr}")
    out = json.loads(res.stdout)
    print(out["text"])
    return out


def check_verdicts(bus, expected, undetermined_ok=False):
    """The verdict contract of `iodriftctl explain NAME --json` ("verdict", "verdict_text").
    `expected`: the cause, or a tuple of the causes that are right here.

    A slow buffered run whose direct twin last ran before it is undetermined until the daemon's
    follow-up twin run (the twin rule, docs "Reading a slowdown") lands, and so is a slowdown
    that has not yet lasted kSustainedRuns runs: wait for both, bounded.
    """
    expected = (expected,) if isinstance(expected, str) else tuple(expected)

    def decided():
        res = ctl(bus.address, "explain", BUF, "--json")
        if res.returncode != 0:
            fail(f"iodriftctl explain {BUF} exited {res.returncode}: {res.stderr}")
        doc = json.loads(res.stdout)
        if "verdict" not in doc:
            fail(f"`iodriftctl explain --json` has no verdict: {doc}")
        text = doc.get("verdict_text", "")
        # A cause is named once the slowdown lasted (verdict.h kSustainedRuns runs in a row).
        waiting = ("no run from the same moment" in text or "a single slow run" in text)
        return None if waiting else doc
    doc = wait_for("a verdict on a slowdown that lasted, with a contemporaneous direct twin run",
                   decided, timeout=180, interval=1)
    text = doc.get("verdict_text", "")
    if doc["verdict"] == "undetermined" and not undetermined_ok and (
            "block I/O wait unknown" in text or "no block I/O wait figure" in text):
        # Delay accounting on, but its figure was not a measurement (longer than the run: a VM's
        # accounting was seen at 80x the wall time) now or at baseline: iodrift drops it, and
        # without it the device is named only where the stock-machine evidence suffices.
        undetermined_ok = True
    if doc["verdict"] == "undetermined" and undetermined_ok:
        # Never a wrong cause; but what this machine's slowdown looks like in the time parts
        # is the machine's (the figures are in the text).
        print(f"verdict undetermined (accepted here, {expected!r} not confirmed): "
              f"{doc.get('verdict_text')}")
        return
    if doc["verdict"] not in expected:
        fail(f"verdict {doc['verdict']!r} ({doc.get('verdict_text')}), expected one of "
             f"{expected!r}")
    print(f"verdict {doc['verdict']}: {doc.get('verdict_text')}")


def check_exported(d, figures, shown):
    """The last experiment is exported (/metrics) and shown (the status page)."""
    samples, _ = scrape(d)
    if prom.value(samples, "iodrift_probe_recovery_ratio", probe=BUF, step="control") is None:
        fail(f"no iodrift_probe_recovery_ratio{{probe={BUF},step=control}}")
    stamp = prom.value(samples, "iodrift_probe_recovery_timestamp_seconds", probe=BUF)
    if stamp is None or abs(stamp - figures["finish_time"]) > 1:
        fail(f"iodrift_probe_recovery_timestamp_seconds {stamp}, experiment ended "
             f"{figures['finish_time']}")
    _, _, page = d.get("/", timeout=30)
    if shown not in html.unescape(page):
        fail(f"the status page does not show the last diagnose ({shown!r})")


def main():
    # The device is named from the readers' block I/O wait (delay accounting): on, as the docs tell
    # an operator; without it the honest verdict is undetermined.
    with Scratch("slowdown") as s, Bus() as bus, delayacct.enabled() as no_delayacct:
        if no_delayacct:
            print(f"delay accounting off ({no_delayacct}): undetermined is accepted for the device")
        dev = s.loop(512 << 20, "fs", losetup_args=("--direct-io=on",))
        mnt = s.mount(dev, "mnt")
        target = os.path.join(mnt, "data")
        with open(target, "wb") as f:
            for _ in range(FILE_BYTES >> 20):
                f.write(os.urandom(1 << 20))
            os.fsync(f.fileno())
        common = {"target": target, "interval": "5s", "size": "64MiB", "time_budget": "2s",
                  "timeout": "30s"}
        config = write_config(s.path("iodrift.yaml"),
                              [{"name": BUF, "kind": "buffered", **common},
                               {"name": DIRECT, "kind": "direct", **common}],
                              state_dir=s.path("state"), dbus=None,
                              extra="diagnose:\n  enabled: true\n  warm_size: 1GiB\n"
                              # two experiments back to back; the throttle is I/O pressure
                              "  cooldown: 0s\n  max_io_pressure: 100\n")
        warmer = subprocess.Popen([sys.executable, "-c", WARMER])
        throttle = None
        try:
            with Daemon("--config", config, "--dbus", bus.address) as d:
                wait_for_service(bus.address, d)
                # 1. warm: the baseline forms.
                probes = wait_for("a baseline of " + BUF,
                                  lambda: (lambda p: p if p.get(BUF, {}).get("baseline") else None)(api(d)),
                                  timeout=240, interval=1)
                baseline = probes[BUF]["baseline"]
                print(f"phase 1 warm: baseline {baseline / 1e6:.0f} MB/s")

                # 2. device: block cgroup read limit.
                throttle = ReadThrottle(dev, THROTTLE)
                throttle.limit(True)
                throttle.add(d.proc.pid)
                since = time.time()
                wait_for("a throttled buffered run",
                         lambda: [h for h in runs_since(d, BUF, since)
                                  if h["figure"] < SLOW * baseline], timeout=120, interval=1)
                # on the slow run, before diagnose re-measures
                check_verdicts(bus, "device", undetermined_ok=bool(no_delayacct))
                device = diagnose(bus, BUF)
                f = device["figures"]
                if f.get("recovered") != 0:
                    fail(f"diagnose recovered a device slowdown: {device['text']}")
                if "ratio.warm_free_memory" not in f:
                    fail(f"the device experiment did not reach warm_free_memory: {device['text']}")
                if f.get("ratio.control", 1) >= SLOW:
                    fail(f"the throttled measurement was not slow: {device['text']}")
                check_exported(d, f, "not recovered")
                throttle.close()
                throttle = None

                # 3. memory: helper stopped, free memory left to the hypervisor.
                warmer.terminate()
                warmer.wait(10)
                time.sleep(8)
                since = time.time()
                runs = wait_for("3 buffered runs with idle free memory",
                                lambda: (lambda r: r if len(r) >= 3 else None)(
                                    runs_since(d, BUF, since)), timeout=120, interval=1)
                ratios = [h["figure"] / baseline for h in runs]
                direct_mb = [h["figure"] / 1e6 for h in runs_since(d, DIRECT, since)]
                print(f"phase 3 idle free memory: buffered ratios "
                      f"{', '.join(f'{r:.2f}' for r in ratios)}; direct "
                      f"{', '.join(f'{m:.0f}' for m in direct_mb)} MB/s")
                if statistics.median(ratios) >= SLOW:
                    skip(f"this machine did not slow buffered reads with idle free memory: "
                         f"median ratio {statistics.median(ratios):.2f} (runs "
                         f"{', '.join(f'{r:.2f}' for r in ratios)}, baseline "
                         f"{baseline / 1e6:.0f} MB/s formed with free memory kept warm); "
                         f"the device half passed: {device['text']}")
                check_verdicts(bus, ("page_allocation", "hypervisor_reclaim"), undetermined_ok=True)  # a slow last run
                memory = diagnose(bus, BUF)
                f = memory["figures"]
                if f.get("ratio.control", 1) >= SLOW:
                    skip(f"the slow state did not hold until diagnose measured: "
                         f"{memory['text']} (runs before: "
                         f"{', '.join(f'{r:.2f}' for r in ratios)})")
                if f.get("recovered") != 1:
                    # Whether this machine's slowdown yields to a memory step is the machine's:
                    # iodrift's part (the answer, exported and shown) was checked on the device
                    # half.
                    skip(f"the idle-free-memory slowdown did not yield to a memory step here: "
                         f"{memory['text']}; the device half passed: {device['text']}")
                check_exported(d, f, "recovered by")
        finally:
            if throttle:
                throttle.close()
            if warmer.poll() is None:
                warmer.kill()
                warmer.wait()
    print("ok")


main()
