#!/usr/bin/env python3
"""A local FUSE filesystem is not remote; `remote:` overrides the verdict.

faultfs (tests/fuse/faultfs.c) is a FUSE filesystem served by a local process, its mount source
a local name: no evidence of another machine. Two probes read the same file on it:

  * `fuse-judged` (no `remote:`): iodrift_probe_target_info says fstype="fuse.faultfs",
    remote="0" (before the fix every fuse.* mount was remote="1" and got the remote defaults);
  * `fuse-forced` (`remote: true`): remote="1", and the remote default size (8 MiB) applies: a
    run reads at most 8 MiB of the 32 MiB file.

Needs root, /dev/fuse and faultfs; otherwise exits 77 (skipped).
"""
from iodrift_test import fuse, prom
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.devices import Scratch
from iodrift_test.skip import fail
from iodrift_test.wait import wait_for

fuse.need_faultfs()

MIB = 1 << 20


def info(samples, probe):
    found = [ls for n, ls, _ in samples
             if n == "iodrift_probe_target_info" and ls.get("probe") == probe]
    return found[0] if found else None


def main():
    with fuse.mounted(size="32M") as fs, Scratch("local-fuse") as s:
        target = fs.path("ok.dat")
        common = {"kind": "buffered", "target": target, "interval": "1h", "time_budget": "5s",
                  "timeout": "60s"}
        config = write_config(s.path("iodrift.yaml"), [
            {"name": "fuse-judged", **common},
            {"name": "fuse-forced", **common, "remote": "true"},
        ], s.path("state"))
        with Daemon("--config", config) as d:
            def ran():
                samples, _ = scrape(d)
                done = all(prom.runs(samples, p, "ok") >= 1 for p in ("fuse-judged", "fuse-forced"))
                return samples if done else None

            samples = wait_for("an ok run of both probes", ran, timeout=90, interval=0.5,
                               detail=lambda: d.stderr()[-3000:])
            judged, forced = info(samples, "fuse-judged"), info(samples, "fuse-forced")
            print(f"fuse-judged target_info: {judged}")
            print(f"fuse-forced target_info: {forced}")
            if not judged or judged.get("fstype") != "fuse.faultfs" or judged.get("remote") != "0":
                fail(f"fuse-judged: want fstype=fuse.faultfs remote=0, got {judged}")
            if not forced or forced.get("remote") != "1":
                fail(f"fuse-forced (remote: true): want remote=1, got {forced}")
            forced_bytes = prom.value(samples, "iodrift_probe_bytes", probe="fuse-forced")
            print(f"fuse-forced read {forced_bytes} bytes per run")
            if forced_bytes is None or forced_bytes > 8 * MIB:
                fail(f"fuse-forced read {forced_bytes} bytes; the remote default size is 8 MiB")
    print("PASS")


if __name__ == "__main__":
    main()
