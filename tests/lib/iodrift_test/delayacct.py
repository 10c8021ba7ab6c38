"""Delay accounting switched on for one test, as an operator does for the full off-CPU split
(docs/reading-drift.md "time parts"): `kernel.task_delayacct=1` while the block runs, the old
value back after it. Tests that use it run serially (CTest RUN_SERIAL), so one test's restore
never switches it off under another.

    from iodrift_test import delayacct
    with delayacct.enabled() as why_not:
        if why_not: print(f"delay accounting not available: {why_not}")
"""
import contextlib
import os

SYSCTL = "/proc/sys/kernel/task_delayacct"


@contextlib.contextmanager
def enabled():
    """Yields None when delay accounting is on for the block, else why not (not root, no such
    sysctl); restores the value found."""
    try:
        with open(SYSCTL) as f:
            old = f.read().strip()
    except OSError as e:
        yield f"{SYSCTL}: {e.strerror}"
        return
    if old == "1":
        yield None
        return
    if os.geteuid() != 0:
        yield "task_delayacct is 0 and switching it on needs root"
        return
    try:
        with open(SYSCTL, "w") as f:
            f.write("1")
    except OSError as e:
        yield f"cannot write {SYSCTL}: {e.strerror}"
        return
    try:
        yield None
    finally:
        with open(SYSCTL, "w") as f:
            f.write(old)
