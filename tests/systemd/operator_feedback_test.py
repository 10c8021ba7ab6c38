#!/usr/bin/env python3
"""Operator feedback, with the real iodriftd.

1. `--check-config`: probes on a missing block device and a missing directory are one
   `warning:` line each on stderr, exit 0; `--strict` makes them exit 78; a config whose targets
   all exist has no warning, also with --strict.
2. At run time a failing probe logs its first failure once at warning, the repeats at debug, and
   its recovery (the target appears) once at info.
Usage: operator_feedback_test.py IODRIFTD
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from iodrift_test.daemon import Daemon
from iodrift_test.skip import fail


binary = sys.argv[1]
os.environ["IODRIFTD"] = binary
work = tempfile.mkdtemp(prefix="iodrift-feedback-")


def check(config, *extra):
    return subprocess.run([binary, "--check-config", "--config", config, *extra],
                          capture_output=True, text=True, timeout=60)


try:
    good_dir = os.path.join(work, "good")
    os.makedirs(good_dir)
    missing_dir = os.path.join(work, "appears-later")
    bad = os.path.join(work, "bad.yaml")
    with open(bad, "w") as f:
        f.write(f"state_dir: {work}/state\nprobes:\n"
                "  - {name: disk, kind: buffered, target: /dev/iodrift-no-such-disk}\n"
                f"  - {{name: later, kind: metadata, target: {missing_dir}}}\n"
                f"  - {{name: fine, kind: metadata, target: {good_dir}}}\n")
    res = check(bad)
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    if res.returncode != 0:
        fail(f"--check-config with missing targets: want exit 0, got {res.returncode}: "
             f"{res.stdout}{res.stderr}")
    for name, target in (("disk", "/dev/iodrift-no-such-disk"), ("later", missing_dir)):
        if not any(f"probe {name}: target {target}: No such file or directory" in w
                   for w in warnings):
            fail(f"no warning for probe {name}: {res.stderr!r}")
    if len(warnings) != 2 or "fine" in res.stderr:
        fail(f"want exactly 2 warnings, got: {res.stderr!r}")
    if "2 warnings" not in res.stdout:
        fail(f"the summary does not count the warnings: {res.stdout!r}")
    res = check(bad, "--strict")
    if res.returncode != 78:
        fail(f"--strict with missing targets: want exit 78, got {res.returncode}")
    good = os.path.join(work, "good.yaml")
    with open(good, "w") as f:
        f.write(f"state_dir: {work}/state\nprobes:\n"
                f"  - {{name: fine, kind: metadata, target: {good_dir}}}\n")
    res = check(good, "--strict")
    if res.returncode != 0 or "warning" in res.stderr:
        fail(f"--strict on good targets: rc={res.returncode} {res.stderr!r}")

    # 2. Run time: one warning, repeats at debug, recovery at info.
    run_cfg = os.path.join(work, "run.yaml")
    with open(run_cfg, "w") as f:
        f.write(f"state_dir: {work}/state\nprobes:\n"
                f"  - {{name: later, kind: metadata, target: {missing_dir}, interval: 1s}}\n")
    with Daemon("--config", run_cfg, "--log-level", "debug") as d:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and \
                not re.search(r"probe=later .*failed_runs=3", d.stderr()):
            time.sleep(0.2)
        log = d.stderr()
        if not re.search(r"probe=later .*failed_runs=3", log):
            fail(f"no third failed run logged at debug within 120 s: {log}")
        warn = [line for line in log.splitlines() if " warning " in line and "probe=later" in line]
        if len(warn) != 1:
            fail(f"want one warning line for 3+ failed runs, got {len(warn)}: {log}")
        repeats = [line for line in log.splitlines()
                   if " debug " in line and "probe=later" in line and "failed_runs=" in line]
        if len(repeats) < 2:
            fail(f"repeated failures are not at debug: {log}")
        os.makedirs(missing_dir)
        while time.monotonic() < deadline and "recovered after" not in d.stderr():
            time.sleep(0.2)
        log = d.stderr()
        rec = [line for line in log.splitlines() if "recovered after" in line]
        if len(rec) != 1 or " info " not in rec[0] or "probe=later" not in rec[0]:
            fail(f"want one info line 'recovered after N failed runs': {log}")
        warn = [line for line in log.splitlines() if " warning " in line and "probe=later" in line]
        if len(warn) != 1:
            fail(f"a warning after the first: {log}")
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
