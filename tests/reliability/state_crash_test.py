#!/usr/bin/env python3
"""The baselines file survives kill -9 at any moment.

iodriftd with three fast probes (cached on a regular file, every 300 ms) is started and
SIGKILLed 25 times at random moments: most lives last 0–80 ms or 0–1.5 s (the daemon rewrites
<state_dir>/baselines at every start, so kills land before, during and after that write),
every fifth lasts 10.5–13 s after its probes have baselines (past ProbeStates' 10 s save
interval, so baselines formed by the runs are saved while the daemon works). After every kill the next start must load the
file — its "baselines: state_file=… probes=N" line, no "is unreadable" line, no
baselines.corrupt-* file — and N never goes down (a kill never loses saved state). A
baselines.tmp found after a kill (a write cut short) is counted and must be cleaned up by the
next start. At the end every probe has a baseline in the file and on /metrics.

Seed: IODRIFT_CRASH_SEED (default: random, printed). Needs no root.
"""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

from iodrift_test import prom, suspects
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, binary, scrape
from iodrift_test.skip import fail, skip
from iodrift_test.wait import wait_for


# 25 by default; the sanitizer stages of .ci/run take 5 (one long life): they look for memory
# and thread errors on the load and save paths, which the first kills already walk.
KILLS = int(os.environ.get("IODRIFT_CRASH_KILLS", "25"))
PROBES = ("hot-a", "hot-b", "hot-c")
BASELINE_WAIT = 120
SERVING = re.compile(r"serving metrics on http://(\S+?)/metrics")
LOADED = re.compile(r"baselines: state_file=\S+ boot_id=\S+ probes=(\d+) past_boots=(\d+)")

seed = int(os.environ.get("IODRIFT_CRASH_SEED", random.randrange(1 << 30)))
rng = random.Random(seed)
print(f"seed {seed}")

work = tempfile.mkdtemp(prefix="iodrift-crash-", dir="/var/tmp")
try:
    state = os.path.join(work, "state")
    os.makedirs(state)
    target = os.path.join(work, "target.dat")
    with open(target, "wb") as f:
        f.write(os.urandom(4 << 20))
    config = write_config(os.path.join(work, "iodrift.yaml"), [
        {"name": name, "kind": "cached", "target": target, "interval": "300ms", "size": "2MiB",
         "timeout": "10s"} for name in PROBES], state)
    args = [binary(), "--config", config, "--state-dir", state, "--listen",
            "127.0.0.1:0", "--dbus", "none"]

    def load_line(log_text, life):
        if "is unreadable" in log_text or "cannot be set aside" in log_text:
            fail(f"life {life}: the state file was found corrupt:\n{log_text[-2000:]}")
        m = LOADED.search(log_text)
        return (int(m.group(1)), int(m.group(2))) if m else None

    def probes_api(log_path):
        """/api/v1/probes of the daemon writing `log_path`, or None before it serves."""
        with open(log_path) as f:
            m = SERVING.search(f.read())
        if not m:
            return None
        try:
            with urllib.request.urlopen(f"http://{m.group(1)}/api/v1/probes?runs=0",
                                        timeout=10) as r:
                return {p["name"]: p for p in json.load(r)["probes"]}
        except OSError:
            return None

    def wait_baselines(proc, log_path, life):
        """Until every probe has a baseline; skipped with the figures when only machine-state
        suspects (other work's pressure) keep the runs out of it for BASELINE_WAIT seconds."""
        deadline = time.monotonic() + BASELINE_WAIT
        probes = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                fail(f"life {life}: iodriftd exited {proc.returncode} before a kill")
            probes = probes_api(log_path) or probes
            if probes and all(probes.get(n, {}).get("baseline") for n in PROBES):
                return
            time.sleep(0.2)
        proc.kill()
        proc.wait()
        last = {n: (probes or {}).get(n, {}).get("suspect") or [] for n in PROBES}
        if probes and all(suspects.machine_only(s) for s in last.values()):
            skip(f"life {life}: no baselines in {BASELINE_WAIT} s, the runs kept out for the "
                 f"machine's state only (last suspects {last}): needs a quieter machine")
        fail(f"life {life}: no baselines in {BASELINE_WAIT} s: {probes}")

    last_probes = 0
    torn = 0
    lives = []
    for life in range(1, KILLS + 1):
        long_life = life % 5 == 0
        if long_life:
            delay = rng.uniform(10.5, 13.0)
        elif life % 2:
            delay = rng.uniform(0.0, 0.08)  # around the start-up write
        else:
            delay = rng.uniform(0.0, 1.5)
        log_path = os.path.join(work, f"life{life}.log")
        with open(log_path, "w") as log:
            proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log)
            if long_life:
                # The delay counts from the moment every probe has a baseline, so the save the
                # delay outlasts holds them (on a busy machine, or under TSan, forming them took
                # longer than a fixed delay).
                wait_baselines(proc, log_path, life)
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        with open(log_path) as f:
            text = f.read()
        loaded = load_line(text, life)
        if loaded is not None:
            if loaded[0] < last_probes:
                fail(f"life {life}: loaded {loaded[0]} probes, an earlier life had "
                     f"{last_probes}: saved state was lost")
            last_probes = loaded[0]
        if os.path.exists(os.path.join(state, "baselines.tmp")):
            torn += 1
        corrupt = [n for n in os.listdir(state) if n.startswith("baselines.corrupt")]
        if corrupt:
            fail(f"life {life}: {corrupt} after a kill at {delay:.2f} s")
        lives.append(f"{delay:.2f}s:{'-' if loaded is None else loaded[0]}")
    print(f"{KILLS} kills (delay:probes loaded): {' '.join(lives)}")
    print(f"{torn} kills left a baselines.tmp (a write cut short)")

    # A last, clean life: the state loads whole and the baselines show.
    with Daemon(*args[1:]) as d:
        loaded = load_line(d.stderr(), "final")
        if loaded is None or loaded[0] != len(PROBES):
            fail(f"final start loaded {loaded}, want {len(PROBES)} probes:\n"
                 f"{d.stderr()[-2000:]}")
        if os.path.exists(os.path.join(state, "baselines.tmp")):
            fail("baselines.tmp was not cleaned up at start")
        with open(os.path.join(state, "baselines")) as f:
            lines = f.read().splitlines()
        if lines[0] != "iodrift-baselines 1" or lines[-1] != f"end {len(lines) - 1}":
            fail(f"the state file is not whole: {lines[:1]} … {lines[-1:]}")
        for name in PROBES:
            rec = [line.split() for line in lines if line.startswith(f"probe {name} ")]
            if not rec or rec[0][5] == "-":
                fail(f"{name} has no baseline in the state file: {rec}")

        def exported():
            samples, _ = scrape(d)
            return all(prom.value(samples, "iodrift_probe_baseline_bytes_per_second", probe=n)
                       for n in PROBES)
        wait_for("baselines on /metrics", exported, 20)
        if d.stop() != 0:
            fail("iodriftd did not exit 0 on SIGTERM")
    print(f"final start: {loaded[0]} probes with baselines loaded")
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
