#!/usr/bin/env python3
"""/api/v1/probes and GET / of the real iodriftd without root or a browser.

A memory probe every second with status.history_runs: 3: the history fills to 3 and stays there
while runs go on (the ring's bound in the running daemon); a SIGHUP with history_runs: 2 trims it
to 2; GET / carries SVG charts. Then status.enabled: false: GET / is the plain landing page (no
charts) and /api/v1/probes and /api/v1/boots answer 404.
"""
import json
import os
import shutil
import signal
import tempfile

from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon
from iodrift_test.skip import fail
from iodrift_test.wait import wait_for

MEM = {"name": "mem", "kind": "memory", "interval": "1s", "size": "4MiB", "timeout": "5s",
       "time_budget": "100ms"}


def write_status_config(path, enabled, runs):
    write_config(path, [MEM], dbus=None, log_level=None,
                 extra=f"status:\n  enabled: {'true' if enabled else 'false'}\n"
                       f"  history_runs: {runs}")


def api(d):
    status, headers, body = d.get("/api/v1/probes")
    if status != 200:
        fail(f"/api/v1/probes answered {status}: {body}")
    return json.loads(body)


def wait_mem(d, what, predicate, seconds=60):
    """Waits until probe mem in /api/v1/probes satisfies predicate; returns it."""
    last = {}

    def check():
        last["doc"] = api(d)
        probes = {p["name"]: p for p in last["doc"]["probes"]}
        return probes["mem"] if "mem" in probes and predicate(probes["mem"]) else None

    return wait_for(what, check, seconds, interval=0.3,
                    detail=lambda: f"{json.dumps(last.get('doc'))[:3000]}\n{d.stderr()[-2000:]}")


work = tempfile.mkdtemp(prefix="iodrift-status-api-")
try:
    config = os.path.join(work, "status.yaml")
    write_status_config(config, True, 3)
    with Daemon("--config", config) as d:
        mem = wait_mem(d, "5 runs", lambda p: sum(p["runs"].values()) >= 5)
        if len(mem["history"]) != 3:
            fail(f"history holds {len(mem['history'])} points after "
                 f"{sum(mem['runs'].values())} runs, want 3 (status.history_runs)")
        times = [h["time_seconds"] for h in mem["history"]]
        if times != sorted(times) or times[-1] != mem["start_time_seconds"]:
            fail(f"history is not the last runs oldest first: {times}, "
                 f"last run {mem['start_time_seconds']}")
        # ?runs=N: the newest N points only; a bad value is a 400 naming the argument.
        status, _, body = d.get("/api/v1/probes?runs=1")
        last = json.loads(body)["probes"][0]["history"] if status == 200 else None
        if not last or len(last) != 1 or last[0]["time_seconds"] < times[-1]:
            fail(f"/api/v1/probes?runs=1 answered {status}: history {last}, want only "
                 f"the newest point (at least {times[-1]})")
        status, _, body = d.get("/api/v1/probes?runs=0")
        if status != 200 or json.loads(body)["probes"][0]["history"] != []:
            fail(f"/api/v1/probes?runs=0 answered {status}: {body[:500]}")
        status, _, body = d.get("/api/v1/probes?runs=-3")
        if status != 400 or not body.startswith("runs: expected a whole number"):
            fail(f"/api/v1/probes?runs=-3 answered {status} {body!r}, want 400 naming runs")
        status, headers, page = d.get("/")
        if status != 200 or "<svg class=\"chart\" id=\"probe-mem-figure\"" not in page:
            fail(f"GET / has no chart for mem: {status} {page[:2000]}")
        if not headers.get("Content-Type", "").startswith("text/html"):
            fail(f"GET / Content-Type {headers.get('Content-Type')!r}")
        write_status_config(config, True, 2)
        d.proc.send_signal(signal.SIGHUP)
        wait_mem(d, "history trimmed to 2 by a reload", lambda p: len(p["history"]) == 2)
        runs_before = sum(api(d)["probes"][0]["runs"].values())
        wait_mem(d, "two more runs", lambda p: sum(p["runs"].values()) >= runs_before + 2)
        mem = api(d)["probes"][0]
        if len(mem["history"]) != 2:
            fail(f"history grew back to {len(mem['history'])} after the reload to 2")

    write_status_config(config, False, 240)
    with Daemon("--config", config) as d:
        status, _, page = d.get("/")
        if status != 200 or "<svg" in page or "href=\"/metrics\"" not in page:
            fail(f"status.enabled: false should serve the plain landing page: {page[:1000]}")
        for path in ("/api/v1/probes", "/api/v1/boots"):
            status, _, body = d.get(path)
            if status != 404 or "status.enabled" not in body:
                fail(f"status.enabled: false: {path} answered {status} {body!r}")
    print("ok")
finally:
    shutil.rmtree(work, ignore_errors=True)
