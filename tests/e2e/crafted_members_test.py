#!/usr/bin/env python3
"""Array member names from a crafted sysfs tree are not trusted.

`sys_root` may name any tree; its slaves/ entries become member names, probed as /dev/NAME. A
tree that says a loop device is an array whose slaves are `shm` (a directory: the probe would
create its probe file in /dev/shm), `null` and `zero` (character devices) and one real loop
device must get exactly one member probed — the loop device — and an error "not probed: …" for
each of the others (in /api/v1/probes member_errors); nothing is written into /dev/shm.

Before the fix the daemon probed /dev/shm as a directory and wrote its probe file there.
Needs root and losetup; otherwise exits 77 (skipped).
"""
import json
import os

from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon
from iodrift_test.devices import Scratch, need_root
from iodrift_test.skip import fail
from iodrift_test.sysfs import build_array_tree
from iodrift_test.wait import wait_for

need_root()

MIB = 1 << 20
CRAFTED = ["null", "shm", "zero"]


def shm_entries():
    return set(os.listdir("/dev/shm"))


def main():
    shm_before = shm_entries()
    created = set()
    try:
        with Scratch("crafted-members") as s:
            array = s.loop(16 * MIB, "array", fill_random=True, mkfs=False)
            member = s.loop(16 * MIB, "member", fill_random=True, mkfs=False)
            real = os.path.basename(member)
            sys_root = build_array_tree(s.path("sys"), array, sorted(CRAFTED + [real]))
            config = write_config(s.path("iodrift.yaml"), [
                {"name": "md", "kind": "buffered", "target": array, "interval": "1h",
                 "size": "4MiB", "members": "true", "timeout": "60s"},
            ], s.path("state"), extra=f"sys_root: {sys_root}")
            with Daemon("--config", config) as d:
                def ran():
                    status, _, body = d.get("/api/v1/probes")
                    if status != 200:
                        return None
                    doc = json.loads(body if isinstance(body, str) else body.decode())
                    for p in doc.get("probes", []):  # only probes that ran are listed
                        if p.get("name") == "md":
                            return p
                    return None

                last = wait_for("a run of the array probe", ran, timeout=90, interval=0.5)
                created = shm_entries() - shm_before
                errors = last.get("member_errors") or {}
                figures = last.get("member_figures") or {}
                print(f"member_figures={figures} member_errors={errors}")
                if created:
                    fail(f"the daemon wrote into /dev/shm: {sorted(created)}")
                for name in CRAFTED:
                    if not str(errors.get(name, "")).startswith("not probed: "):
                        fail(f"member {name!r}: want 'not probed: …', got {errors.get(name)!r}")
                if "/dev/shm is not a block device" not in errors.get("shm", ""):
                    fail(f"member shm: the error does not say why: {errors.get('shm')!r}")
                if real not in figures:
                    fail(f"the real member {real} was not probed: figures {figures}, "
                         f"errors {errors}")
    finally:
        for name in shm_entries() - shm_before:
            if name.startswith((".iodrift-probe", "iodrift-probe")):  # the old daemon's file
                os.remove(os.path.join("/dev/shm", name))
    print("PASS")


if __name__ == "__main__":
    main()
