#!/usr/bin/env python3
"""Hung I/O: probes on a FUSE file whose read() never returns (faultfs hang.dat).

Part 1, while the read stays hung:
  * /metrics keeps answering: every scrape returns within SCRAPE_LIMIT_S, above the 4 s collector
    deadline (a scrape that waited on the hung probe would never return; a loaded machine may
    make an ordinary scrape slow, which is not what this checks);
  * the first run on the hung target is recorded as result="timeout", and every later run due
    on that device as "skipped": exactly one read is ever blocked in faultfs (no probe piles onto
    the stuck target) and the daemon's thread count stays flat;
  * a probe on a healthy local directory keeps succeeding;
  * SIGTERM stops the daemon within 5 s. (The kernel cannot reap a process one of whose threads
    waits in a FUSE request, so "stopped" means: the daemon logged `stopped`, its listener is
    closed and its main thread has exited; after the FUSE connection is aborted the process is
    reaped with exit status 0.)
Part 2: when the hung read finally returns (faultfs releases it), the lane is used again and
the next run on that target succeeds.

Needs root, /dev/fuse and faultfs (tests/fuse); otherwise exits 77 (skipped).
"""
import os
import shutil
import signal
import socket
import tempfile
import time

from iodrift_test import fuse, prom
from iodrift_test.config import write_temp_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.skip import fail
from iodrift_test.wait import wait_for


fuse.need_faultfs()

INTERVAL_S = 3          # probe interval
TIMEOUT_S = 2           # probe timeout on the hung target
WATCH_S = 4 * INTERVAL_S  # how long part 1 watches after the first timeout
SCRAPE_LIMIT_S = 6.0    # a scrape slower than this fails the test (see the top)
STOP_LIMIT_S = 5.0      # SIGTERM → stopped


def config_for(fs, healthy_dir):
    return write_temp_config([
        {"name": "hung-buffered", "kind": "buffered", "target": fs.path("hang.dat"),
         "interval": f"{INTERVAL_S}s", "timeout": f"{TIMEOUT_S}s", "time_budget": "250ms",
         "size": "4MiB"},
        {"name": "hung-cached", "kind": "cached", "target": fs.path("hang.dat"),
         "interval": f"{INTERVAL_S}s", "timeout": f"{TIMEOUT_S}s", "time_budget": "250ms",
         "size": "2MiB"},
        {"name": "healthy-direct", "kind": "direct", "target": healthy_dir,
         "interval": f"{INTERVAL_S}s", "timeout": "20s", "time_budget": "250ms", "size": "4MiB"},
    ])


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def part1_hung(healthy_dir):
    with fuse.mounted(size="16M") as fs:
        config = config_for(fs, healthy_dir)
        try:
            with Daemon("--config", config) as d:
                try:
                    hung_phase(fs, d)
                finally:
                    # Free the hung read before anything waits for the daemon to be reaped.
                    fs.abort()
        finally:
            os.unlink(config)


