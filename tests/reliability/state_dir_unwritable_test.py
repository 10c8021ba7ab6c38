#!/usr/bin/env python3
"""A state dir that cannot be written: metrics keep flowing, baselines still form (also for a
probe whose size is calibrated), kept in memory and exported, and the state dir's problem is a
repeated, clear signal until it clears.

  * Read-only: the state dir is a read-only bind mount (EROFS). After one failed save the
    daemon warns once for the baselines ("baselines: cannot save: …; keeping baselines in
    memory") and once for the calibration of the `size: auto` probe ("calibration: cannot
    save … keeping the budget in memory"), keeps retrying quietly (no other warning over more
    than two save intervals), scrapes keep succeeding with growing run counts, and
    iodrift_probe_baseline_bytes_per_second appears for both probes once 5 clean runs exist
    (the calibrated size is kept in memory: the auto probe's runs are not suspect and count).
    While it lasts: iodrift_state_writable 0, iodrift_state_save_errors_total growing, the
    status page's banner (id="state-problem") and the sd_notify STATUS= line (a fake
    NOTIFY_SOCKET) starting "state dir not writable (". Remounting read-write: the next save
    succeeds ("saved again"), the baselines file appears and parses (its `end` count matches),
    the calibration file appears, and metric, banner and status prefix are gone.
  * Full: the state dir is on a 2 MiB ext4 whose blocks are all used (ENOSPC while writing
    the temporary file). Same assertions up to the recovery, and no baselines.tmp is left
    behind.

The probes are `cached` with an explicit size and `buffered` with `size: auto` on regular
files. Needs root (losetup, mkfs.ext4, mount); exits 77 otherwise.
"""
import json
import os
import socket
import time

from iodrift_test import prom, suspects
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.devices import Scratch, fill_filesystem, need_root, sh
from iodrift_test.skip import fail, skip
from iodrift_test.wait import wait_for


need_root("mkfs.ext4")
PROBE = "hot"
AUTO = "auto"  # size: auto, calibrated on its first run
SAVE_INTERVAL = 10  # ProbeStates' kDefaultMinSaveInterval (probe_states.h)
STATE_PROBLEM = "state dir not writable ("


def machine_state_only(d, probe):
    """The last run's suspects when they are all machine-state ones (else None)."""
    status, _, body = d.get("/api/v1/probes?runs=0", timeout=20)
    if status != 200:
        return None
    for p in json.loads(body)["probes"]:
        if p["name"] == probe:
            suspect = p.get("suspect") or []
            return suspect if suspects.machine_only(suspect) else None
    return None


def warnings(log):
    return [line for line in log.splitlines() if " warning " in line or " error " in line
            or " critical " in line]


