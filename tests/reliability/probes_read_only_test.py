#!/usr/bin/env python3
"""Probes never write to what they measure, over full daemon cycles (not just --once).

  * Block device: a 64 MiB loop device carrying ext4 (unmounted). iodriftd runs cached,
    buffered, direct and random against the device node itself until each has completed at
    least 2 runs; SHA-256 of the whole device before and after are equal and the device's
    write counter (/sys/block/loopN/stat) did not move.
  * Directory: the same filesystem mounted, seeded with files (random data, a sparse file, a
    subdirectory, a symlink, modes 0400/0644). A metadata probe on <mnt>/probes completes at
    least 3 cycles; every file and directory outside <mnt>/probes/iodrift-meta (content hash,
    size, mode, link target) is unchanged, nothing was created beside it, and the probe
    directory holds none of the probe's files between runs.

Needs root (losetup, mkfs.ext4, mount); exits 77 otherwise.
"""
import os
import time

from iodrift_test import prom
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.devices import Scratch, diff_trees, need_root, sha256_file, tree_digest
from iodrift_test.skip import fail
from iodrift_test.wait import wait_for


need_root("mkfs.ext4")
BLOCK_KINDS = ("cached", "buffered", "direct", "random")


def writes(dev):
    with open(f"/sys/block/{os.path.basename(dev)}/stat") as f:
        return int(f.read().split()[4])


def wait_runs(d, names, want, timeout):
    def done():
        samples, _ = scrape(d)
        for name in names:
            errors = prom.runs(samples, name, "error")
            if errors:
                fail(f"{name}: {errors:.0f} error runs; log:\n{d.stderr()[-3000:]}")
            if prom.runs(samples, name, "ok") < want:
                return False
        return samples
    return wait_for(f"{want} ok runs of {names}", done, timeout)


with Scratch("readonly") as work:
    dev = work.loop(64 << 20, "dev")
    os.makedirs(work.path("state"))

    # Part 1: every read kind against the block device node.
    probes = [{"name": f"dev-{kind}", "kind": kind, "target": dev, "interval": "1s",
               "timeout": "20s"} for kind in BLOCK_KINDS]
    for p in probes:
        if p["kind"] in ("buffered", "direct"):
            p["size"] = "16MiB"
    config = write_config(work.path("block.yaml"), probes, work.path("state"))
    before, writes_before = sha256_file(dev), writes(dev)
    with Daemon("--config", config, "--state-dir", work.path("state")) as d:
        samples = wait_runs(d, [p["name"] for p in probes], 2, 120)
        for p in probes:
            ok = prom.runs(samples, p["name"], "ok")
            print(f"{p['name']}: {ok:.0f} ok runs")
        if d.stop() != 0:
            fail(f"iodriftd did not exit 0 on SIGTERM: {d.stderr()[-2000:]}")
    after, writes_after = sha256_file(dev), writes(dev)
    print(f"device sha256 before {before[:16]}… after {after[:16]}…; "
          f"writes {writes_before} -> {writes_after}")
    if after != before:
        fail("the block device's bytes changed during the probe cycles")
    if writes_after != writes_before:
        fail(f"the block device's write counter moved ({writes_before} -> {writes_after})")

    # Part 2: metadata on a directory of the mounted filesystem.
    mnt = work.mount(dev, "mnt")
    os.makedirs(os.path.join(mnt, "probes"))
    os.makedirs(os.path.join(mnt, "data", "deep"))
    with open(os.path.join(mnt, "data", "random.bin"), "wb") as f:
        f.write(os.urandom(4 << 20))
    with open(os.path.join(mnt, "data", "deep", "sparse.bin"), "wb") as f:
        f.truncate(8 << 20)
        f.seek(1 << 20)
        f.write(b"x" * 4096)
    with open(os.path.join(mnt, "probes", "neighbour.txt"), "w") as f:
        f.write("a file of someone else in the probe directory\n")
    os.chmod(os.path.join(mnt, "probes", "neighbour.txt"), 0o400)
    os.symlink("data/random.bin", os.path.join(mnt, "link"))
    os.sync()
    exclude = {"probes/iodrift-meta"}
    tree_before = tree_digest(mnt, exclude)

    probes = [{"name": "dir-metadata", "kind": "metadata", "target": os.path.join(mnt, "probes"),
               "interval": "500ms", "timeout": "20s"}]
    config = write_config(work.path("meta.yaml"), probes, work.path("state"))
    with Daemon("--config", config, "--state-dir", work.path("state")) as d:
        samples = wait_runs(d, ["dir-metadata"], 3, 120)
        create = prom.value(samples, "iodrift_probe_ops_per_second", probe="dir-metadata",
                            op="create")
        print(f"dir-metadata: {prom.runs(samples, 'dir-metadata', 'ok'):.0f} ok runs, "
              f"create {create} ops/s")
        if d.stop() != 0:
            fail(f"iodriftd did not exit 0 on SIGTERM: {d.stderr()[-2000:]}")
    time.sleep(0.1)
    os.sync()
    tree_after = tree_digest(mnt, exclude)
    changes = diff_trees(tree_before, tree_after)
    # The probe directory itself may be created; nothing else.
    changes = [c for c in changes if c != "created probes/iodrift-meta"]
    if changes:
        fail("files outside the probe directory changed: " + "; ".join(changes[:20]))
    leftovers = sorted(os.listdir(os.path.join(mnt, "probes", "iodrift-meta")))
    if leftovers:
        fail(f"the metadata probe left files behind: {leftovers[:10]}")
    print(f"{len(tree_before)} entries outside the probe directory unchanged")
print("ok")