def hung_phase(fs, d):
    pid = d.proc.pid
    worst_scrape = 0.0
    scrapes = 0

    def sample():
        nonlocal worst_scrape, scrapes
        samples, elapsed = scrape(d, timeout=10)
        scrapes += 1
        worst_scrape = max(worst_scrape, elapsed)
        if elapsed > SCRAPE_LIMIT_S:
            fail(f"/metrics took {elapsed:.2f} s while a probe is hung "
                 f"(limit {SCRAPE_LIMIT_S} s)")
        return samples

    def hung_runs(samples, result):
        return (prom.runs(samples, "hung-buffered", result)
                + prom.runs(samples, "hung-cached", result))

    # The first run on hang.dat blocks in faultfs and is recorded as a timeout.
    t0 = time.monotonic()
    samples = wait_for("a timeout result on the hung target",
                       lambda: (lambda s: s if hung_runs(s, "timeout") >= 1 else None)(sample()),
                       timeout=2 + 1 + TIMEOUT_S + 8, interval=0.25)
    print(f"first timeout recorded {time.monotonic() - t0:.1f} s after start")
    stats = fs.stats()
    if stats["hung"] != 1:
        fail(f"faultfs has {stats['hung']} blocked reads at the first timeout, want 1")
    threads_at_timeout = fuse.threads(pid)
    ok_at_timeout = prom.runs(samples, "healthy-direct", "ok")

    # Watch several intervals while the read stays hung.
    max_threads = threads_at_timeout
    deadline = time.monotonic() + WATCH_S
    while time.monotonic() < deadline:
        samples = sample()
        max_threads = max(max_threads, fuse.threads(pid) or 0)
        stats = fs.stats()
        if stats["hung_total"] != 1 or stats["hung"] != 1:
            fail(f"another read was started on the stuck target: faultfs {stats}")
        if d.proc.poll() is not None:
            fail(f"iodriftd exited ({d.proc.returncode}) while a probe was hung: "
                 f"{d.stderr()[-2000:]}")
        time.sleep(0.25)

    timeouts = hung_runs(samples, "timeout")
    skipped = hung_runs(samples, "skipped")
    ok_hung = hung_runs(samples, "ok") + hung_runs(samples, "error")
    healthy_ok = prom.runs(samples, "healthy-direct", "ok")
    healthy_bad = sum(prom.runs(samples, "healthy-direct", r)
                      for r in ("error", "timeout", "skipped"))
    print(f"hung target: timeout={timeouts:g} skipped={skipped:g}; healthy ok={healthy_ok:g} "
          f"(+{healthy_ok - ok_at_timeout:g} while hung); threads {threads_at_timeout} → max "
          f"{max_threads}; {scrapes} scrapes, slowest {worst_scrape * 1000:.0f} ms")
    if timeouts != 1:
        fail(f"want exactly one timeout on the stuck device, got {timeouts:g}")
    if skipped < 2:
        fail(f"want >= 2 skipped runs on the stuck device after {WATCH_S} s, "
             f"got {skipped:g}")
    if ok_hung:
        fail(f"a run on the stuck target completed ({ok_hung:g} ok/error) while hung")
    if max_threads > threads_at_timeout + 1:
        fail(f"thread count grew from {threads_at_timeout} to {max_threads} while hung")
    if healthy_bad or healthy_ok - ok_at_timeout < 2:
        fail(f"healthy probe: ok {healthy_ok:g} (+{healthy_ok - ok_at_timeout:g} while "
             f"hung), bad {healthy_bad:g}; log: {d.stderr()[-2000:]}")
    if prom.value(samples, "iodrift_probe_success", probe="healthy-direct") != 1:
        fail("iodrift_probe_success{probe=healthy-direct} is not 1")
    if prom.value(samples, "iodrift_probe_success", probe="hung-buffered") != 0:
        fail("iodrift_probe_success{probe=hung-buffered} is not 0")
    if "timeout" not in d.stderr():
        fail("the log does not mention the timeout")

    # SIGTERM with the read still hung.
    if fs.stats()["hung"] != 1:
        fail("the read is no longer hung before SIGTERM")
    start = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    stopped_at = None
    while time.monotonic() - start < STOP_LIMIT_S + 5:
        gone = d.proc.poll() is not None or fuse.leader_state(pid) in (None, "Z", "X")
        if gone and "stopped" in d.stderr() and not port_open(d.port):
            stopped_at = time.monotonic() - start
            break
        time.sleep(0.05)
    lingering = fuse.threads(pid)
    print(f"SIGTERM → stopped in {stopped_at if stopped_at is None else round(stopped_at, 2)} s "
          f"with the read hung (threads left: {lingering}, leader "
          f"{fuse.leader_state(pid)}, faultfs hung={fs.stats()['hung']})")
    if stopped_at is None or stopped_at > STOP_LIMIT_S:
        fail(f"iodriftd did not stop within {STOP_LIMIT_S} s of SIGTERM while a read was "
             f"hung (leader state {fuse.leader_state(pid)}); log: {d.stderr()[-1500:]}")

    # Free the read: the process can now be reaped, with status 0.
    fs.abort()
    try:
        rc = d.proc.wait(10)
    except Exception:
        fail("iodriftd was not reaped within 10 s of aborting the FUSE connection")
    if rc != 0:
        fail(f"iodriftd exited {rc} after SIGTERM, want 0; log: {d.stderr()[-1500:]}")


def part2_recovers(healthy_dir):
    """A hung read that returns frees the lane: the next run on that target succeeds."""
    with fuse.mounted(size="16M") as fs:
        config = config_for(fs, healthy_dir)
        try:
            with Daemon("--config", config) as d:
                try:
                    wait_for("a timeout result on the hung target",
                             lambda: prom.runs(scrape(d)[0], "hung-buffered", "timeout") >= 1,
                             timeout=2 + 1 + TIMEOUT_S + 8)
                    released = time.monotonic()
                    fs.release()
                    samples = wait_for(
                        "an ok run on the target after its hung read returned",
                        lambda: (lambda s: s if prom.runs(s, "hung-buffered", "ok") >= 1 else None)(
                            scrape(d)[0]),
                        timeout=3 * INTERVAL_S + 5)
                    print(f"lane recovered: ok {time.monotonic() - released:.1f} s after release")
                    if prom.value(samples, "iodrift_probe_success", probe="hung-buffered") != 1:
                        fail("iodrift_probe_success{probe=hung-buffered} not 1 "
                             "after recovery")
                    if fs.stats()["hung"] != 0:
                        fail(f"faultfs still has blocked reads: {fs.stats()}")
                finally:
                    fs.abort()
                if d.stop() != 0:
                    fail("iodriftd did not exit 0 on SIGTERM")
        finally:
            os.unlink(config)


# The healthy target: a directory on the local disk (not tmpfs: the direct kind needs O_DIRECT).
healthy = tempfile.mkdtemp(prefix="iodrift-healthy-", dir="/var/tmp")
try:
    part1_hung(healthy)
    part2_recovers(healthy)
finally:
    shutil.rmtree(healthy, ignore_errors=True)
print("ok")
