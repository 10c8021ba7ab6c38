#!/usr/bin/env python3
"""`iodriftd --once --json` on a real loop device, a regular file on ext4 and a directory.

Needs root (losetup, mkfs.ext4, mount); exits 77 otherwise. Asserts every kind succeeds on each
target type that supports it, figures are positive, the block device's bytes are unchanged
(sha256 before/after) and its write counter did not move, and only the probe's own files exist.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

if os.geteuid() != 0:
    harness.skip("needs root for losetup and mount")
for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
    if not shutil.which(tool):
        harness.skip(f"{tool} not installed")

work = tempfile.mkdtemp(prefix="iodrift-loop-", dir="/var/tmp")
loops, mounts = [], []


def sh(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def writes(dev):
    return int(open(f"/sys/block/{os.path.basename(dev)}/stat").read().split()[4])


try:
    raw_img = os.path.join(work, "raw.img")
    with open(raw_img, "wb") as f:
        f.write(os.urandom(64 << 20))
        os.fsync(f.fileno())
    raw = sh("losetup", "--show", "-f", "--direct-io=on", raw_img)
    loops.append(raw)
    fs_img = os.path.join(work, "fs.img")
    with open(fs_img, "wb") as f:
        # Sparse: room for the probe file above iodrift's free-space reserve (max(5 %, 1 GiB)).
        f.truncate(2 << 30)
    fsdev = sh("losetup", "--show", "-f", fs_img)
    loops.append(fsdev)
    sh("mkfs.ext4", "-q", "-F", fsdev)
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt)
    sh("mount", fsdev, mnt)
    mounts.append(mnt)
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
    with open(config, "w") as f:
        f.write(f"state_dir: {work}/state\nprobes:\n")
        for name, kind, target in probes:
            f.write(f"  - name: {name}\n    kind: {kind}\n    timeout: 30s\n")
            if target:
                f.write(f"    target: {target}\n")
            if kind in ("buffered", "direct"):
                f.write("    size: 16MiB\n")

    before, writes_before = sha256(raw), writes(raw)
    res = subprocess.run([harness.binary(), "--once", "--json", "--config", config],
                         capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        harness.fail(f"--once exited {res.returncode}:\n{res.stdout[-4000:]}\n{res.stderr[-2000:]}")
    doc = json.loads(res.stdout)
    got = {p["name"]: p for p in doc["probes"]}
    for name, kind, target in probes:
        p = got.get(name)
        if p is None or not p["success"]:
            harness.fail(f"{name}: {p and p['error']}")
        figure = p["throughput_bytes_per_second"] or (p["ops_per_second"] or {}).get("read") or \
            (p["ops_per_second"] or {}).get("create")
        if not figure or figure <= 0:
            harness.fail(f"{name}: no positive figure in {p}")
        if target == raw and p["target_info"]["fstype"] != "block":
            harness.fail(f"{name}: target_info.fstype {p['target_info']['fstype']!r}, want block")
        if target in (data_file, probe_dir) and p["target_info"]["fstype"] != "ext4":
            harness.fail(f"{name}: target_info.fstype {p['target_info']['fstype']!r}, want ext4")
    if got["dev-direct"]["target_info"]["loop_dio"] != "1":
        harness.fail(f"dev-direct: loop_dio {got['dev-direct']['target_info']['loop_dio']!r}, want '1'")
    if got["dev-random"]["mode"] != "direct":
        harness.fail(f"dev-random: mode {got['dev-random']['mode']!r}, want 'direct'")
    if got["dev-buffered"]["bytes"] != 16 << 20:
        harness.fail(f"dev-buffered read {got['dev-buffered']['bytes']} bytes, want 16 MiB")
    if sha256(raw) != before:
        harness.fail("the block device's bytes changed")
    if writes(raw) != writes_before:
        harness.fail("the block device's write counter moved")
    if sha256(data_file) != file_sum:
        harness.fail("the probed regular file changed")
    if sorted(os.listdir(mnt)) != ["data.bin", "lost+found", "probes"]:
        harness.fail(f"probes wrote outside their directory: {sorted(os.listdir(mnt))}")
    if sorted(os.listdir(probe_dir)) != ["iodrift-meta", "iodrift-probe.dat"]:
        harness.fail(f"probe dir holds {sorted(os.listdir(probe_dir))}")
    print(f"ok: {len(probes)} probes on a loop device, an ext4 file and a directory")
finally:
    for m in reversed(mounts):
        subprocess.run(["umount", "-l", m], capture_output=True)
    for dev in reversed(loops):
        subprocess.run(["losetup", "-d", dev], capture_output=True)
    shutil.rmtree(work, ignore_errors=True)
