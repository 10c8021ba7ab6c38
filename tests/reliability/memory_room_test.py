#!/usr/bin/env python3
"""Memory room: a buffered probe with `readers: [1, 4, 16, 64]` (64 × 1 MiB read buffers at its
widest step) in a memory cgroup with memory.max 64 MiB (v2; v1 memory.limit_in_bytes).

  * `iodriftd --check-config --strict` run in that cgroup fails (exit 78) with a warning naming
    the probe and the figures (what a run needs, what the cgroup allows);
  * the daemon in that cgroup survives the probe's runs: each is refused as an `error` ("not
    run: … memory cgroup …", iodrift_probe_runs_total{result="error"}), never OOM-killed;
  * the same probe with `readers: [1, 4, 16]` passes --check-config --strict in that cgroup.
Before the fix the check passed and the daemon was OOM-killed at its first run.

Needs root and a memory cgroup controller; otherwise exits 77 (skipped).
"""
import json
import os
import subprocess
import tempfile
import urllib.request

from iodrift_test import prom
from iodrift_test.cgroup import Cgroup
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, binary, scrape
from iodrift_test.skip import fail, require_root, skip
from iodrift_test.wait import wait_for

require_root("a memory cgroup of its own")
LIMIT = 64 << 20


def probe_config(work, readers):
    target = os.path.join(work, "target.dat")
    if not os.path.exists(target):
        with open(target, "wb") as f:
            f.write(os.urandom(16 << 20))
            f.flush()
            os.fsync(f.fileno())
    return write_config(os.path.join(work, f"readers-{len(readers)}.yaml"),
                        [{"name": "wide", "kind": "buffered", "target": target,
                          "interval": "1s", "size": "16MiB",
                          "readers": "[" + ", ".join(map(str, readers)) + "]"}],
                        os.path.join(work, "state"))


def check_config(cg, config):
    return subprocess.run(cg.wrap([binary(), "--check-config", "--strict", "--config", config]),
                          capture_output=True, text=True, timeout=60)


with tempfile.TemporaryDirectory(prefix="iodrift-memory-room-", dir="/var/tmp") as work, \
        Cgroup("memory-room", "memory") as cg:
    if cg.missing:
        skip(cg.missing)
    cg.memory_limit(LIMIT, hard=True)
    wide = probe_config(work, [1, 4, 16, 64])
    res = check_config(cg, wide)
    print(f"--check-config --strict, readers up to 64: exit {res.returncode}\n{res.stderr}")
    if res.returncode != 78:
        fail(f"--check-config --strict exited {res.returncode} on a run that cannot fit, want 78")
    if "probe wide" not in res.stderr or "memory cgroup" not in res.stderr:
        fail(f"the warning does not name the probe and the cgroup: {res.stderr}")

    fitting = probe_config(work, [1, 4, 16])
    res = check_config(cg, fitting)
    print(f"--check-config --strict, readers up to 16: exit {res.returncode} {res.stdout}")
    if res.returncode != 0:
        fail(f"a fitting config failed --check-config --strict: {res.stdout}{res.stderr}")

    d = Daemon("--config", wide, "--state-dir", os.path.join(work, "state"))
    d.args = cg.wrap(d.args)
    with d:
        def refused():
            if d.proc.poll() is not None:
                fail(f"iodriftd died (exit {d.proc.returncode}, OOM-killed?) in a {LIMIT >> 20} "
                     f"MiB cgroup; log: {d.stderr()[-1500:]}")
            samples, _ = scrape(d)
            return samples if prom.runs(samples, "wide", "error") >= 2 else None

        samples = wait_for("two refused runs of probe wide", refused, timeout=60)
        if prom.runs(samples, "wide", "ok") != 0:
            fail("a run that cannot fit in the cgroup ran")
        with urllib.request.urlopen(d.url("/api/v1/probes?runs=0"), timeout=10) as r:
            last = {p["name"]: p for p in json.load(r)["probes"]}["wide"]
        text = json.dumps(last)
        print(f"refused run: {last.get('last', {}).get('error') or text[:400]}")
        if "not run" not in text or "memory cgroup" not in text:
            fail(f"the refused run does not say why: {text[:1500]}")
        if not d.alive():
            fail("iodriftd died")
print("ok")
