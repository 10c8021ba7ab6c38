#!/usr/bin/env python3
"""Two real slowdowns of one buffered probe — one of the device, one of memory management in
which buffered reads fall while `direct` stays flat — and whether the verdict and `iodriftctl
diagnose` tell them apart.

A `buffered` probe and its `direct` twin (64 MiB, time budget 2 s, every 2 s) read a 128 MiB
file of random data on ext4 on a loop device (--direct-io=on) over a tmpfs file. The daemon joins a memory cgroup
of its own right after it starts (so its anonymous memory is counted there); no limit yet.
Phases:

  1. baseline: both probes' baselines form on the quiet device.
  2. device: the daemon is put in a block cgroup with a 20 MiB/s read limit on the loop device
     (v1 blkio.throttle.read_bps_device or v2 io.max). Once a buffered run is below 0.67 of the
     baseline the verdict must be "device", then `iodriftctl diagnose` runs: it must NOT recover
     (no memory step can undo a device limit), the control is slow, and the answer is exported
     (iodrift_probe_recovery_ratio{probe,step}, iodrift_probe_recovery_timestamp_seconds{probe})
     and shown (the status page's "last diagnose" section).
  3. memory: limit removed; the daemon's memory cgroup squeezed (iodrift_test.slowdown.
     MemorySqueeze: its anon memory + 8 MiB of page cache, shared with a nice-19 dirty writer on
     a tmpfs-backed loop device). The buffered reads' readahead is reclaimed before it is read
     and read again; O_DIRECT reads allocate no page cache. Checked on 3 buffered runs and the
     direct runs of the same time (a second window of 3 when the first did not fall yet):
     buffered's median below 0.67 of its baseline, direct's median ratio at least 0.4 and twice
     buffered's, and the verdict "memory_reclaim" (undetermined accepted: never a wrong cause).
     Where buffered did not fall in either window the effect is absent, not iodrift wrong: the
     test says skipped with the figures (seen once in 8 runs here: medians 0.71); so does a
     window where direct fell with buffered (once: direct 0.41-1.58 scattered, median 0.57 vs
     buffered 0.65). The verdicts and diagnose's answers are what iodrift is held to.

The idle-free-memory slowdown this test once tried to make (free memory handed back to the
hypervisor by free page reporting; docs/probes.md, "Why buffered next to direct") does not
reproduce on the CI's VM: the test skipped with buffered runs 1.8-7x faster than their baseline
on every run. docs/causes.md
("Page allocation after idle free memory") has the figures; no diagnose memory step has a
reproducible slowdown to recover here, so "recovered" is checked by tests/analysis and
dbus.diagnose only.

Needs root, losetup, mkfs.ext4, dbus-daemon, a block and a memory cgroup controller; else 77.
"""
import html
import json
import os
import statistics
import time

from iodrift_test import delayacct, prom
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.dbus import Bus, ctl, wait_for_service
from iodrift_test.devices import Scratch, need_root
from iodrift_test.skip import fail, need_tools, skip
from iodrift_test.cgroup import Cgroup
from iodrift_test.slowdown import MemorySqueeze, ReadThrottle, squeeze_writer_dir, tmpfs_loop
from iodrift_test.wait import wait_for

FILE_BYTES = 128 << 20
THROTTLE = 20 << 20
SLOW = 0.67          # a run below this share of the baseline is "slow"
DIRECT_FLOOR = 0.4   # phase 3: direct's median ratio at least this (and twice buffered's)
BUF, DIRECT = "sd-buffered", "sd-direct"

need_root("mkfs.ext4")
need_tools("dbus-daemon", "busctl")

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


def ratios_since(d, name, since, baseline):
    return [h["figure"] / baseline for h in runs_since(d, name, since)]


