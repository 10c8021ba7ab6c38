#!/usr/bin/env python3
"""The metadata probe on a directory it cannot write: every run is an error with a clear
message, and it never leaves a file behind.

  * Disk full mid-run: a 4 MiB ext4 (1 KiB blocks, few inodes, no reserved blocks) whose data
    blocks are filled by one file and whose inodes are used up by empty files except 10, with
    <dir>/iodrift-meta made beforehand. Each run creates f000…f009, fails on f010 with ENOSPC
    and must remove the 10 it made.
  * Read-only: the probe directory on a read-only bind mount (EROFS).
  * Permission denied: the daemon runs as `nobody` (setpriv) on a directory owned by nobody
    with mode 0500 (EACCES).

For each: iodrift_probe_runs_total{result="error"} grows run after run, no ok run,
iodrift_probe_success 0, the log names the probe, the path and the errno text, /metrics keeps
answering, and after SIGTERM (exit 0) the filesystem holds exactly what it held before
(apart from an empty iodrift-meta directory).

Needs root (losetup, mkfs.ext4, mount, setpriv); exits 77 otherwise.
"""
import errno
import os
import pwd

from iodrift_test import prom
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.devices import Scratch, diff_trees, need_root, tree_digest
from iodrift_test.skip import fail
from iodrift_test.wait import wait_for


need_root("mkfs.ext4", "setpriv")
NOBODY = pwd.getpwnam("nobody")


def scenario(work, label, probe_dir, errno_text, tree_root, as_nobody=False):
    state = work.path(f"state-{label}")
    os.makedirs(state)
    if as_nobody:
        os.chown(state, NOBODY.pw_uid, NOBODY.pw_gid)
    name = f"meta-{label}"
    config = write_config(work.path(f"{label}.yaml"), [
        {"name": name, "kind": "metadata", "target": probe_dir, "interval": "500ms",
         "timeout": "10s", "files": 64}], state)
    os.chmod(config, 0o644)
    tree_before = tree_digest(tree_root)
    d = Daemon("--config", config, "--state-dir", state)
    if as_nobody:
        d.args = ["setpriv", f"--reuid={NOBODY.pw_uid}", f"--regid={NOBODY.pw_gid}",
                  "--clear-groups", "--"] + d.args
    with d:
        def errors_seen():
            samples, _ = scrape(d)
            if prom.runs(samples, name, "ok"):
                fail(f"{label}: a run succeeded on an unwritable directory")
            return prom.runs(samples, name, "error") >= 3 and samples
        samples = wait_for(f"{label}: 3 error runs", errors_seen, 60)
        success = prom.value(samples, "iodrift_probe_success", probe=name)
        if success != 0:
            fail(f"{label}: iodrift_probe_success is {success}, want 0")
        lines = [line for line in d.stderr().splitlines()
                 if f"probe={name}" in line and "result=error" in line]
        if not lines:
            fail(f"{label}: no error line for {name} in the log:\n{d.stderr()[-2000:]}")
        if errno_text.lower() not in lines[-1].lower() or probe_dir not in lines[-1]:
            fail(f"{label}: error line does not name {probe_dir!r} and {errno_text!r}: "
                 f"{lines[-1]}")
        print(f"{label}: {prom.runs(samples, name, 'error'):.0f} error runs; log: {lines[-1]}")
        if d.stop() != 0:
            fail(f"{label}: iodriftd did not exit 0 on SIGTERM: {d.stderr()[-2000:]}")
    changes = [c for c in diff_trees(tree_before, tree_digest(tree_root))
               if not c.startswith("changed .")]  # the root's own mode line
    meta = os.path.join(probe_dir, "iodrift-meta")
    leftovers = sorted(os.listdir(meta)) if os.path.isdir(meta) else []
    if leftovers:
        fail(f"{label}: files left in {meta}: {leftovers[:10]}")
    changes = [c for c in changes if c != f"created {os.path.relpath(meta, tree_root)}"]
    if changes:
        fail(f"{label}: the filesystem changed: {'; '.join(changes[:10])}")


with Scratch("metaerr") as work:
    # Disk full part-way through the create phase.
    dev = work.loop(4 << 20, "tiny", mkfs_args=("-b", "1024", "-N", "128", "-m", "0"))
    mnt = work.mount(dev, "tiny")
    probe_dir = os.path.join(mnt, "probes")
    os.makedirs(os.path.join(probe_dir, "iodrift-meta"), mode=0o700)
    os.makedirs(os.path.join(mnt, "filler"))
    with open(os.path.join(mnt, "filler", "blocks"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\xa5" * 65536)
                f.flush()
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
    fillers = []
    try:
        while True:
            path = os.path.join(mnt, "filler", f"i{len(fillers):05d}")
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            fillers.append(path)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    for path in fillers[-10:]:
        os.unlink(path)
    os.sync()
    st = os.statvfs(mnt)
    print(f"disk full: {st.f_bavail} free blocks, {st.f_favail} free inodes")
    scenario(work, "enospc", probe_dir, "No space left on device", mnt)

    # Read-only bind mount.
    os.makedirs(work.path("rw", "probes"))
    ro = work.mount(work.path("rw"), "ro", "--bind")
    work.remount_ro(ro)
    scenario(work, "erofs", os.path.join(ro, "probes"), "Read-only file system", work.path("rw"))

    # Permission denied for an unprivileged daemon.
    denied = work.path("denied")
    os.makedirs(os.path.join(denied, "probes"))
    os.chown(os.path.join(denied, "probes"), NOBODY.pw_uid, NOBODY.pw_gid)
    os.chmod(os.path.join(denied, "probes"), 0o500)
    scenario(work, "eacces", os.path.join(denied, "probes"), "Permission denied", denied,
             as_nobody=True)
print("ok")
