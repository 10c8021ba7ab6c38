#!/usr/bin/env python3
"""A target that disappears between runs and comes back.

Part 1 (any user with a local disk): a target file is deleted → the next runs are errors whose
message names the file; the file is recreated → the next runs succeed again.
Part 2 (root, losetup): a loop device is detached (`losetup -d`) → error results; it is attached
again to the same /dev/loopN → the next runs succeed again. The daemon never crashes and exits 0
on SIGTERM.

Exits 77 (skipped) when it is not root or losetup is missing (part 1 alone would hide that part
2 never ran).
"""
import errno
import fcntl
import os
import shutil
import subprocess
import tempfile
import time

from iodrift_test import prom
from iodrift_test.config import write_temp_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.skip import fail, need_tools, require_root
from iodrift_test.wait import wait_for


require_root("needs root (loop devices)")
need_tools("losetup", reason="{tool} not found (util-linux)")

INTERVAL = "1s"
FILE_BYTES = 8 << 20


def write_data(path, nbytes):
    """Real bytes (not a sparse/fallocated file), fsynced."""
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for _ in range(nbytes // len(block)):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())


def counts(samples, name):
    return {r: prom.runs(samples, name, r) for r in ("ok", "error", "timeout", "skipped")}


def cycle(d, names, break_it, repair, want_in_error, label):
    """ok → break_it() → errors naming want_in_error → repair() → ok again."""
    def all_ok_since(base):
        s, _ = scrape(d)
        return s if all(prom.runs(s, n, "ok") > base.get(n, 0) for n in names) else None

    samples = wait_for(f"{label}: first ok runs of {names}", lambda: all_ok_since({}),
                       timeout=30)
    before = {n: counts(samples, n) for n in names}

    break_it()
    broken_at = time.monotonic()

    def errors_seen():
        s, _ = scrape(d)
        return s if all(prom.runs(s, n, "error") > before[n]["error"] for n in names) else None
    samples = wait_for(f"{label}: error results after the target went away", errors_seen,
                       timeout=20)
    print(f"{label}: error results {time.monotonic() - broken_at:.1f} s after it went away")
    for n in names:
        if prom.value(samples, "iodrift_probe_success", probe=n) != 0:
            fail(f"{label}: iodrift_probe_success{{probe={n}}} is not 0 while gone")
    log = d.stderr()
    error_lines = [line for line in log.splitlines() if "result=error" in line]
    for n in names:
        mine = [line for line in error_lines if f"probe={n} " in line]
        if not mine:
            fail(f"{label}: no error logged for {n}: {log[-1500:]}")
        if want_in_error not in mine[-1]:
            fail(f"{label}: the error of {n} does not name {want_in_error!r}: {mine[-1]}")
        print(f"  {mine[-1].split('error=', 1)[-1]}")
    if d.proc.poll() is not None:
        fail(f"iodriftd exited {d.proc.returncode}: {log[-1500:]}")

    after_error = {n: counts(samples, n) for n in names}
    repair()
    repaired_at = time.monotonic()
    samples = wait_for(f"{label}: ok runs after the target came back",
                       lambda: all_ok_since({n: after_error[n]["ok"] for n in names}),
                       timeout=20)
    print(f"{label}: recovered {time.monotonic() - repaired_at:.1f} s after it came back")
    for n in names:
        if prom.value(samples, "iodrift_probe_success", probe=n) != 1:
            fail(f"{label}: iodrift_probe_success{{probe={n}}} not 1 after recovery")
        c = counts(samples, n)
        if c["timeout"]:
            fail(f"{label}: {n} timed out: {c}")


def part1_file(work):
    target = os.path.join(work, "target.dat")
    write_data(target, FILE_BYTES)
    config = write_temp_config([
        {"name": "file-buffered", "kind": "buffered", "target": target, "interval": INTERVAL,
         "timeout": "10s", "size": "4MiB"},
        {"name": "file-direct", "kind": "direct", "target": target, "interval": INTERVAL,
         "timeout": "10s", "size": "4MiB"},
        {"name": "file-random", "kind": "random", "target": target, "interval": INTERVAL,
         "timeout": "10s", "requests": 16},
    ], directory=work)
    with Daemon("--config", config) as d:
        cycle(d, ["file-buffered", "file-direct", "file-random"],
              break_it=lambda: os.unlink(target),
              repair=lambda: write_data(target, FILE_BYTES),
              want_in_error=target, label="deleted file")
        if d.stop() != 0:
            fail(f"iodriftd did not exit 0 on SIGTERM: {d.stderr()[-1500:]}")


def losetup(*args):
    res = subprocess.run(["losetup", *args], capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        fail(f"losetup {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout.strip()


def backing_of(device):
    """The backing file of loop `device`, or None when it is detached."""
    name = os.path.basename(device)
    try:
        with open(f"/sys/block/{name}/loop/backing_file") as f:
            return f.read().strip()
    except OSError:
        return None


LOOP_CTL_ADD, LOOP_CTL_REMOVE = 0x4C80, 0x4C81


def private_loop_device():
    """Creates /dev/loopN with a high N (64-255) through /dev/loop-control and returns N.

    `losetup -f` and LOOP_CTL_GET_FREE hand out the lowest unbound device, so while this one is
    detached another program on the machine (a parallel test) will not take its number; the
    re-attach to the same /dev/loopN, the configured target, cannot then lose a race.
    """
    fd = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
    try:
        start = 64 + os.getpid() % 128
        for i in range(192):
            n = 64 + (start - 64 + i) % 192
            try:
                return fcntl.ioctl(fd, LOOP_CTL_ADD, n)
            except OSError as e:
                if e.errno != errno.EEXIST:
                    fail(f"LOOP_CTL_ADD {n}: {e}")
        fail("no free loop device number in 64-255")
    finally:
        os.close(fd)


def remove_loop_device(n):
    fd = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
    try:
        for _ in range(50):  # EBUSY while the last opener (a probe) still closes it
            try:
                fcntl.ioctl(fd, LOOP_CTL_REMOVE, n)
                return
            except OSError as e:
                if e.errno == errno.ENODEV or e.errno == errno.ENXIO:
                    return
                time.sleep(0.1)
    finally:
        os.close(fd)


def part2_loop(work):
    backing = os.path.join(work, "loop.img")
    write_data(backing, FILE_BYTES)
    n = private_loop_device()
    device = f"/dev/loop{n}"
    try:
        wait_for(f"{device} node", lambda: os.path.exists(device), timeout=10, interval=0.05)
        losetup(device, backing)
        config = write_temp_config([
            {"name": "loop-buffered", "kind": "buffered", "target": device, "interval": INTERVAL,
             "timeout": "10s", "size": "4MiB"},
            {"name": "loop-direct", "kind": "direct", "target": device, "interval": INTERVAL,
             "timeout": "10s", "size": "4MiB"},
        ], directory=work)

        def detach():
            losetup("-d", device)
            # losetup -d on a busy device only sets autoclear; it goes at the probe's last close.
            wait_for(f"{device} detached", lambda: backing_of(device) is None, timeout=10,
                     interval=0.05)

        def reattach():
            losetup(device, backing)  # the same /dev/loopN: the configured target
        with Daemon("--config", config) as d:
            cycle(d, ["loop-buffered", "loop-direct"], break_it=detach, repair=reattach,
                  want_in_error=device, label=f"detached {device}")
            if d.stop() != 0:
                fail(f"iodriftd did not exit 0 on SIGTERM: {d.stderr()[-1500:]}")
    finally:
        if backing_of(device) == backing:
            subprocess.run(["losetup", "-d", device], capture_output=True)
        remove_loop_device(n)


work = tempfile.mkdtemp(prefix="iodrift-gone-", dir="/var/tmp")
try:
    part1_file(work)
    part2_loop(work)
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
