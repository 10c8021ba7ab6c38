#!/usr/bin/env python3
"""SIGTERM while the bus is stalled: a private dbus-daemon is SIGSTOPped before iodriftd gets
SIGTERM. The daemon must exit 0 within a few seconds (not the sd-bus default call timeout of
25 s, which the unit's 15 s stop timeout turns into a SIGKILL) and the baselines file must hold
the probe's baseline (the final flush comes before any call on the bus). The bus is resumed
(SIGCONT) and stopped in teardown.

A metadata probe every 200 ms forms its baseline (5 clean runs) in a second or two; when only
the machine's state (other work's pressure) keeps its runs out of the baseline for 60 s the test
says skipped with the figures.

Needs dbus-daemon and busctl; otherwise exits 77 (skipped).
"""
import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.request

from iodrift_test import suspects
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon
from iodrift_test.dbus import Bus, wait_for_service
from iodrift_test.skip import fail, need_tools, skip

need_tools("dbus-daemon", "busctl")
STOP_LIMIT_S = 5.0
BASELINE_WAIT_S = 60


def probe(d):
    try:
        with urllib.request.urlopen(d.url("/api/v1/probes?runs=0"), timeout=10) as r:
            return {p["name"]: p for p in json.load(r)["probes"]}.get("meta")
    except OSError:
        return None


with tempfile.TemporaryDirectory(prefix="iodrift-stalled-bus-") as work:
    target = os.path.join(work, "target")
    os.makedirs(target)
    state = os.path.join(work, "state")
    config = write_config(os.path.join(work, "iodrift.yaml"),
                          [{"name": "meta", "kind": "metadata", "target": target,
                            "interval": "200ms", "files": 16}], state)
    with Bus() as bus, Daemon("--config", config, "--dbus", bus.address) as d:
        wait_for_service(bus.address, d)
        deadline = time.monotonic() + BASELINE_WAIT_S
        last = None
        while time.monotonic() < deadline:
            last = probe(d) or last
            if last and last.get("baseline"):
                break
            time.sleep(0.1)
        else:
            if last and suspects.machine_only(last.get("suspect") or []):
                skip(f"no baseline in {BASELINE_WAIT_S} s, the runs kept out for the machine's "
                     f"state only (last suspects {last.get('suspect')})")
            fail(f"no baseline in {BASELINE_WAIT_S} s: {last}")
        bus.proc.send_signal(signal.SIGSTOP)
        try:
            start = time.monotonic()
            d.proc.send_signal(signal.SIGTERM)
            try:
                rc = d.proc.wait(40)
            except subprocess.TimeoutExpired:
                rc = None
            took = time.monotonic() - start
        finally:
            bus.proc.send_signal(signal.SIGCONT)
        print(f"SIGTERM with the bus stopped: exit {rc} after {took:.2f} s")
        if rc is None or took > STOP_LIMIT_S:
            fail(f"iodriftd took {took:.2f} s (exit {rc}) to stop on a stalled bus, limit "
                 f"{STOP_LIMIT_S} s; log: {d.stderr()[-1500:]}")
        if rc != 0:
            fail(f"iodriftd exited {rc} after SIGTERM, want 0; log: {d.stderr()[-1500:]}")
        path = os.path.join(d.state_dir, "baselines")  # --state-dir wins over the file
        try:
            with open(path) as f:
                saved = f.read()
        except OSError as e:
            fail(f"no baselines file after the stop: {e}")
        if "meta" not in saved:
            fail(f"{path} lacks probe meta's baseline after the stop:\n{saved[:800]}")
        print(f"{path}: holds meta's baseline")
print("ok")
