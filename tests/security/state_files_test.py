#!/usr/bin/env python3
"""Hostile state files against a real iodriftd: the daemon starts, serves and stops
normally, reads nothing through them and never replaces what it could not read.

  * `<state_dir>/baselines` is a FIFO (main at 927b38c never served and ignored SIGTERM): the
    daemon serves /-/healthy and /metrics, exits 0 on SIGTERM within 10 s, the FIFO is set aside
    as baselines.unreadable-<epoch> and a regular baselines file is written.
  * `baselines` and `baselines.tmp` are symlinks to another file: its content is never
    read (no past boot taken from it) nor overwritten.
  * a valid `baselines` over the 16 MiB bound: kept byte for byte under a new name.

stdlib only; no root needed.
"""
import os
import stat
import tempfile

from iodrift_test.daemon import Daemon
from iodrift_test.skip import fail


def config(work, state):
    path = os.path.join(work, "config.yaml")
    with open(path, "w") as f:
        f.write(f"state_dir: {state}\ndbus: none\nlog_level: info\nprobes: []\n")
    return path


def run(work, state, label):
    with Daemon("--config", config(work, state), "--state-dir", state) as d:
        for path in ("/-/healthy", "/metrics"):
            status, _, _ = d.get(path, timeout=10)
            if status != 200:
                fail(f"{label}: GET {path} answered {status}")
        rc = d.stop(timeout=10)
        if rc != 0:
            fail(f"{label}: iodriftd exited {rc} on SIGTERM: {d.stderr()[-2000:]}")
        return d.stderr()


def saved_file(state, label):
    path = os.path.join(state, "baselines")
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        fail(f"{label}: {path} is not a regular file after the run")
    with open(path) as f:
        return f.read()


with tempfile.TemporaryDirectory(prefix="iodrift-statefiles-") as work:
    # 1. A FIFO.
    state = os.path.join(work, "fifo")
    os.makedirs(state)
    os.mkfifo(os.path.join(state, "baselines"))
    log = run(work, state, "fifo")
    aside = [n for n in os.listdir(state) if n.startswith("baselines.unreadable-")]
    if len(aside) != 1 or not stat.S_ISFIFO(os.lstat(os.path.join(state, aside[0])).st_mode):
        fail(f"fifo: not set aside: {os.listdir(state)}\n{log}")
    if not saved_file(state, "fifo").startswith("iodrift-baselines 1\n"):
        fail("fifo: no baselines written after it was set aside")
    print(f"fifo: served, exit 0, set aside as {aside[0]}")

    # 2. Symlinks to a file elsewhere (a valid baselines file of a boot that never was).
    state = os.path.join(work, "links")
    os.makedirs(state)
    victim = os.path.join(work, "victim")
    fake = "iodrift-baselines 1\nboot planted-boot 1\nend 2\n"
    with open(victim, "w") as f:
        f.write(fake)
    os.symlink(victim, os.path.join(state, "baselines"))
    os.symlink(victim, os.path.join(state, "baselines.tmp"))
    run(work, state, "symlink")
    with open(victim) as f:
        if f.read() != fake:
            fail("symlink: the file the symlinks pointed at was overwritten")
    if "planted-boot" in saved_file(state, "symlink"):
        fail("symlink: the state was read through the symlink (planted boot in the history)")
    print("symlink: target untouched, nothing read through it")

    # 3. Over the size bound: kept.
    state = os.path.join(work, "big")
    os.makedirs(state)
    big = ("iodrift-baselines 1\nboot old-boot 1\nend 2\n" + "#" * (17 << 20)).encode()
    with open(os.path.join(state, "baselines"), "wb") as f:
        f.write(big)
    run(work, state, "oversized")
    kept = False
    for name in os.listdir(state):
        if name != "baselines" and os.path.getsize(os.path.join(state, name)) == len(big):
            with open(os.path.join(state, name), "rb") as f:
                kept = kept or f.read() == big
    if not kept:
        fail(f"oversized: the 17 MiB file was replaced without a copy: {os.listdir(state)}")
    print("oversized: kept under a new name")
print("ok")
