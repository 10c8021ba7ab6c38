#!/usr/bin/env python3
"""Reloads with a hung collector file: a read left blocked stays known across reloads.

The --proc-root tree is a copy of tests/fixtures/proc/local-6.18 with faultfs's hang.dat
bind-mounted over its buddyinfo (a FUSE file whose read never returns). The first scrape waits the
collector deadline and leaves that read blocked. Then RELOADS (200) times: SIGHUP, wait until the
daemon logs the reload applied, scrape. The config alternates every two reloads between all
collectors and `pressure: false`, so half the reloads keep the collector set and the others
rebuild it (a new collector runner).

Every post-reload scrape must answer 200 with iodrift_collector_success{buddyinfo} 0 and
iodrift_collector_stuck{buddyinfo} 1 and its iodrift_collector_duration_seconds far below the
deadline (it did not wait for the hung file again; the daemon's own metric, not wall-clock
time), the other collectors read. faultfs must have seen exactly one read blocked in all (none
started again on the stuck file), and the daemon's thread and fd counts after the last reload
must equal those after the first reload+scrape (both taken with no HTTP connection open). When
the FUSE connection is aborted the blocked read returns and its thread goes away.
Before the fix every reload started another read of the hung file on a new thread, and every
post-reload scrape waited the full deadline again (50 reloads: 7 → 57 threads, 11 → 20 fds).

Needs root, /dev/fuse, mount and faultfs (tests/fuse); otherwise exits 77 (skipped).
"""
import os
import shutil
import signal
import tempfile

from iodrift_test import fuse, prom
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.skip import fail, skip_guaranteed
from iodrift_test.wait import wait_for

fuse.need_faultfs()
if shutil.which("mount") is None or shutil.which("umount") is None:
    skip_guaranteed("mount/umount not installed")

RELOADS = int(os.environ.get("RELOADS", "200"))
COLLECTOR_TIMEOUT_S = 4.0  # daemon/collector_runner.h kDefaultCollectorTimeout
HUNG = "buddyinfo"
source = os.environ["IODRIFT_SOURCE_DIR"]
fixture = os.path.join(source, "tests/fixtures/proc/local-6.18")


def write_config(path, pressure):
    with open(path, "w") as f:
        f.write("collectors:\n  meminfo: true\n  vmstat: true\n  slabinfo: true\n"
                f"  pressure: {'true' if pressure else 'false'}\n  buddyinfo: true\n"
                "probes: []\n")


def tcp_states(pid):
    """inode -> state (hex, 0A = listening) of the TCP sockets in the daemon's namespace."""
    states = {}
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f)
                for line in f:
                    fields = line.split()
                    states[fields[9]] = fields[3]
        except OSError:
            pass
    return states


def settled_counts(pid):
    """(threads, fds) of the daemon once none of its fds is a TCP connection (only listeners):
    a scrape's connection, closed by the client, may take a moment to be closed by the server."""
    def counts():
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            return None
        states = tcp_states(pid)
        for link in links:
            if link.startswith("socket:[") and states.get(link[8:-1], "0A") != "0A":
                return None
        return fuse.threads(pid), len(links)
    last = []

    def steady():
        # The same counts twice, 0.1 s apart: an fd opened and closed in passing (a kept file
        # reopened by a worker finishing its round) is not what reloads leave behind.
        now = counts()
        last.append(now)
        return now if now is not None and len(last) >= 2 and last[-2] == now else None
    return wait_for("the daemon's HTTP connections to close and its counts to settle", steady,
                    timeout=20, interval=0.1)


