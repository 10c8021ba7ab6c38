#!/usr/bin/env python3
"""`iodriftd --once --json` on a real loop device, a regular file on ext4 and a directory.

Needs root (losetup, mkfs.ext4, mount); exits 77 otherwise. Asserts every kind succeeds on each
target type that supports it, figures are positive, the block device's bytes are unchanged
(sha256 before/after) and its write counter did not move, and only the probe's own files exist.
"""
import json
import os
import subprocess

from iodrift_test.config import write_config
from iodrift_test.daemon import binary
from iodrift_test.devices import Scratch, need_root, sha256_file as sha256
from iodrift_test.skip import fail

need_root("mkfs.ext4")


def writes(dev):
    return int(open(f"/sys/block/{os.path.basename(dev)}/stat").read().split()[4])


with Scratch("loop") as scratch:
    work = scratch.dir
    raw = scratch.loop(64 << 20, "raw", fill_random=True, mkfs=False,
                       losetup_args=("--direct-io=on",))
    # Sparse: room for the probe file above iodrift's free-space reserve (max(5 %, 1 GiB)).
    mnt = scratch.mount(scratch.loop(2 << 30, "fs"), "mnt")
    probe_dir = os.path.join(mnt, "probes")
    os.makedirs(probe_dir)
    data_file = os.path.join(mnt, "data.bin")
    with open(data_file, "wb") as f:
        f.write(os.urandom(32 << 20))
        os.fsync(f.fileno())
    file_sum = sha256(data_file)

    probes = []
    for kind in ("cached", "buffered", "direct", "random"):
        probes.append((f"dev-{kind}", kind, raw))
        probes.append((f"file-{kind}", kind, data_file))
    for kind in ("cached", "buffered", "direct", "random", "metadata"):
        probes.append((f"dir-{kind}", kind, probe_dir))
    probes.append(("mem", "memory", None))
    config = os.path.join(work, "iodrift.yaml")
    probe_dicts = []
    for name, kind, target in probes:
        p = {"name": name, "kind": kind, "timeout": "30s"}
        if target:
            p["target"] = target
        if kind in ("buffered", "direct"):
            # The size bounds the read, not the clock: a busy machine reads 16 MiB in more
            # than the default 250 ms budget, and the bytes are what this test checks.
            p["size"] = "16MiB"
            p["time_budget"] = "20s"
        probe_dicts.append(p)
    write_config(config, probe_dicts, f"{work}/state", dbus=None, log_level=None)

    before, writes_before = sha256(raw), writes(raw)
    res = subprocess.run([binary(), "--once", "--json", "--config", config],
                         capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        fail(f"--once exited {res.returncode}:\n{res.stdout[-4000:]}\n{res.stderr[-2000:]}")
    doc = json.loads(res.stdout)
    got = {p["name"]: p for p in doc["probes"]}
    for name, kind, target in probes:
        p = got.get(name)
        if p is None or not p["success"]:
            fail(f"{name}: {p and p['error']}")
        figure = p["throughput_bytes_per_second"] or (p["ops_per_second"] or {}).get("read") or \
            (p["ops_per_second"] or {}).get("create")
        if not figure or figure <= 0:
            fail(f"{name}: no positive figure in {p}")
        if target == raw and p["target_info"]["fstype"] != "block":
            fail(f"{name}: target_info.fstype {p['target_info']['fstype']!r}, want block")
        if target in (data_file, probe_dir) and p["target_info"]["fstype"] != "ext4":
            fail(f"{name}: target_info.fstype {p['target_info']['fstype']!r}, want ext4")
    if got["dev-direct"]["target_info"]["loop_dio"] != "1":
        fail(f"dev-direct: loop_dio {got['dev-direct']['target_info']['loop_dio']!r}, want '1'")
    if got["dev-random"]["mode"] != "direct":
        fail(f"dev-random: mode {got['dev-random']['mode']!r}, want 'direct'")
    if got["dev-buffered"]["bytes"] != 16 << 20:
        fail(f"dev-buffered read {got['dev-buffered']['bytes']} bytes, want 16 MiB")
    if sha256(raw) != before:
        fail("the block device's bytes changed")
    if writes(raw) != writes_before:
        fail("the block device's write counter moved")
    if sha256(data_file) != file_sum:
        fail("the probed regular file changed")
    if sorted(os.listdir(mnt)) != ["data.bin", "lost+found", "probes"]:
        fail(f"probes wrote outside their directory: {sorted(os.listdir(mnt))}")
    if sorted(os.listdir(probe_dir)) != ["iodrift-meta", "iodrift-probe.dat"]:
        fail(f"probe dir holds {sorted(os.listdir(probe_dir))}")
    print(f"ok: {len(probes)} probes on a loop device, an ext4 file and a directory")
