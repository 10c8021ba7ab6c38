#!/usr/bin/env python3
"""The filesystem holding a directory target is unmounted (lazily) between runs, then mounted
again.

Case A, target = a subdirectory of the mount: after `umount -l` the path no longer exists → error
results naming it; after mounting again → ok.
Case B, target = the mount point itself: after `umount -l` the path is still a directory — the
empty mount point on the parent filesystem. Measuring there would report another disk's figures
under this target's name (and write a probe file of up to 128 MiB onto the parent filesystem), so
the runs must be errors with a clear message; after mounting again → ok. Nothing iodrift makes
may appear in the bare mount point.
Case C, another filesystem mounted at the mount point: refused with an error naming both devices
and "Reload", nothing written into it; after SIGHUP → ok.

Needs root, losetup and mkfs.ext4; otherwise exits 77 (skipped).
"""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from iodrift_test import prom
from iodrift_test.config import write_temp_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.skip import fail, need_tools, require_root
from iodrift_test.wait import wait_for


require_root("needs root (mount)")
need_tools("losetup", "mkfs.ext4", "mount", "umount", reason="{tool} not found")

# Sparse; room for the probe file (calibrated sizes go up to 128 MiB) above iodrift's free-space
# reserve (max(5 %, 1 GiB) stays available).
IMAGE_BYTES = 2 << 30
NAMES = ["fs-buffered", "fs-metadata"]


def run(*cmd):
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        fail(f"{' '.join(cmd)}: {res.stderr.strip()}")
    return res.stdout


def mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def counts(samples, name):
    return {r: prom.runs(samples, name, r) for r in ("ok", "error", "timeout", "skipped")}


def case(work, device, mnt, target, label):
    os.makedirs(target, exist_ok=True)
    config = write_temp_config([
        {"name": "fs-buffered", "kind": "buffered", "target": target, "interval": "1s",
         "timeout": "20s", "size": "4MiB"},
        {"name": "fs-metadata", "kind": "metadata", "target": target, "interval": "1s",
         "timeout": "20s", "files": 16},
    ], directory=work)
    with Daemon("--config", config) as d:
        def ok_since(base):
            s, _ = scrape(d)
            return s if all(prom.runs(s, n, "ok") > base.get(n, 0) for n in NAMES) else None

        samples = wait_for(f"{label}: first ok runs", lambda: ok_since({}), timeout=40)
        before = {n: counts(samples, n) for n in NAMES}

        run("umount", "-l", mnt)
        gone_at = time.monotonic()
        # A run already in flight at the unmount holds its open files and may still finish ok
        # (a lazy unmount keeps the filesystem alive for open files). Runs of one probe never
        # overlap, so once each probe has recorded an error, every later run started after the
        # unmount: from then on, an ok run is the bug this test is about.
        first = wait_for(
            f"{label}: an error run of each probe after umount -l",
            lambda: (lambda s: s if all(prom.runs(s, n, "error") > before[n]["error"]
                                        for n in NAMES) else None)(scrape(d)[0]),
            timeout=40)
        settled = {n: counts(first, n) for n in NAMES}
        # Let several more runs come due on the bare mount point.
        time.sleep(3.5)
        samples, _ = scrape(d)
        during = {n: counts(samples, n) for n in NAMES}
        made = sorted(os.listdir(mnt)) if os.path.isdir(mnt) else []
        print(f"{label}: {time.monotonic() - gone_at:.1f} s after umount -l: "
              f"in flight {  {n: settled[n]['ok'] - before[n]['ok'] for n in NAMES} } ok; then "
              f"{ {n: {k: v - settled[n][k] for k, v in during[n].items()} for n in NAMES} }; "
              f"bare mount point holds {made}")
        log = d.stderr().splitlines()
        for n in NAMES:
            ok_while_gone = during[n]["ok"] - settled[n]["ok"]
            errors = during[n]["error"] - settled[n]["error"]
            if ok_while_gone:
                # The bug this guards against: a directory target that does not remember the
                # filesystem it is on measures the parent filesystem after an unmount.
                fail(
                    f"{label}: {n} reported {ok_while_gone:g} ok runs after its filesystem was "
                    f"unmounted: it measured (and wrote its probe files into) the bare mount "
                    f"point on the parent filesystem instead of reporting an error")
            if not errors:
                fail(f"{label}: {n} recorded no further error in 3.5 s after its first "
                     f"error run on the unmounted target")
            mine = [line for line in log if f"probe={n} " in line and "result=error" in line]
            if not mine or target not in mine[-1]:
                fail(f"{label}: the error of {n} does not name {target}: "
                     f"{mine[-1] if mine else 'no error logged'}")
            print(f"  {mine[-1].split('error=', 1)[-1]}")
        if made:
            fail(f"{label}: iodrift wrote {made} into the bare mount point {mnt}")

        # The same loop device again: iodriftd accepts the filesystem back only on the device it
        # first saw (`mount -o loop` may pick another one while the lazily unmounted superblock
        # still holds the first).
        run("mount", device, mnt)
        back_at = time.monotonic()
        samples = wait_for(f"{label}: ok runs after mounting again",
                           lambda: ok_since({n: during[n]["ok"] for n in NAMES}), timeout=30)
        print(f"{label}: recovered {time.monotonic() - back_at:.1f} s after mounting again")
        if d.stop() != 0:
            fail(f"iodriftd did not exit 0 on SIGTERM: {d.stderr()[-1500:]}")
    os.unlink(config)


