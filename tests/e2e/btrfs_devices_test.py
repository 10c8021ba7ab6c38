#!/usr/bin/env python3
"""A btrfs filesystem spanning three loop devices (data raid0, metadata raid1) as a file target:
iodrift_probe_target_info names every device of the filesystem
(/sys/fs/btrfs/<fsid>/devices/), not only the one the mount names; a single-device ext4 file
target names its one disk.

Needs root, losetup and mkfs.btrfs (btrfs-progs) and the btrfs module; otherwise exits 77.
"""
import os
import subprocess

from iodrift_test import prom
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.devices import Scratch, need_root, sh
from iodrift_test.skip import fail, skip, skip_guaranteed
from iodrift_test.wait import wait_for

need_root("mkfs.btrfs", "mkfs.ext4")

MIB = 1 << 20


def write_random(path, size):
    with open(path, "wb") as f:
        for _ in range(size // MIB):
            f.write(os.urandom(MIB))
        f.flush()
        os.fsync(f.fileno())


def main():
    with Scratch("btrfs") as s:
        devs = [s.loop(160 * MIB, f"b{i}", mkfs=False) for i in range(3)]
        res = subprocess.run(["mkfs.btrfs", "-q", "-f", "-d", "raid0", "-m", "raid1", *devs],
                             capture_output=True, text=True)
        if res.returncode != 0:
            skip_guaranteed(f"mkfs.btrfs failed: {res.stderr.strip()}")
        mnt = s.path("mnt")
        os.makedirs(mnt)
        res = subprocess.run(["mount", "-t", "btrfs", devs[0], mnt], capture_output=True,
                             text=True)
        if res.returncode != 0:
            skip(f"cannot mount btrfs (module missing?): {res.stderr.strip()}")
        s._mounts.append(mnt)
        data = os.path.join(mnt, "data.bin")
        write_random(data, 24 * MIB)
        ext4 = s.mount(s.loop(64 * MIB, "e"), "ext4mnt")
        single = os.path.join(ext4, "data.bin")
        write_random(single, 8 * MIB)
        sh("sync")
        config = write_config(s.path("iodrift.yaml"), [
            {"name": "btrfs-buffered", "kind": "buffered", "target": data, "interval": "2s",
             "size": "8MiB"},
            {"name": "ext4-buffered", "kind": "buffered", "target": single, "interval": "2s",
             "size": "4MiB"},
        ], s.path("state"))
        with Daemon("--config", config) as d:
            def ran():
                samples, _ = scrape(d)
                ok = all(prom.runs(samples, p, "ok") >= 1
                         for p in ("btrfs-buffered", "ext4-buffered"))
                return samples if ok else None

            samples = wait_for("an ok run of both probes", ran, timeout=90, interval=0.5)
        infos = {ls["probe"]: ls for n, ls, _ in samples if n == "iodrift_probe_target_info"}
        print(f"target_info: {infos}")
        want = ",".join(sorted(os.path.basename(x) for x in devs))
        got = infos.get("btrfs-buffered", {})
        if got.get("devices") != want or got.get("fstype") != "btrfs" or got.get("remote") != "0":
            fail(f"btrfs file target: want devices={want!r} fstype=btrfs remote=0, got {got}")
        ext4_dev = os.path.basename(s._loops[-1])
        got = infos.get("ext4-buffered", {})
        if got.get("devices") != ext4_dev:
            fail(f"ext4 file target: want devices={ext4_dev!r}, got {got}")
    print("PASS")


if __name__ == "__main__":
    main()
