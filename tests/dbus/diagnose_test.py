#!/usr/bin/env python3
"""D-Bus Diagnose / `iodriftctl diagnose` plumbing on a private bus, without
needing a slowdown: off by default (Failed, naming the key), UnknownProbe (exit 2), no baseline
yet (Failed), then — after a reload that turns it on and a `memory` probe every 1 s has formed
its baseline — a real experiment: the answer's first line, figures (ratio.control, recovered,
finish_time), iodrift_probe_recovery_ratio{probe,step} and _timestamp_seconds{probe}, and the
status page's "last diagnose" section. (A device slowdown not recovered: e2e.slowdown; the
recovered outcome: tests/analysis/diagnose_test.cpp.)
"""
import json
import os
import shutil
import tempfile

from iodrift_test import dbus, prom
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.skip import fail, need_tools
from iodrift_test.wait import wait_for

need_tools("dbus-daemon", "busctl")

work = tempfile.mkdtemp(prefix="iodrift-diagnose-", dir="/var/tmp")
config = os.path.join(work, "iodrift.yaml")
probes = [{"name": "mem", "kind": "memory", "interval": "1s", "size": "16MiB"}]


def write(extra=""):
    write_config(config, probes, f"{work}/state", extra, dbus=None, log_level=None)


try:
    write()
    with dbus.Bus() as bus, Daemon("--config", config, "--dbus", bus.address) as d:
        addr = bus.address
        dbus.wait_for_service(addr, d)
        res = dbus.ctl(addr, "diagnose", "mem")
        if res.returncode != 1 or "diagnose.enabled: true" not in res.stderr:
            fail(f"diagnose while off: exit {res.returncode}: {res.stdout}{res.stderr}")
        res = dbus.ctl(addr, "diagnose", "nosuch")
        if res.returncode != 2:
            fail(f"diagnose of an unknown probe: exit {res.returncode}: {res.stderr}")

        write("diagnose:\n  enabled: true\n  warm_size: 64MiB\n  timeout: 60s\n"
              "  max_io_pressure: 100\n  max_memory_pressure: 100\n")
        res = dbus.ctl(addr, "reload")
        if res.returncode != 0:
            fail(f"reload: {res.stdout}{res.stderr}")

        def baseline():
            status, _, body = d.get("/api/v1/probes", timeout=30)
            if status != 200:
                return None
            return next((p.get("baseline") for p in json.loads(body)["probes"]
                         if p["name"] == "mem"), None)

        if not baseline():
            res = dbus.ctl(addr, "diagnose", "mem")
            if not baseline() and (res.returncode != 1 or "no baseline yet" not in res.stderr):
                fail(f"diagnose without a baseline: exit {res.returncode}: "
                     f"{res.stdout}{res.stderr}")
        wait_for("a baseline of mem", baseline, timeout=120, interval=0.5)

        res = dbus.ctl(addr, "diagnose", "mem", "--json", timeout=300)
        if res.returncode not in (0, 1) or not res.stdout.strip():
            fail(f"diagnose: exit {res.returncode}: {res.stdout}{res.stderr}")
        out = json.loads(res.stdout)
        print(out["text"])
        figures = out["figures"]
        if not out["text"].startswith("probe mem: "):
            fail(f"the answer does not start with the probe: {out['text']!r}")
        for key in ("ratio.control", "figure.control", "spread.control", "baseline", "recovered",
                    "runs", "finish_time"):
            if key not in figures:
                fail(f"figure {key} missing: {figures}")
        if (res.returncode == 0) != (figures["recovered"] == 1 or figures["ratio.control"] >= 0.9):
            fail(f"exit {res.returncode} does not match the figures {figures}")

        samples, _ = scrape(d)
        ratio = prom.value(samples, "iodrift_probe_recovery_ratio", probe="mem", step="control")
        if ratio is None or abs(ratio - figures["ratio.control"]) > 1e-6:
            fail(f"iodrift_probe_recovery_ratio{{step=control}} {ratio}, figures {figures}")
        stamp = prom.value(samples, "iodrift_probe_recovery_timestamp_seconds", probe="mem")
        if stamp is None or abs(stamp - figures["finish_time"]) > 1e-3:
            fail(f"iodrift_probe_recovery_timestamp_seconds {stamp}, figures {figures}")
        _, _, page = d.get("/", timeout=30)
        if "last diagnose" not in page:
            fail("the status page has no last diagnose section")
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