def case_other_filesystem(work, device, other, mnt):
    """The mount point gets *another* filesystem: refused (error naming both devices) until a
    reload, which accepts it."""
    config = write_temp_config([
        {"name": "fs-metadata", "kind": "metadata", "target": mnt, "interval": "1s",
         "timeout": "20s", "files": 16},
    ], directory=work)
    label = "another filesystem"
    with Daemon("--config", config) as d:
        def count(result):
            return prom.runs(scrape(d)[0], "fs-metadata", result)
        wait_for(f"{label}: a first ok run", lambda: count("ok") >= 1, timeout=40)
        run("umount", mnt)
        run("mount", other, mnt)
        errors = count("error")
        wait_for(f"{label}: an error run on the other filesystem",
                 lambda: count("error") > errors, timeout=30)
        mine = [line for line in d.stderr().splitlines()
                if "probe=fs-metadata " in line and "result=error" in line]
        if not mine or "is now on device" not in mine[-1] or "Reload" not in mine[-1]:
            fail(f"{label}: the error does not name the device change and the way out: "
                 f"{mine[-1] if mine else 'no error logged'}")
        if os.listdir(mnt) != ["lost+found"]:
            fail(f"{label}: iodrift wrote into the other filesystem before the reload: "
                 f"{sorted(os.listdir(mnt))}")
        ok = count("ok")
        d.proc.send_signal(signal.SIGHUP)
        reloaded_at = time.monotonic()
        wait_for(f"{label}: ok runs after a reload", lambda: count("ok") > ok, timeout=30)
        print(f"{label}: refused until the reload, ok {time.monotonic() - reloaded_at:.1f} s after "
              f"it; error was: {mine[-1].split('error=', 1)[-1]}")
        if d.stop() != 0:
            fail(f"iodriftd did not exit 0 on SIGTERM: {d.stderr()[-1500:]}")
    run("umount", mnt)
    run("mount", device, mnt)
    os.unlink(config)


work = tempfile.mkdtemp(prefix="iodrift-umount-", dir="/var/tmp")
image = os.path.join(work, "fs.img")
mnt = os.path.join(work, "mnt")
device = None
try:
    with open(image, "wb") as f:
        f.truncate(IMAGE_BYTES)
    run("mkfs.ext4", "-q", "-F", image)
    device = run("losetup", "--find", "--show", image).strip()
    os.makedirs(mnt)
    run("mount", device, mnt)
    case(work, device, mnt, os.path.join(mnt, "data"), "subdirectory target")
    if not mounted(mnt):
        run("mount", device, mnt)
    case(work, device, mnt, mnt, "mount-point target")
    if not mounted(mnt):
        run("mount", device, mnt)
    other_image = os.path.join(work, "other.img")
    with open(other_image, "wb") as f:
        f.truncate(64 << 20)
    run("mkfs.ext4", "-q", "-F", other_image)
    other = run("losetup", "--find", "--show", other_image).strip()
    try:
        case_other_filesystem(work, device, other, mnt)
    finally:
        subprocess.run(["umount", other], capture_output=True)
        subprocess.run(["losetup", "-d", other], capture_output=True)
finally:
    for _ in range(3):
        if not mounted(mnt):
            break
        subprocess.run(["umount", "-l", mnt], capture_output=True)
    if device:
        # Detaching waits for nothing: a lazily unmounted fs still on it keeps it until released.
        subprocess.run(["losetup", "-d", device], capture_output=True)
    shutil.rmtree(work, ignore_errors=True)
print("ok")