class StatusLines:
    """A fake NOTIFY_SOCKET: the STATUS= lines iodriftd sends (every second with the watchdog
    interval below)."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.setblocking(False)
        self.env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "2000000"}
        self.last = None

    def latest(self):
        while True:
            try:
                message = self.sock.recv(4096).decode()
            except BlockingIOError:
                return self.last
            for line in message.split("\n"):
                if line.startswith("STATUS="):
                    self.last = line[len("STATUS="):]

    def close(self):
        self.sock.close()


def state_signals(d, status):
    """(iodrift_state_writable, iodrift_state_save_errors_total, banner shown, STATUS= line)."""
    samples, _ = scrape(d)
    code, _, page = d.get("/", timeout=20)
    banner = code == 200 and 'id="state-problem"' in page
    return (prom.value(samples, "iodrift_state_writable"),
            prom.value(samples, "iodrift_state_save_errors_total"), banner, status.latest())


def scenario(work, label, state, errno_text, targets, writable_again=None):
    config = write_config(work.path(f"{label}.yaml"), [
        {"name": PROBE, "kind": "cached", "target": targets[0], "interval": "500ms",
         "size": "2MiB", "timeout": "10s"},
        {"name": AUTO, "kind": "buffered", "target": targets[1], "interval": "1s",
         "size": "auto", "timeout": "10s"}], state)
    status = StatusLines(work.path(f"{label}.notify"))
    with Daemon("--config", config, "--state-dir", state, env=status.env) as d:
        start = time.monotonic()
        seen_runs = {PROBE: 0, AUTO: 0}
        baseline = {PROBE: None, AUTO: None}
        errors_seen = []
        # More than two save intervals: the failing save is retried at least twice.
        while time.monotonic() - start < 2 * SAVE_INTERVAL + 5:
            samples, _ = scrape(d)
            for probe in (PROBE, AUTO):
                ok = prom.runs(samples, probe, "ok")
                if ok < seen_runs[probe]:
                    fail(f"{label}: run count of {probe} went backwards")
                seen_runs[probe] = ok
                baseline[probe] = prom.value(samples, "iodrift_probe_baseline_bytes_per_second",
                                             probe=probe) or baseline[probe]
            if prom.value(samples, "iodrift_state_writable") != 0:
                fail(f"{label}: iodrift_state_writable is not 0 while saves fail")
            errors_seen.append(prom.value(samples, "iodrift_state_save_errors_total") or 0)
            time.sleep(0.5)
        for probe in (PROBE, AUTO):
            if seen_runs[probe] < 6:
                fail(f"{label}: only {seen_runs[probe]:.0f} ok runs of {probe} in "
                     f"{2 * SAVE_INTERVAL + 5} s")
            if not baseline[probe]:
                suspect = machine_state_only(d, probe)
                if suspect:
                    # Runs under other work's io or memory pressure are kept out of the baseline,
                    # rightly; what this test checks needs a baseline to save.
                    skip(f"{label}: no baseline of {probe} after {seen_runs[probe]:.0f} ok runs, "
                         f"every one kept out for the machine's state only (the last run's "
                         f"suspects: {suspect}); needs a quieter machine")
                fail(f"{label}: no baseline of {probe} exported after {seen_runs[probe]:.0f} ok "
                     f"runs: {d.stderr()[-2000:]}")
        if not errors_seen or errors_seen[-1] < 2 or errors_seen[-1] <= errors_seen[0]:
            fail(f"{label}: iodrift_state_save_errors_total does not grow with the retries: "
                 f"{errors_seen[:1]} … {errors_seen[-1:]}")
        warns = warnings(d.stderr())
        if len(warns) != 2:
            fail(f"{label}: {len(warns)} warnings, want exactly 2 (baselines, calibration):\n"
                 + "\n".join(warns))
        base_w = [w for w in warns if "baselines: cannot save" in w]
        cal_w = [w for w in warns if f"probe={AUTO} calibration: cannot save" in w]
        if len(base_w) != 1 or errno_text.lower() not in base_w[0].lower() \
                or "in memory" not in base_w[0]:
            fail(f"{label}: the baselines warning is not clear: {warns}")
        if len(cal_w) != 1 or errno_text.lower() not in cal_w[0].lower() \
                or "in memory" not in cal_w[0]:
            fail(f"{label}: the calibration warning is not clear: {warns}")
        writable, errors, banner, line = wait_for(
            f"{label}: the status line saying the state dir is not writable",
            lambda: (lambda s: s if s[3] and s[3].startswith(STATE_PROBLEM) else None)(
                state_signals(d, status)), 15)
        if not banner:
            fail(f"{label}: no state-problem banner on the status page")
        if errno_text.lower() not in line.lower():
            fail(f"{label}: the status line does not say why: {line}")
        print(f"{label}: {seen_runs[PROBE]:.0f}/{seen_runs[AUTO]:.0f} ok runs, baselines "
              f"{baseline[PROBE]:.3g}/{baseline[AUTO]:.3g} B/s, {errors:.0f} save errors; "
              f"status: {line}")
        leftovers = [n for n in os.listdir(state)
                     if n.startswith("baselines") or n == "calibration"]
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
            for probe in (PROBE, AUTO):
                if not any(line.startswith(f"probe {probe} ") for line in lines):
                    fail(f"{label}: the saved file has no line for {probe}: {lines}")
            wait_for(f"{label}: the calibration of {AUTO} saved",
                     lambda: os.path.exists(os.path.join(state, "calibration", AUTO)), 15)
            wait_for(f"{label}: metric, banner and status line clear once writable",
                     lambda: (lambda s: s[0] == 1 and not s[2] and s[3]
                              and not s[3].startswith(STATE_PROBLEM))(state_signals(d, status)),
                     15)
            print(f"{label}: saved again once writable ({len(lines)} lines); signals cleared")
        if d.stop() != 0:
            fail(f"{label}: iodriftd did not exit 0 on SIGTERM")
    status.close()


with Scratch("statedir") as work:
    targets = [work.path("target.dat"), work.path("auto.dat")]
    for target in targets:
        with open(target, "wb") as f:
            f.write(os.urandom(4 << 20))

    # Read-only bind mount, then writable again.
    os.makedirs(work.path("state-rw"))
    ro = work.mount(work.path("state-rw"), "state-ro", "--bind")
    work.remount_ro(ro)
    scenario(work, "readonly", ro, "Read-only file system", targets,
             writable_again=lambda: sh("mount", "-o", "remount,bind,rw", ro))

    # A full filesystem.
    dev = work.loop(2 << 20, "full", mkfs_args=("-b", "1024", "-m", "0"))
    full = work.mount(dev, "state-full")
    fill_filesystem(full)
    print(f"full: {os.statvfs(full).f_bavail} free blocks")
    os.makedirs(os.path.join(full, "lost+found"), exist_ok=True)
    scenario(work, "full", full, "No space left on device", targets)
print("ok")
