#!/usr/bin/env python3
"""Reload stress: a removed probe never comes back.

300 reloads over D-Bus (Reload returns when the new config is applied) alternately add and
remove the probe `gone` while `keep` and `gone` run every 100 ms and a client thread scrapes
/metrics without pause. After every reload that removed `gone`: /metrics, /api/v1/probes, the
status page and ListProbes must not name it; and no continuous scrape that started after that
reload returned and ended before the next reload began may name it either.
Before the fix a run of `gone` in flight at the reload could be recorded after the store forgot
the probe, and the probe reappeared until the next reload.
"""
import json
import os
import shutil
import tempfile
import threading
import time

from iodrift_test import dbus
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon
from iodrift_test.dbus import IFACE, NAME, PATH
from iodrift_test.skip import fail, need_tools

need_tools("dbus-daemon", "busctl")
RELOADS = int(os.environ.get("RELOADS", "300"))

work = tempfile.mkdtemp(prefix="iodrift-reload-", dir="/var/tmp")
data = os.path.join(work, "data")
with open(data, "wb") as f:
    f.write(os.urandom(1 << 20))
config = os.path.join(work, "iodrift.yaml")


def probe(name):
    return {"name": name, "kind": "cached", "target": data, "interval": "100ms",
            "size": "256KiB", "time_budget": "10ms", "timeout": "5s"}


def write(with_gone):
    probes = [probe("keep")] + ([probe("gone")] if with_gone else [])
    write_config(config, probes, f"{work}/state", "status:\n  history_runs: 50\n")


lock = threading.Lock()
phase = 0            # bumped before every reload starts and after it returns
gone_present = True  # whether the config applied in the current (even) phase names `gone`
violations = []
scrapes = [0, 0]     # ok, failed
stop = threading.Event()


def scraper(d):
    while not stop.is_set():
        with lock:
            start_phase, present = phase, gone_present
        try:
            status, _, body = d.get("/metrics", timeout=10)
        except OSError:
            scrapes[1] += 1
            continue
        with lock:
            end_phase = phase
        if status != 200:
            scrapes[1] += 1
            continue
        scrapes[0] += 1
        stable = start_phase == end_phase and start_phase % 2 == 0
        if stable and not present and 'probe="gone"' in body:
            violations.append(f"scrape in phase {start_phase} shows the removed probe")


write(True)
try:
    with dbus.Bus() as bus, Daemon("--config", config, "--dbus", bus.address) as d:
        addr = bus.address
        dbus.wait_for_service(addr, d)
        # Let both probes run before the storm.
        deadline = time.monotonic() + 60
        while 'probe="gone"' not in d.get("/metrics")[2]:
            if time.monotonic() > deadline:
                fail("gone never ran within 60 s")
            time.sleep(0.1)
        thread = threading.Thread(target=scraper, args=(d,), daemon=True)
        thread.start()
        removed_checks = 0
        t0 = time.monotonic()
        for i in range(RELOADS):
            with_gone = i % 2 == 1
            write(with_gone)
            with lock:
                phase += 1
            res = dbus.busctl(addr, "call", NAME, PATH, IFACE, "Reload", timeout=60)
            if res.returncode != 0 or res.stdout.strip() != "as 0":
                fail(f"reload {i}: {res.stdout}{res.stderr}")
            with lock:
                phase += 1
                gone_present = with_gone
            if with_gone:
                continue
            # Right after a removing reload returned: no output names `gone`.
            for path in ("/metrics", "/api/v1/probes?runs=1", "/"):
                status, _, body = d.get(path)
                if status != 200:
                    fail(f"reload {i}: GET {path} answered {status}")
                if (path == "/metrics" and 'probe="gone"' in body) or \
                   (path.startswith("/api") and any(p["name"] == "gone" for p in json.loads(body)["probes"])) or \
                   (path == "/" and 'data-probe="gone"' in body):
                    fail(f"reload {i}: GET {path} shows the removed probe")
            res = dbus.busctl(addr, "call", NAME, PATH, IFACE, "ListProbes", timeout=30)
            if '"gone"' in res.stdout:
                fail(f"reload {i}: ListProbes shows the removed probe: {res.stdout}")
            removed_checks += 1
        stop.set()
        thread.join(timeout=30)
        elapsed = time.monotonic() - t0
        if violations:
            fail(f"{len(violations)} scrapes showed a removed probe, first: {violations[0]}")
        if scrapes[1]:
            fail(f"{scrapes[1]} of {sum(scrapes)} continuous scrapes failed")
        status, _, body = d.get("/api/v1/probes?runs=0")
        keep = [p for p in json.loads(body)["probes"] if p["name"] == "keep"]
        if not keep or keep[0]["runs"]["ok"] < 10:
            fail(f"keep did not keep running through the reloads: {keep}")
        print(f"{RELOADS} reloads in {elapsed:.1f} s, {removed_checks} removal checks, "
              f"{scrapes[0]} continuous scrapes, 0 showed a removed probe; keep ran "
              f"{keep[0]['runs']['ok']} times")
finally:
    shutil.rmtree(work, ignore_errors=True)
