#!/usr/bin/env python3
"""A hung --proc-root file: /proc/meminfo served by a FUSE file whose read() never returns (like a
stuck lxcfs meminfo). The tree is a copy of tests/fixtures/proc/local-6.18 with faultfs's
hang.dat bind-mounted over its meminfo.

While the read stays hung:
  * every /metrics scrape answers 200; the first one within the collector deadline (4 s) plus
    slack, with iodrift_collector_success{collector="meminfo"} 0 and the other collectors 1 with
    their fixture values;
  * later scrapes report meminfo failed at once, and no second read is started on the stuck file
    (faultfs: exactly one read ever blocked) — threads do not pile up;
  * /-/healthy answers while scrapes are in flight, also with several scrapes at once;
  * SIGTERM stops the daemon within 5 s ("stopped" logged, listener closed, main thread gone;
    the kernel reaps the process once the FUSE connection is aborted, with status 0).
Before the fix, the first scrape never answered, and after two nothing did.

Needs root, /dev/fuse, mount and faultfs (tests/fuse); otherwise exits 77 (skipped).
"""
import concurrent.futures
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from iodrift_test import fuse, prom
from iodrift_test.daemon import Daemon
from iodrift_test.skip import fail, skip_guaranteed
from iodrift_test.wait import wait_for

HERE = os.path.dirname(os.path.abspath(__file__))

fuse.need_faultfs()
if shutil.which("mount") is None or shutil.which("umount") is None:
    skip_guaranteed("mount/umount not installed")

source = os.environ["IODRIFT_SOURCE_DIR"]
fixture = os.path.join(source, "tests/fixtures/proc/local-6.18")
config = os.path.join(source, "tests/e2e/no-probes.yaml")
COLLECTOR_TIMEOUT_S = 4.0   # daemon/collector_runner.h kDefaultCollectorTimeout
FIRST_LIMIT_S = COLLECTOR_TIMEOUT_S + 6.0
LATER_LIMIT_S = COLLECTOR_TIMEOUT_S - 1.0  # "at once": never waits the deadline again
STOP_LIMIT_S = 5.0


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def timed_get(d, path, timeout=20):
    start = time.monotonic()
    status, _, body = d.get(path, timeout=timeout)
    return status, body, time.monotonic() - start


def check_scrape(status, body):
    if status != 200:
        fail(f"/metrics answered {status}")
    samples = prom.parse(body)
    got = {c: prom.value(samples, "iodrift_collector_success", collector=c)
           for c in ("meminfo", "vmstat", "buddyinfo", "boot")}
    want = {"meminfo": 0, "vmstat": 1, "buddyinfo": 1, "boot": 1}
    if got != want:
        fail(f"iodrift_collector_success {got} while meminfo hangs, want {want}")
    if prom.value(samples, "iodrift_meminfo_MemTotal_bytes") is not None:
        fail("iodrift_meminfo_MemTotal_bytes exported although meminfo hangs")
    if not any(n.startswith("iodrift_vmstat_") for n, _, _ in samples):
        fail("vmstat series missing while only meminfo hangs")


def hung_phase(fs, d):
    pid = d.proc.pid
    # The first scrape starts the read that hangs; /-/healthy answers while it waits.
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        first = pool.submit(timed_get, d, "/metrics")
        wait_for("the meminfo read to block in faultfs", lambda: fs.stats()["hung"] == 1,
                 timeout=20, interval=0.05)
        status, _, took = timed_get(d, "/-/healthy", timeout=10)
        if status != 200:
            fail(f"/-/healthy answered {status} while a scrape waits on meminfo")
        print(f"/-/healthy during the first scrape: {took * 1000:.0f} ms")
        status, body, took = first.result()
        print(f"first scrape (meminfo hung): {took:.2f} s")
        if took > FIRST_LIMIT_S:
            fail(f"first scrape took {took:.2f} s, limit {FIRST_LIMIT_S} s")
        check_scrape(status, body)
        threads_after_first = fuse.threads(pid)

        # Several scrapes at once, more than the HTTP threads, plus /-/healthy.
        for _ in range(3):
            scrapes = [pool.submit(timed_get, d, "/metrics") for _ in range(5)]
            status, _, took = timed_get(d, "/-/healthy", timeout=10)
            if status != 200:
                fail(f"/-/healthy answered {status} while meminfo hangs")
            worst = 0.0
            for f in scrapes:
                status, body, took = f.result()
                check_scrape(status, body)
                worst = max(worst, took)
            print(f"5 concurrent scrapes while hung: slowest {worst:.2f} s")
            if worst > LATER_LIMIT_S:
                fail(f"a scrape took {worst:.2f} s while meminfo is known stuck: it "
                     f"waited for the deadline instead of failing at once")
    stats = fs.stats()
    if stats["hung_total"] != 1 or stats["hung"] != 1:
        fail(f"another read was started on the stuck meminfo: faultfs {stats}")
    threads = fuse.threads(pid)
    if threads is not None and threads_after_first is not None and threads > threads_after_first:
        fail(f"thread count grew from {threads_after_first} to {threads} while hung")
    lines = [line for line in d.stderr().splitlines() if "collector=meminfo failing" in line]
    if len(lines) != 1:
        fail(f"{len(lines)} 'collector=meminfo failing' log lines, want 1")
    print(lines[0])

    start = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    stopped_at = None
    while time.monotonic() - start < STOP_LIMIT_S + 5:
        gone = d.proc.poll() is not None or fuse.leader_state(pid) in (None, "Z", "X")
        if gone and "stopped" in d.stderr() and not port_open(d.port):
            stopped_at = time.monotonic() - start
            break
        time.sleep(0.05)
    print(f"SIGTERM → stopped in {stopped_at} s with the meminfo read hung")
    if stopped_at is None or stopped_at > STOP_LIMIT_S:
        fail(f"iodriftd did not stop within {STOP_LIMIT_S} s of SIGTERM while meminfo "
             f"hung (leader {fuse.leader_state(pid)}); log: {d.stderr()[-1500:]}")
    fs.abort()
    try:
        rc = d.proc.wait(10)
    except subprocess.TimeoutExpired:
        fail("iodriftd was not reaped within 10 s of aborting the FUSE connection")
    if rc != 0:
        fail(f"iodriftd exited {rc} after SIGTERM, want 0; log: {d.stderr()[-1500:]}")


work = tempfile.mkdtemp(prefix="iodrift-hung-proc-", dir="/var/tmp")
root = os.path.join(work, "proc")
meminfo = os.path.join(root, "meminfo")
try:
    shutil.copytree(fixture, root)
    with fuse.mounted(size="64K") as fs, fuse.bound_over(fs, "hang.dat", meminfo):
        with Daemon("--config", config, "--proc-root", root) as d:
            try:
                hung_phase(fs, d)
            finally:
                fs.abort()  # free the hung read before anything waits for the daemon
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
