"""Delay accounting switched on for one test, as an operator does for the full off-CPU split
(docs/reading-drift.md "time parts"): `kernel.task_delayacct=1` while the block runs, the old
value back after the last user's block ends. Users are counted across processes (a state file
under /run holding the value found and the users' PIDs, under an flock; PIDs that died are
pruned), so two tests or two zoo runs on one machine never switch it off under each other.

    from iodrift_test import delayacct
    with delayacct.enabled() as why_not:
        if why_not: print(f"delay accounting not available: {why_not}")
"""
import contextlib
import fcntl
import json
import os

SYSCTL = "/proc/sys/kernel/task_delayacct"
STATE = "/run/iodrift-test-delayacct.json"  # {"old": "0", "pids": [...]}; root only


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


@contextlib.contextmanager
def _locked_state():
    """The shared state (a dict, written back on exit) under an exclusive lock."""
    with open(STATE + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(STATE) as f:
                state = json.load(f)
        except (OSError, ValueError):
            state = {}
        state["pids"] = [p for p in state.get("pids", []) if _alive(p)]
        yield state
        if state["pids"]:
            with open(STATE, "w") as f:
                json.dump(state, f)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(STATE)


def _write(value):
    with open(SYSCTL, "w") as f:
        f.write(value)


@contextlib.contextmanager
def enabled():
    """Yields None when delay accounting is on for the block, else why not (not root, no such
    sysctl); the value found is restored when the last user's block ends."""
    try:
        with open(SYSCTL) as f:
            current = f.read().strip()
    except OSError as e:
        yield f"{SYSCTL}: {e.strerror}"
        return
    if os.geteuid() != 0:
        yield None if current == "1" else "task_delayacct is 0 and switching it on needs root"
        return
    try:
        with _locked_state() as state:
            # The first user records what to restore at the end; a user that died (kill -9)
            # left its record, and that value is still the one to restore.
            state.setdefault("old", current)
            if current != "1":
                _write("1")
            state["pids"].append(os.getpid())
    except OSError as e:
        yield f"cannot write {SYSCTL}: {e.strerror}"
        return
    try:
        yield None
    finally:
        with _locked_state() as state:
            with contextlib.suppress(ValueError):
                state["pids"].remove(os.getpid())
            if not state["pids"] and state.get("old", "1") != "1":
                _write(state["old"])
