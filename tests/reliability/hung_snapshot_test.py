#!/usr/bin/env python3
"""D-Bus Snapshot while the --proc-root meminfo hangs (faultfs hang.dat bind-mounted over the
meminfo of a copy of tests/fixtures/proc/local-6.18, like a stuck lxcfs /proc/meminfo), on a
private dbus-daemon.

  * The first Snapshot starts the read that hangs and is answered org.iodrift.Error.Failed naming
    meminfo within the collectors' deadline (4 s) plus slack — not never.
  * While it waits, ListProbes from another connection answers (the bus thread is free).
  * A second Snapshot answers Failed at once ("still blocked") and starts no second read on the
    stuck file (faultfs: one read ever blocked).
Before the fix the Snapshot never answered and every later call on the bus (ListProbes too) got
no answer.

Needs root, /dev/fuse, mount, faultfs, dbus-daemon and busctl; otherwise exits 77 (skipped).
"""
import concurrent.futures
import os
import shutil
import tempfile
import time

from iodrift_test import fuse
from iodrift_test.daemon import Daemon
from iodrift_test.dbus import IFACE, NAME, PATH, Bus, busctl, wait_for_service
from iodrift_test.skip import fail, need_tools
from iodrift_test.wait import wait_for

fuse.need_faultfs()
need_tools("dbus-daemon", "busctl", "mount", "umount")

source = os.environ["IODRIFT_SOURCE_DIR"]
fixture = os.path.join(source, "tests/fixtures/proc/local-6.18")
config = os.path.join(source, "tests/e2e/no-probes.yaml")
DEADLINE_S = 4.0  # daemon/collector_runner.h kDefaultCollectorTimeout
FIRST_LIMIT_S = DEADLINE_S + 6.0
AT_ONCE_S = DEADLINE_S - 1.0


def call(address, method, timeout=30):
    start = time.monotonic()
    res = busctl(address, f"--timeout={timeout}", "call", NAME, PATH, IFACE, method,
                 timeout=timeout + 10)
    return res, time.monotonic() - start


def snapshot_failed(res, what):
    text = res.stdout + res.stderr
    if res.returncode == 0:
        fail(f"{what}: Snapshot answered data although meminfo hangs: {text[:300]}")
    if "meminfo" not in text:
        fail(f"{what}: Snapshot's error does not name meminfo: {text[:300]}")


def hung_phase(fs, bus, d):
    wait_for_service(bus.address, d)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(call, bus.address, "Snapshot")
        wait_for("the meminfo read to block in faultfs", lambda: fs.stats()["hung"] == 1,
                 timeout=20, interval=0.05)
        res, took = call(bus.address, "ListProbes", timeout=10)
        if res.returncode != 0:
            fail(f"ListProbes got no answer while a Snapshot waits on meminfo: {res.stderr}")
        print(f"ListProbes while Snapshot waits: {took * 1000:.0f} ms")
        if first.done():
            fail("the Snapshot was answered before ListProbes was asked: the test proves nothing")
        res, took = first.result()
        print(f"first Snapshot (meminfo hung): {took:.2f} s: {(res.stdout + res.stderr).strip()}")
        if took > FIRST_LIMIT_S:
            fail(f"first Snapshot took {took:.2f} s, limit {FIRST_LIMIT_S} s")
        snapshot_failed(res, "first")
    res, took = call(bus.address, "Snapshot")
    print(f"second Snapshot: {took:.2f} s: {(res.stdout + res.stderr).strip()}")
    snapshot_failed(res, "second")
    if took > AT_ONCE_S:
        fail(f"second Snapshot took {took:.2f} s: it waited for the deadline again")
    stats = fs.stats()
    if stats["hung_total"] != 1:
        fail(f"another read was started on the stuck meminfo: faultfs {stats}")


work = tempfile.mkdtemp(prefix="iodrift-hung-snapshot-", dir="/var/tmp")
root = os.path.join(work, "proc")
try:
    shutil.copytree(fixture, root)
    with fuse.mounted(size="64K") as fs, fuse.bound_over(fs, "hang.dat",
                                                        os.path.join(root, "meminfo")):
        with Bus() as bus, Daemon("--config", config, "--proc-root", root,
                                  "--dbus", bus.address) as d:
            try:
                hung_phase(fs, bus, d)
            finally:
                fs.abort()  # free the hung read before anything waits for the daemon
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
