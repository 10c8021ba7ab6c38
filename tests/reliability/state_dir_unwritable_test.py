#!/usr/bin/env python3
"""A state dir that cannot be written: metrics keep flowing, one clear warning, baselines kept
in memory and exported.

  * Read-only: the state dir is a read-only bind mount (EROFS). After one failed save the
    daemon warns once ("baselines: cannot save: …; keeping baselines in memory"), keeps
    retrying quietly (no second warning over more than two save intervals), scrapes keep
    succeeding with growing run counts, and iodrift_probe_baseline_bytes_per_second appears
    once 5 clean runs exist. Remounting read-write: the next save succeeds ("saved again"),
    the baselines file appears and parses (its `end` count matches).
  * Full: the state dir is on a 2 MiB ext4 whose blocks are all used (ENOSPC while writing
    the temporary file). Same assertions, and no baselines.tmp is left behind.

The probe is `cached` on a regular file with an explicit size (no calibration file).
Needs root (losetup, mkfs.ext4, mount); exits 77 otherwise.
"""
import errno
import json
import os
import time

from iodrift_test import prom, suspects
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.devices import Scratch, need_root, sh
from iodrift_test.skip import fail, skip
from iodrift_test.wait import wait_for


need_root("mkfs.ext4")
PROBE = "hot"
SAVE_INTERVAL = 10  # ProbeStates' kDefaultMinSaveInterval (probe_states.h)


def machine_state_only(d):
    """The last run's suspects when they are all machine-state ones (else None)."""
    status, _, body = d.get("/api/v1/probes?runs=0", timeout=20)
    if status != 200:
        return None
    for p in json.loads(body)["probes"]:
        if p["name"] == PROBE:
            suspect = p.get("suspect") or []
            return suspect if suspects.machine_only(suspect) else None
    return None


def warnings(log):
    return [line for line in log.splitlines() if " warning " in line or " error " in line
            or " critical " in line]


def scenario(work, label, state, errno_text, target, writable_again=None):
    config = write_config(work.path(f"{label}.yaml"), [
        {"name": PROBE, "kind": "cached", "target": target, "interval": "500ms",
         "size": "2MiB", "timeout": "10s"}], state)
    with Daemon("--config", config, "--state-dir", state) as d:
        start = time.monotonic()
        seen_runs = 0
        baseline = None
        # More than two save intervals: the failing save is retried at least twice.
        while time.monotonic() - start < 2 * SAVE_INTERVAL + 5:
            samples, _ = scrape(d)
            ok = prom.runs(samples, PROBE, "ok")
            if ok < seen_runs:
                fail(f"{label}: run count went backwards")
            seen_runs = ok
            baseline = prom.value(samples, "iodrift_probe_baseline_bytes_per_second",
                                  probe=PROBE) or baseline
            time.sleep(0.5)
        if seen_runs < 6:
            fail(f"{label}: only {seen_runs:.0f} ok runs in {2 * SAVE_INTERVAL + 5} s")
        if not baseline:
            suspect = machine_state_only(d)
            if suspect:
                # Runs under other work's io or memory pressure are kept out of the baseline,
                # rightly; what this test checks needs a baseline to save.
                skip(f"{label}: no baseline after {seen_runs:.0f} ok runs, every one kept out "
                     f"for the machine's state only (the last run's suspects: {suspect}); "
                     f"needs a quieter machine")
            fail(f"{label}: no baseline exported after {seen_runs:.0f} ok runs: "
                 f"{d.stderr()[-2000:]}")
        warns = warnings(d.stderr())
        if len(warns) != 1:
            fail(f"{label}: {len(warns)} warnings, want exactly 1:\n" + "\n".join(warns))
        w = warns[0]
        if "baselines: cannot save" not in w or errno_text.lower() not in w.lower() or "in memory" not in w:
            fail(f"{label}: the warning is not clear: {w}")
        print(f"{label}: {seen_runs:.0f} ok runs, baseline {baseline:.3g} B/s; warning: {w}")
        leftovers = [n for n in os.listdir(state) if n.startswith("baselines")]
        if leftovers:
            fail(f"{label}: files left in the state dir: {leftovers}")

        if writable_again:
            writable_again()
            wait_for(f"{label}: 'saved again' after the state dir became writable",
                     lambda: "baselines: saved again" in d.stderr(), SAVE_INTERVAL + 10)
            with open(os.path.join(state, "baselines")) as f:
                lines = f.read().splitlines()
            if not lines or lines[0] != "iodrift-baselines 1" or lines[-1] != f"end {len(lines) - 1}":
                fail(f"{label}: the saved file is not whole: {lines[:2]} … {lines[-1:]}")
            if not any(line.startswith(f"probe {PROBE} ") for line in lines):
                fail(f"{label}: the saved file has no line for {PROBE}: {lines}")
            print(f"{label}: saved again once writable ({len(lines)} lines)")
        if d.stop() != 0:
            fail(f"{label}: iodriftd did not exit 0 on SIGTERM")


with Scratch("statedir") as work:
    target = work.path("target.dat")
    with open(target, "wb") as f:
        f.write(os.urandom(4 << 20))

    # Read-only bind mount, then writable again.
    os.makedirs(work.path("state-rw"))
    ro = work.mount(work.path("state-rw"), "state-ro", "--bind")
    work.remount_ro(ro)
    scenario(work, "readonly", ro, "Read-only file system", target,
             writable_again=lambda: sh("mount", "-o", "remount,bind,rw", ro))

    # A full filesystem.
    dev = work.loop(2 << 20, "full", mkfs_args=("-b", "1024", "-m", "0"))
    full = work.mount(dev, "state-full")
    with open(os.path.join(full, "filler"), "wb", buffering=0) as f:
        for chunk in (65536, 4096, 512, 1):  # down to the last byte of the last block
            try:
                while True:
                    f.write(b"\x5a" * chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
    os.sync()
    print(f"full: {os.statvfs(full).f_bavail} free blocks")
    os.makedirs(os.path.join(full, "lost+found"), exist_ok=True)
    scenario(work, "full", full, "No space left on device", target)
print("ok")
