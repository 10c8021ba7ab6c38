#!/usr/bin/env python3
"""RunProbe floods from many clients: the limits hold, memory stays flat, /metrics answers.

rate_limit_test.py covers one sender pipelining 1,000 calls (per-caller bucket). This test
covers many senders at once, where the global bucket and the Busy queue are what protect the
daemon, and repeats the flood to see whether memory grows with the number of calls:

  * Flood: 8 parallel connections (8 senders) pipeline 125 RunProbe("rnd") each = 1,000 calls,
    6 rounds (IODRIFT_FLOOD_ROUNDS). Every reply is a result, org.iodrift.Error.RateLimited or org.iodrift.Error.Busy
    — nothing else, no call unanswered (with the default limits the global bucket, 10, refuses
    long before 64 calls can wait, so Busy is accepted but not expected); the runs admitted stay within the global bucket
    (10 + 2/s × elapsed) and each sender within its own (3 + 0.5/s × elapsed); most calls are
    refused.
  * Many callers: 1,000 short-lived connections (1,000 distinct senders, more than the 1,024
    the limiter tracks once the earlier rounds' are counted) make one call each.
  * Throughout, a scraper GETs /metrics every 50 ms: every scrape answers 200 with metrics.
  * VmRSS is read after each round; from the end of round 2 (allocator and caches warm) to the
    end, it may grow by at most 8 MiB (not checked under AddressSanitizer, whose quarantine
    keeps freed memory resident; LeakSanitizer checks leaks at exit there). The daemon is
    alive and exits 0 on SIGTERM.

Measured RSS figures are printed (docs/testing.md "Reliability" quotes them).
"""
import os
import shutil
import tempfile
import threading
import time

from iodrift_test import dbus, dbus_wire
from iodrift_test.daemon import Daemon
from iodrift_test.dbus import IFACE, NAME, PATH
from iodrift_test.skip import fail, need_tools


need_tools("dbus-daemon", "busctl")
# 6 by default; the sanitizer stages of .ci/run take 2 (IODRIFT_FLOOD_ROUNDS): they look for memory
# and thread errors, which the first rounds already walk. The RSS bound needs at least 2.
ROUNDS = max(2, int(os.environ.get("IODRIFT_FLOOD_ROUNDS", "6")))
CLIENTS = 8
PER_CLIENT = 125
BATCH = 25  # dbus-daemon caps the replies pending per connection
CALLERS = 1000
RSS_SLACK_KIB = 8 * 1024
REFUSED = ("org.iodrift.Error.RateLimited", "org.iodrift.Error.Busy")


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def asan(pid):
    """True when the daemon runs with AddressSanitizer (libasan mapped)."""
    with open(f"/proc/{pid}/maps") as f:
        return "libasan" in f.read()


