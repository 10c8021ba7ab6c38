#!/usr/bin/env python3
"""The boots record survives a full disk: nothing saved is lost or cut, and the record is saved
whole once there is room again.

The state dir is a 2 MiB ext4 on a loop device; boots are faked with a fixture proc root
(tests/lib/iodrift_test/fake_boots.py: one cached probe `hot` every 100 ms).

  1. Boot A (uptime 4000 s, in the 1 h mark's window): the daemon runs until /api/v1/boots has
     A's baseline and its 1 h ratio, then stops (SIGTERM saves). The baselines file holds A.
  2. The filesystem is filled to its last byte. Boot B: the daemon loads A from the file; its
     saves fail (iodrift_state_save_errors_total grows); /api/v1/boots lists B and A, with A's
     figures as saved; the baselines file stays byte for byte what boot A wrote, and no
     baselines.tmp is left beside it.
  3. The filler is removed while B runs: "baselines: saved again", and the file holds both boots.
  4. Boot C starts on that file: /api/v1/boots lists C, B and A, and A's figures are still those
     of step 1.

Needs root (losetup, mkfs.ext4, mount); exits 77 otherwise.
"""
import json
import os
import uuid

from iodrift_test import prom
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.devices import Scratch, fill_filesystem, need_root, sha256_file
from iodrift_test.fake_boots import FakeBoots
from iodrift_test.skip import fail
from iodrift_test.wait import wait_for

need_root("mkfs.ext4")
SAVE_INTERVAL = 10  # ResultStore's kDefaultMinSaveInterval
A, B, C = (str(uuid.uuid4()) for _ in range(3))
KEPT = ("boot_id", "baseline", "ratio_1h", "worst_ratio", "last_ratio")


def hot_boots(d):
    status, _, body = d.get("/api/v1/boots", timeout=20)
    if status != 200:
        fail(f"/api/v1/boots answered {status}: {body}")
    return {p["name"]: p["boots"] for p in json.loads(body)["probes"]}.get("hot", [])


def counted(d, want):
    """The boots of `hot` once this boot has a counted run and `want` boots are listed."""
    def check():
        boots = hot_boots(d)
        if len(boots) == want and boots[0]["current"] and boots[0]["last_ratio"] is not None:
            return boots
        return None
    return wait_for(f"{want} boots of hot, this one counted", check, 60, interval=0.2,
                    detail=lambda: f"{hot_boots(d)}\n{d.stderr()[-2000:]}")


def past(boot):
    return {k: boot[k] for k in KEPT}


with Scratch("bootsfull") as work:
    fake = FakeBoots(work.path("fake"))
    dev = work.loop(2 << 20, "state", mkfs_args=("-b", "1024", "-m", "0"))
    fake.state = work.mount(dev, "state")
    baselines = os.path.join(fake.state, "baselines")

    # 1. Boot A, with room: saved at stop.
    fake.set_boot_id(A)
    fake.set_uptime(4000.0)
    with Daemon(*fake.daemon_args()) as d:
        wait_for("boot A's 1h mark and baseline",
                 lambda: (lambda b: b if b and b[0]["ratio_1h"] is not None
                          and b[0]["baseline"] is not None else None)(hot_boots(d)),
                 60, interval=0.2, detail=lambda: d.stderr()[-2000:])
        if d.stop() != 0:
            fail("boot A: iodriftd did not exit 0 on SIGTERM")
    with open(baselines) as f:
        if A not in f.read():
            fail("boot A: the baselines file does not name boot A after the daemon stopped")

    # 2. Boot B on a full filesystem: saves fail, nothing on disk changes, A is still listed.
    fill_filesystem(fake.state)
    print(f"full: {os.statvfs(fake.state).f_bavail} free blocks")
    digest = sha256_file(baselines)
    fake.set_boot_id(B)
    fake.set_uptime(200.0)
    with Daemon(*fake.daemon_args()) as d:
        boots = counted(d, 2)
        if [b["boot_id"] for b in boots] != [B, A]:
            fail(f"boot B: boots listed {[b['boot_id'] for b in boots]}, want B then A")
        a_loaded = past(boots[1])
        wait_for("a failed save of boot B's record",
                 lambda: (prom.value(scrape(d)[0], "iodrift_state_save_errors_total") or 0) >= 1,
                 SAVE_INTERVAL + 20, detail=lambda: d.stderr()[-2000:])
        if "no space left on device" not in d.stderr().lower():
            fail(f"boot B: no ENOSPC warning: {d.stderr()[-2000:]}")
        if sha256_file(baselines) != digest:
            fail("boot B: the baselines file changed while the disk was full")
        leftovers = sorted(n for n in os.listdir(fake.state)
                           if n.startswith("baselines") and n != "baselines")
        if leftovers:
            fail(f"boot B: files left beside the baselines file: {leftovers}")
        if past(hot_boots(d)[1]) != a_loaded:
            fail(f"boot B: boot A's record changed in memory: {hot_boots(d)[1]} vs {a_loaded}")

        # 3. Room again: saved whole, with both boots.
        os.unlink(os.path.join(fake.state, "filler"))
        os.sync()
        wait_for("'baselines: saved again' once there is room",
                 lambda: "baselines: saved again" in d.stderr(), SAVE_INTERVAL + 20,
                 detail=lambda: d.stderr()[-2000:])
        with open(baselines) as f:
            text = f.read()
        lines = text.splitlines()
        if lines[-1] != f"end {len(lines) - 1}" or A not in text or B not in text:
            fail(f"boot B: the file saved once there was room is not whole or lacks a boot: "
                 f"{lines[:3]} … {lines[-1:]}")
        if d.stop() != 0:
            fail("boot B: iodriftd did not exit 0 on SIGTERM")

    # 4. Boot C: both earlier boots come back from the file, A's figures as first saved.
    fake.set_boot_id(C)
    fake.set_uptime(300.0)
    with Daemon(*fake.daemon_args()) as d:
        boots = counted(d, 3)
        if [b["boot_id"] for b in boots] != [C, B, A]:
            fail(f"boot C: boots listed {[b['boot_id'] for b in boots]}, want C, B, A")
        if past(boots[2]) != a_loaded:
            fail(f"boot C: boot A's record is not what was saved: {boots[2]} vs {a_loaded}")
        if d.stop() != 0:
            fail("boot C: iodriftd did not exit 0 on SIGTERM")
    print(f"ok: boot A's record ({a_loaded}) kept through a full disk, B saved once there was "
          f"room, both loaded by C")
