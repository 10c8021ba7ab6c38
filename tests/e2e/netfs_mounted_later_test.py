#!/usr/bin/env python3
"""A target that becomes a remote mount after iodriftd loaded its config gets the remote defaults
on its next run (remote or local is a fact of each run, not of the config load).

A buffered probe's target is DIR/data.bin where DIR is an empty local directory when the daemon
starts (the runs fail: no such file). Then a real sshfs mount (private sshd on 127.0.0.1,
iodrift_test.sshfs) serving a 32 MiB data.bin is bound onto DIR, without a reload. The next run:
  * succeeds, and iodrift_probe_target_info says fstype="fuse.sshfs", remote="1";
  * uses the remote defaults: its spec_size (/api/v1/probes) is the remote default size, 8 MiB,
    and it reads at most 8 MiB (with local defaults spec_size is 0, "calibrate": the old daemon
    decided remote or local once, at config load, and kept the local defaults).

Needs root, /dev/fuse, sshfs and openssh-server; otherwise exits 77 (skipped).
"""
import json
import os
import subprocess

from iodrift_test import prom, sshfs
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.devices import Scratch
from iodrift_test.skip import fail
from iodrift_test.wait import wait_for

sshfs.need_sshfs()

MIB = 1 << 20


def target_info(samples, probe):
    found = [ls for n, ls, _ in samples
             if n == "iodrift_probe_target_info" and ls.get("probe") == probe]
    return found[0] if found else None


def last_result(d, probe):
    status, _, body = d.get("/api/v1/probes", timeout=30)
    if status != 200:
        return None
    return next((p for p in json.loads(body)["probes"] if p["name"] == probe), None)


def main():
    with sshfs.mounted() as m, Scratch("netfs-later") as s:
        with open(os.path.join(m.export, "data.bin"), "wb") as f:
            f.write(os.urandom(32 * MIB))
        later = s.path("later")
        os.mkdir(later)
        config = write_config(s.path("iodrift.yaml"), [
            {"name": "later", "kind": "buffered", "target": os.path.join(later, "data.bin"),
             "interval": "1s", "time_budget": "5s"},
        ], s.path("state"))
        with Daemon("--config", config) as d:
            wait_for("a failed run while the target does not exist yet",
                     lambda: prom.runs(scrape(d)[0], "later", "error") >= 1, timeout=60,
                     detail=lambda: d.stderr()[-2000:])
            first = last_result(d, "later")
            print(f"before the mount: result={first and first.get('result')} "
                  f"spec_size={first and first.get('spec_size')}")
            subprocess.run(["mount", "--bind", m.mountpoint, later], check=True,
                           capture_output=True)
            try:
                samples = wait_for(
                    "an ok run after the remote mount appeared",
                    lambda: (lambda sm: sm if prom.runs(sm, "later", "ok") >= 1 else None)(
                        scrape(d)[0]),
                    timeout=90, interval=0.5, detail=lambda: d.stderr()[-2000:])
                info = target_info(samples, "later")
                result = last_result(d, "later")
                read = prom.value(samples, "iodrift_probe_bytes", probe="later")
                print(f"after the mount: target_info={info} spec_size="
                      f"{result and result.get('spec_size')} bytes read={read}")
                if not info or info.get("fstype") != "fuse.sshfs" or info.get("remote") != "1":
                    fail(f"want fstype=fuse.sshfs remote=1 in target_info, got {info}")
                if not result or result.get("spec_size") != 8 * MIB:
                    fail(f"spec_size {result and result.get('spec_size')}: the run after the "
                         "mount did not get the remote default size (8 MiB)")
                if read is None or read > 8 * MIB:
                    fail(f"the run read {read} bytes; the remote default size is 8 MiB")
            finally:
                subprocess.run(["umount", "-l", later], capture_output=True)
    print("PASS")


if __name__ == "__main__":
    main()
