#!/usr/bin/env python3
"""Command line: --help, --version, usage errors (exit 2), --check-config (exit 0 / 78)."""
import os
import subprocess
import tempfile

from iodrift_test.daemon import binary
from iodrift_test.skip import fail


source = os.environ["IODRIFT_SOURCE_DIR"]
exe = binary()


def run(*args):
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=30)


res = run("--help")
for flag in ["--config", "--listen", "--proc-root", "--state-dir", "--dbus", "--log-level",
             "--check-config", "--once", "--json", "--version", "SIGHUP", "Exit status"]:
    if flag not in res.stdout:
        fail(f"--help does not mention {flag}")
if res.returncode != 0:
    fail("--help did not exit 0")

res = run("--version")
if res.returncode != 0 or not res.stdout.startswith("iodriftd "):
    fail(f"--version: {res.returncode} {res.stdout!r}")

res = run("--bogus")
if res.returncode != 2 or "unknown option '--bogus'" not in res.stderr:
    fail(f"unknown option: {res.returncode} {res.stderr!r}")

res = run("--listen")
if res.returncode != 2 or "requires an argument" not in res.stderr:
    fail(f"missing argument: {res.returncode} {res.stderr!r}")

res = run("--check-config", "--config", os.path.join(source, "config/iodrift.yaml"))
if res.returncode != 0:
    fail(f"shipped config/iodrift.yaml does not check: {res.stdout}{res.stderr}")

res = run("--check-config")
if res.returncode != 0:
    fail(f"embedded default does not check: {res.stdout}{res.stderr}")

with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
    f.write("listen: 127.0.0.1:9723\nprobes:\n  - name: a\n    kind: bogus\n    target: /x\n"
            "    intervall: 5m\n")
    bad = f.name
res = run("--check-config", "--config", bad)
os.unlink(bad)
if res.returncode != 78:
    fail(f"bad config exited {res.returncode}, want 78")
lines = res.stderr.strip().splitlines()
if len(lines) < 2:
    fail(f"want every problem at once, got: {res.stderr!r}")
if not any(l.startswith(f"{bad}:4:") and "probes[0].kind" in l for l in lines):
    fail(f"no FILE:4:COL: probes[0].kind problem in {lines}")
if not any(l.startswith(f"{bad}:6:") and "intervall" in l for l in lines):
    fail(f"no FILE:6:COL: ...intervall problem in {lines}")

# An interval below the kind's minimum keeps a core busy: refused (78) with key, line and minimum,
# with and without --strict.
with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
    f.write("probes:\n  - name: hot\n    kind: cached\n    target: /var/tmp\n"
            "    interval: 1ms\n")
busy = f.name
for args in (("--check-config",), ("--check-config", "--strict")):
    res = run(*args, "--config", busy)
    if res.returncode != 78 or f"{busy}:5:15: probes[0].interval: 1ms is shorter than the " \
            "minimum of 100ms for kind cached" not in res.stderr:
        fail(f"{' '.join(args)} with interval 1ms: exit {res.returncode} {res.stderr!r}, want 78 "
             "naming probes[0].interval, its line and the minimum")
os.unlink(busy)

res = run("--check-config", "--log-level", "loud")
if res.returncode != 78 or "--log-level: must be one of" not in res.stderr:
    fail(f"bad --log-level: {res.returncode} {res.stderr!r}")
print("ok")