def check_scrape(samples, what):
    got = {c: prom.value(samples, "iodrift_collector_success", collector=c)
           for c in ("meminfo", "vmstat", HUNG)}
    if got != {"meminfo": 1, "vmstat": 1, HUNG: 0}:
        fail(f"{what}: iodrift_collector_success {got} while {HUNG} hangs")
    took = prom.value(samples, "iodrift_collector_duration_seconds", collector=HUNG)
    if took is None or took >= COLLECTOR_TIMEOUT_S / 2:
        fail(f"{what}: iodrift_collector_duration_seconds{{collector=\"{HUNG}\"}} is {took}: "
             f"the scrape waited for the hung file again instead of failing it at once")
    stuck = prom.value(samples, "iodrift_collector_stuck", collector=HUNG)
    if stuck != 1:
        fail(f"{what}: iodrift_collector_stuck{{collector=\"{HUNG}\"}} is {stuck}, want 1")


def run(fs, d, config):
    pid = d.proc.pid
    samples, took = scrape(d, timeout=COLLECTOR_TIMEOUT_S + 16)
    print(f"first scrape ({HUNG} hung): {took:.2f} s")
    if prom.value(samples, "iodrift_collector_success", collector=HUNG) != 0:
        fail(f"first scrape: {HUNG} did not fail while its file hangs")
    if fs.stats()["hung"] != 1:
        fail(f"first scrape: faultfs {fs.stats()}, want one hung read")
    initial = settled_counts(pid)
    first = {}  # pressure on/off -> (threads, fds) after the first reload with that collector set
    applied = 0
    pressure = True
    for i in range(1, RELOADS + 1):
        pressure = ((i - 1) // 2) % 2 == 0
        write_config(config, pressure=pressure)
        d.proc.send_signal(signal.SIGHUP)
        wait_for(f"reload {i} to be applied",
                 lambda: d.stderr().count("reload: applied") >= i, timeout=30, interval=0.02)
        applied = i
        samples, _ = scrape(d, timeout=COLLECTOR_TIMEOUT_S + 16)
        check_scrape(samples, f"scrape after reload {i}")
        if pressure not in first:
            first[pressure] = settled_counts(pid)
    # Compared with the first reload that had the same collector set (pressure on and off keep
    # different files open), so that only what reloads leave behind can differ.
    baseline = first[pressure]
    final = settled_counts(pid)
    stats = fs.stats()
    print(f"threads/fds: start {initial}, after the first reloads {first}, after reload "
          f"{applied} {final}; faultfs {stats}")
    if stats["hung_total"] != 1:
        fail(f"another read was started on the stuck {HUNG}: faultfs {stats}")
    if final != baseline:
        fail(f"threads/fds {final} after {applied} reloads, {baseline} after the first reload "
             f"with the same collectors (pressure {'on' if pressure else 'off'})")
    logged = d.stderr().count(f"collector={HUNG} failing")
    if logged != 1:
        fail(f"'collector={HUNG} failing' logged {logged} times over {applied} reloads, want once")

    # The blocked read returns (ENOTCONN): its thread is reclaimed.
    fs.abort()
    wait_for("the thread of the blocked read to exit",
             lambda: (fuse.threads(pid) or 0) < baseline[0], timeout=20, interval=0.05)
    samples, _ = scrape(d)
    if prom.value(samples, "iodrift_collector_stuck", collector=HUNG) != 0:
        fail(f"{HUNG} still reported stuck after its read returned")
    after = settled_counts(pid)
    print(f"after the FUSE abort: threads/fds {after}")
    if after[0] != baseline[0] - 1:
        fail(f"{after[0]} threads after the blocked read returned, want {baseline[0] - 1}")
    if d.stop() != 0:
        fail("iodriftd did not exit 0 on SIGTERM")


work = tempfile.mkdtemp(prefix="iodrift-reload-hung-", dir="/var/tmp")
root = os.path.join(work, "proc")
target = os.path.join(root, HUNG)
config = os.path.join(work, "iodrift.yaml")
try:
    shutil.copytree(fixture, root)
    write_config(config, pressure=True)
    with fuse.mounted(size="64K") as fs, fuse.bound_over(fs, "hang.dat", target):
        with Daemon("--config", config, "--proc-root", root) as d:
            try:
                run(fs, d, config)
            finally:
                fs.abort()  # free the hung read before anything waits for the daemon
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
