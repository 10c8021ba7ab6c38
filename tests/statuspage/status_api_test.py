#!/usr/bin/env python3
"""/api/v1/probes and GET / of the real iodriftd without root or a browser.

A memory probe every second with status.history_runs: 3: the history fills to 3 and stays there
while runs go on (the ring's bound in the running daemon); a SIGHUP with history_runs: 2 trims it
to 2; GET / carries SVG charts. Then status.enabled: false: GET / is the plain landing page (no
charts) and /api/v1/probes answers 404.
"""
import json
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import harness  # noqa: E402


def write_config(path, enabled, runs):
    with open(path, "w") as f:
        f.write(f"status:\n  enabled: {'true' if enabled else 'false'}\n  history_runs: {runs}\n"
                "probes:\n  - name: mem\n    kind: memory\n    interval: 1s\n    size: 4MiB\n"
                "    timeout: 5s\n    time_budget: 100ms\n")


def api(d):
    status, headers, body = d.get("/api/v1/probes")
    if status != 200:
        harness.fail(f"/api/v1/probes answered {status}: {body}")
    return json.loads(body)


def wait_for(d, what, predicate, seconds=60):
    deadline = time.monotonic() + seconds
    while True:
        doc = api(d)
        probes = {p["name"]: p for p in doc["probes"]}
        if "mem" in probes and predicate(probes["mem"]):
            return probes["mem"]
        if time.monotonic() > deadline:
            harness.fail(f"{what} not reached in {seconds} s: {json.dumps(doc)[:3000]}\n"
                         f"{d.stderr()[-2000:]}")
        time.sleep(0.3)


work = tempfile.mkdtemp(prefix="iodrift-status-api-")
try:
    config = os.path.join(work, "status.yaml")
    write_config(config, True, 3)
    with harness.Daemon("--config", config) as d:
        mem = wait_for(d, "5 runs", lambda p: sum(p["runs"].values()) >= 5)
        if len(mem["history"]) != 3:
            harness.fail(f"history holds {len(mem['history'])} points after "
                         f"{sum(mem['runs'].values())} runs, want 3 (status.history_runs)")
        times = [h["time_seconds"] for h in mem["history"]]
        if times != sorted(times) or times[-1] != mem["start_time_seconds"]:
            harness.fail(f"history is not the last runs oldest first: {times}, "
                         f"last run {mem['start_time_seconds']}")
        # ?runs=N: the newest N points only; a bad value is a 400 naming the argument.
        status, _, body = d.get("/api/v1/probes?runs=1")
        last = json.loads(body)["probes"][0]["history"] if status == 200 else None
        if not last or len(last) != 1 or last[0]["time_seconds"] < times[-1]:
            harness.fail(f"/api/v1/probes?runs=1 answered {status}: history {last}, want only "
                         f"the newest point (at least {times[-1]})")
        status, _, body = d.get("/api/v1/probes?runs=0")
        if status != 200 or json.loads(body)["probes"][0]["history"] != []:
            harness.fail(f"/api/v1/probes?runs=0 answered {status}: {body[:500]}")
        status, _, body = d.get("/api/v1/probes?runs=-3")
        if status != 400 or not body.startswith("runs: expected a whole number"):
            harness.fail(f"/api/v1/probes?runs=-3 answered {status} {body!r}, want 400 naming runs")
        status, headers, page = d.get("/")
        if status != 200 or "<svg class=\"chart\" id=\"probe-mem-figure\"" not in page:
            harness.fail(f"GET / has no chart for mem: {status} {page[:2000]}")
        if not headers.get("Content-Type", "").startswith("text/html"):
            harness.fail(f"GET / Content-Type {headers.get('Content-Type')!r}")
        write_config(config, True, 2)
        d.proc.send_signal(signal.SIGHUP)
        wait_for(d, "history trimmed to 2 by a reload", lambda p: len(p["history"]) == 2)
        runs_before = sum(api(d)["probes"][0]["runs"].values())
        wait_for(d, "two more runs", lambda p: sum(p["runs"].values()) >= runs_before + 2)
        mem = api(d)["probes"][0]
        if len(mem["history"]) != 2:
            harness.fail(f"history grew back to {len(mem['history'])} after the reload to 2")

    write_config(config, False, 240)
    with harness.Daemon("--config", config) as d:
        status, _, page = d.get("/")
        if status != 200 or "<svg" in page or "href=\"/metrics\"" not in page:
            harness.fail(f"status.enabled: false should serve the plain landing page: {page[:1000]}")
        status, _, body = d.get("/api/v1/probes")
        if status != 404 or "status.enabled" not in body:
            harness.fail(f"status.enabled: false: /api/v1/probes answered {status} {body!r}")
    print("ok")
finally:
    shutil.rmtree(work, ignore_errors=True)
