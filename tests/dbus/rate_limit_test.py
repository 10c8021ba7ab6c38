#!/usr/bin/env python3
"""Rate limits hold under a loop of 1,000 RunProbe calls from one caller while /metrics answers.

One connection (one sender) pipelines 1,000 calls (in batches of 50): only the per-caller burst plus its refill may
run, every other call gets org.iodrift.Error.RateLimited, nothing else fails, and the daemon's
/metrics keeps answering during the flood.
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
work = tempfile.mkdtemp(prefix="iodrift-ratelimit-", dir="/var/tmp")
config = os.path.join(work, "iodrift.yaml")
dbus.write_two_probe_config(config, work)
try:
    with dbus.Bus() as bus, Daemon("--config", config, "--dbus", bus.address) as d:
        dbus.wait_for_service(bus.address, d)
        scrapes = []
        done = threading.Event()

        def scrape():
            while not done.is_set():
                status, _, body = d.get(timeout=5)
                scrapes.append(status == 200 and "iodrift_meminfo_MemTotal_bytes" in body)
                time.sleep(0.05)

        scraper = threading.Thread(target=scrape)
        scraper.start()
        conn = dbus_wire.Connection(bus.address)
        start = time.monotonic()
        replies = {}
        # Batches of 50: dbus-daemon caps the replies pending per connection.
        for _ in range(20):
            serials = [conn.send(NAME, PATH, IFACE, "RunProbe", "rnd") for _ in range(50)]
            replies.update(conn.replies(serials))
        elapsed = time.monotonic() - start
        done.set()
        scraper.join()
        conn.close()
        ok = sum(1 for r in replies.values() if r[0] == "return")
        limited = sum(1 for r in replies.values() if r == ("error", "org.iodrift.Error.RateLimited"))
        other = [r for r in replies.values() if r[0] == "error" and r[1] != "org.iodrift.Error.RateLimited"]
        if other:
            fail(f"unexpected errors: {other[:5]}")
        # Per caller: a burst of 3, then one every 2 s.
        allowed = 3 + int(elapsed / 2) + 1
        if ok < 1 or ok > allowed or ok + limited != 1000:
            fail(f"{ok} ran and {limited} were limited in {elapsed:.1f} s; "
                 f"at most {allowed} may run")
        if not scrapes or not all(scrapes):
            fail(f"/metrics failed during the flood ({scrapes.count(False)} of {len(scrapes)})")
        if d.stop() != 0:
            fail("iodriftd did not exit 0 on SIGTERM")
        print(f"{ok} ran, {limited} rate limited in {elapsed:.2f} s; {len(scrapes)} scrapes ok")
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