work = tempfile.mkdtemp(prefix="iodrift-flood-", dir="/var/tmp")
config = os.path.join(work, "iodrift.yaml")
dbus.write_two_probe_config(config, work)
try:
    with dbus.Bus() as bus, Daemon("--config", config, "--dbus", bus.address) as d:
        dbus.wait_for_service(bus.address, d)
        scrapes = []
        done = threading.Event()

        def scrape():
            while not done.is_set():
                try:
                    status, _, body = d.get(timeout=10)
                    scrapes.append(status == 200 and "iodrift_meminfo_MemTotal_bytes" in body)
                except OSError as e:
                    scrapes.append(False)
                    print(f"scrape failed: {e}")
                time.sleep(0.05)

        scraper = threading.Thread(target=scrape)
        scraper.start()
        rss = [("start", vm_rss_kib(d.proc.pid))]
        totals = {"return": 0, "org.iodrift.Error.RateLimited": 0, "org.iodrift.Error.Busy": 0}
        try:
            for rnd in range(1, ROUNDS + 1):
                results = [None] * CLIENTS
                errors = []

                def client(i):
                    try:
                        conn = dbus_wire.Connection(bus.address)
                        replies = {}
                        for _ in range(PER_CLIENT // BATCH):
                            serials = [conn.send(NAME, PATH, IFACE, "RunProbe", "rnd")
                                       for _ in range(BATCH)]
                            replies.update(conn.replies(serials))
                        conn.close()
                        results[i] = list(replies.values())
                    except Exception as e:  # noqa: BLE001 — reported below
                        errors.append(repr(e))

                start = time.monotonic()
                threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                elapsed = time.monotonic() - start
                if errors:
                    fail(f"round {rnd}: client errors: {errors[:3]}")
                ok = 0
                for i, replies in enumerate(results):
                    if len(replies) != PER_CLIENT:
                        fail(f"round {rnd}: client {i} got {len(replies)} replies")
                    mine = sum(1 for r in replies if r[0] == "return")
                    other = [r for r in replies if r[0] == "error" and r[1] not in REFUSED]
                    if other:
                        fail(f"round {rnd}: unexpected errors {other[:5]}")
                    if mine > 3 + int(elapsed / 2) + 1:
                        fail(f"round {rnd}: client {i} ran {mine} in {elapsed:.1f} s")
                    ok += mine
                    for r in replies:
                        totals["return" if r[0] == "return" else r[1]] += 1
                if ok > 10 + int(2 * elapsed) + 1:
                    fail(f"round {rnd}: {ok} runs admitted in {elapsed:.1f} s; the global "
                         f"bucket allows {10 + int(2 * elapsed) + 1}")
                if d.proc.poll() is not None:
                    fail(f"iodriftd died in round {rnd}: {d.stderr()[-3000:]}")
                rss.append((f"flood {rnd}", vm_rss_kib(d.proc.pid)))
                print(f"round {rnd}: {CLIENTS * PER_CLIENT} calls from {CLIENTS} clients in "
                      f"{elapsed:.2f} s: {ok} ran; VmRSS {rss[-1][1]} KiB")
                time.sleep(5.5)  # let the global bucket refill

            # Many distinct senders, one call each.
            start = time.monotonic()
            caller_results = []

            def callers(n):
                for _ in range(n):
                    conn = dbus_wire.Connection(bus.address)
                    caller_results.append(conn.wait(conn.send(NAME, PATH, IFACE,
                                                              "RunProbe", "rnd")))
                    conn.close()

            threads = [threading.Thread(target=callers, args=(CALLERS // 4,)) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.monotonic() - start
            other = [r for r in caller_results if r[0] == "error" and r[1] not in REFUSED]
            ok = sum(1 for r in caller_results if r[0] == "return")
            if len(caller_results) != CALLERS or other:
                fail(f"many callers: {len(caller_results)} replies, unexpected {other[:5]}")
            if ok > 10 + int(2 * elapsed) + 1:
                fail(f"many callers: {ok} runs admitted in {elapsed:.1f} s")
            for r in caller_results:
                totals["return" if r[0] == "return" else r[1]] += 1
            rss.append(("callers", vm_rss_kib(d.proc.pid)))
            print(f"{CALLERS} callers, one call each, in {elapsed:.2f} s: {ok} ran; "
                  f"VmRSS {rss[-1][1]} KiB")
        finally:
            done.set()
            scraper.join()

        if not scrapes or not all(scrapes):
            fail(f"/metrics failed during the floods ({scrapes.count(False)} of {len(scrapes)})")
        warm = rss[2][1]
        peak = max(v for _, v in rss[2:])
        print("VmRSS KiB: " + ", ".join(f"{k} {v}" for k, v in rss))
        print(f"totals over {sum(totals.values())} calls: {totals}; {len(scrapes)} scrapes all 200")
        if totals["return"] >= sum(totals.values()) // 10:
            fail(f"limits barely refused anything: {totals}")
        if asan(d.proc.pid):
            print("AddressSanitizer build: its quarantine (256 MiB) holds freed memory, so RSS "
                  "is not bounded here; LeakSanitizer checks leaks at exit instead")
        elif peak - warm > RSS_SLACK_KIB:
            fail(f"VmRSS grew by {peak - warm} KiB after warm-up (limit {RSS_SLACK_KIB})")
        if d.stop() != 0:
            fail("iodriftd did not exit 0 on SIGTERM")
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
