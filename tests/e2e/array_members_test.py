#!/usr/bin/env python3
"""Arrays and their members, probing end to end. This kernel has no md or dm,
so loop devices stand in: a sysfs tree built here (config key `sys_root`) says that loop
device A is an array whose slaves are loop devices B and C, as /sys/block/md0/slaves/ would.

  * iodrift_probe_target_info{devices="B,C"} for the array probe;
  * with `members: true`, buffered and random probes read each member read-only with the same
    kind and size: iodrift_probe_member_throughput_bytes_per_second{member} (buffered),
    iodrift_probe_member_ops_per_second{member} (random), and
    iodrift_probe_array_member_ratio{member} = array figure / member figure;
  * the same figures are in /api/v1/probes (member_figures, member_ratios);
  * a probe without `members` reads no member; no member image changes.

Needs root and losetup; otherwise exits 77 (skipped).
"""
import json
import os

from iodrift_test import prom
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.devices import Scratch, need_root, sha256_file
from iodrift_test.skip import fail
from iodrift_test.sysfs import build_array_tree
from iodrift_test.wait import wait_for

need_root()

MIB = 1 << 20


def main():
    with Scratch("arrays") as s:
        images = {}
        devs = {}
        for name in ("array", "m1", "m2"):
            devs[name] = s.loop(32 * MIB, name, fill_random=True, mkfs=False)
            images[name] = s.path(f"{name}.img")
        members = sorted(os.path.basename(devs[n]) for n in ("m1", "m2"))
        before = {n: sha256_file(images[n]) for n in ("m1", "m2")}
        sys_root = s.path("sys")
        build_array_tree(sys_root, devs["array"], members)
        config = write_config(s.path("iodrift.yaml"), [
            {"name": "md-buffered", "kind": "buffered", "target": devs["array"], "interval": "2s",
             "size": "8MiB", "members": "true"},
            {"name": "md-random", "kind": "random", "target": devs["array"], "interval": "2s",
             "requests": 32, "members": "true"},
            {"name": "md-plain", "kind": "buffered", "target": devs["array"], "interval": "2s",
             "size": "4MiB"},
        ], s.path("state"), extra=f"sys_root: {sys_root}")
        with Daemon("--config", config) as d:
            def ran():
                samples, _ = scrape(d)
                done = all(prom.runs(samples, p, "ok") >= 1
                           for p in ("md-buffered", "md-random", "md-plain"))
                return samples if done else None

            samples = wait_for("an ok run of every probe", ran, timeout=90, interval=0.5)
            want_devices = ",".join(members)
            for probe in ("md-buffered", "md-random", "md-plain"):
                labels = [ls for n, ls, _ in samples
                          if n == "iodrift_probe_target_info" and ls.get("probe") == probe]
                print(f"{probe} target_info: {labels}")
                if not labels or labels[0].get("devices") != want_devices:
                    fail(f"{probe}: want devices={want_devices!r} in target_info, got {labels}")
            array_bps = prom.value(samples, "iodrift_probe_throughput_bytes_per_second",
                                   probe="md-buffered")
            array_ops = prom.value(samples, "iodrift_probe_ops_per_second", probe="md-random",
                                   op="read")
            for m in members:
                bps = prom.value(samples, "iodrift_probe_member_throughput_bytes_per_second",
                                 probe="md-buffered", member=m)
                ops = prom.value(samples, "iodrift_probe_member_ops_per_second",
                                 probe="md-random", member=m)
                r_bps = prom.value(samples, "iodrift_probe_array_member_ratio",
                                   probe="md-buffered", member=m)
                r_ops = prom.value(samples, "iodrift_probe_array_member_ratio",
                                   probe="md-random", member=m)
                print(f"member {m}: {bps} B/s (array {array_bps}, ratio {r_bps}); "
                      f"{ops} ops/s (array {array_ops}, ratio {r_ops})")
                if not bps or not ops or r_bps is None or r_ops is None:
                    fail(f"member {m}: missing member figures or ratios")
                if abs(r_bps - array_bps / bps) > 1e-6 * r_bps:
                    fail(f"ratio {r_bps} != array {array_bps} / member {bps}")
                if abs(r_ops - array_ops / ops) > 1e-6 * r_ops:
                    fail(f"ratio {r_ops} != array {array_ops} / member {ops}")
            plain = [n for n, ls, _ in samples
                     if n.startswith("iodrift_probe_member") and ls.get("probe") == "md-plain"]
            if plain:
                fail(f"md-plain (no `members`) exported member figures: {plain}")
            status, _, body = d.get("/api/v1/probes")
            if status != 200:
                fail(f"/api/v1/probes answered {status}")
            text = body if isinstance(body, str) else body.decode()
            if '"member_ratios"' not in text or members[0] not in text:
                fail(f"/api/v1/probes has no member_ratios: {text[:2000]}")
            json.loads(text)
            status, _, page = d.get("/")
            page = page if isinstance(page, str) else page.decode()
            if status != 200 or "array members" not in page or members[1] not in page:
                fail("the status page shows no array members table")
        after = {n: sha256_file(images[n]) for n in ("m1", "m2")}
        if after != before:
            fail("a member image changed: members are only read")
    print("PASS")


if __name__ == "__main__":
    main()