def main():
    # The device is named from the readers' block I/O wait (delay accounting): on, as the docs tell
    # an operator; without it the honest verdict is undetermined.
    with Scratch("slowdown") as s, Bus() as bus, delayacct.enabled() as no_delayacct, \
            Cgroup("mem", "memory") as memcg:
        if memcg.missing:
            skip(memcg.missing)
        if no_delayacct:
            print(f"delay accounting off ({no_delayacct}): undetermined is accepted for the device")
        # Over a tmpfs file: a disk-backed loop device's direct reads go through the host's cache
        # (direct baselines 380-3156 MB/s between runs here, phase 3 runs at 0.24-2.37 of them).
        dev = tmpfs_loop(s, "fs", 512 << 20, "--direct-io=on")
        mnt = s.mount(dev, "mnt")
        target = os.path.join(mnt, "data")
        with open(target, "wb") as f:
            for _ in range(FILE_BYTES >> 20):
                f.write(os.urandom(1 << 20))
            os.fsync(f.fileno())
        writer_dir = squeeze_writer_dir(s, "writer")
        common = {"target": target, "interval": "2s", "size": "64MiB", "time_budget": "2s",
                  "timeout": "30s"}
        config = write_config(s.path("iodrift.yaml"),
                              [{"name": BUF, "kind": "buffered", **common},
                               {"name": DIRECT, "kind": "direct", **common}],
                              state_dir=s.path("state"), dbus=None,
                              extra="diagnose:\n  enabled: true\n  warm_size: 1GiB\n"
                              # the throttle is I/O pressure; others' builds on a
                              # shared machine cross the memory gate (10 %) now and then
                              "  cooldown: 0s\n  max_io_pressure: 100\n"
                              "  max_memory_pressure: 100\n")
        # The daemon stops before the cgroups go (the ExitStacks unwind after the with-block).
        with Daemon("--config", config, "--dbus", bus.address) as d:
            memcg.add(d.proc.pid)  # its anonymous memory from now on is counted there
            wait_for_service(bus.address, d)
            # 1. baseline.
            probes = wait_for("baselines of both probes",
                              lambda: (lambda p: p if all(p.get(n, {}).get("baseline")
                                                          for n in (BUF, DIRECT)) else None)(api(d)),
                              timeout=240, interval=1)
            baseline, direct_baseline = probes[BUF]["baseline"], probes[DIRECT]["baseline"]
            print(f"phase 1: baselines buffered {baseline / 1e6:.0f} MB/s, direct "
                  f"{direct_baseline / 1e6:.0f} MB/s")

            # 2. device: block cgroup read limit.
            with ReadThrottle(dev, THROTTLE) as throttle:
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

            # 3. memory: the daemon's memory cgroup squeezed; buffered falls, direct stays.
            # A squeeze that has not slowed buffered reads within 3 runs (the writer's dirty pages
            # still building up on a busy machine) gets a second window of 3 runs; the runs of
            # the last window are judged.
            windows = []
            with MemorySqueeze(d.proc.pid, writer_dir, cgroup=memcg):
                for _ in range(2):
                    since = time.time()
                    wait_for("3 buffered runs in the squeezed memory cgroup",
                             lambda: len(runs_since(d, BUF, since)) >= 3, timeout=120, interval=1)
                    buffered = ratios_since(d, BUF, since, baseline)
                    direct = ratios_since(d, DIRECT, since, direct_baseline)
                    windows.append(
                        f"buffered ratios {', '.join(f'{r:.2f}' for r in buffered)}; direct "
                        f"{', '.join(f'{r:.2f}' for r in direct)}")
                    if statistics.median(buffered) < SLOW:
                        break
                check_verdicts(bus, "memory_reclaim", undetermined_ok=True)
            figures = (f"{' / then '.join(windows)} (baselines {baseline / 1e6:.0f} and "
                       f"{direct_baseline / 1e6:.0f} MB/s)")
            print(f"phase 3 squeezed memory cgroup: {figures}")
            if statistics.median(buffered) >= SLOW:
                # The effect itself (a hardware and load matter), not what iodrift did with it.
                skip(f"the squeezed memory cgroup did not slow buffered reads below {SLOW} of "
                     f"their baseline in two windows of 3 runs: {figures}")
            # Direct does not fall with buffered (a device throttle puts it at 0.05-0.08 with
            # buffered). Not "within 10 % of its baseline": short reads scatter, and the daemon
            # shares the squeezed cgroup and the CPUs with the writer.
            direct_floor = max(DIRECT_FLOOR, 2 * statistics.median(buffered))
            if not direct or statistics.median(direct) < direct_floor:
                # Also the effect, not iodrift: short direct reads of a RAM-backed loop device
                # scatter on a busy machine (0.41-1.58 of their baseline in one window here).
                skip(f"direct reads fell with buffered ones with the memory cgroup squeezed "
                     f"(direct's median ratio under {direct_floor:.2f}: {DIRECT_FLOOR} or twice "
                     f"buffered's): {figures}")
    print("ok")


main()
