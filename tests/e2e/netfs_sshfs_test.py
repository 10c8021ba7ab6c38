#!/usr/bin/env python3
"""Network filesystems, end to end on a real one: sshfs over loopback to a
private sshd on 127.0.0.1 (iodrift_test.sshfs).

Part 1, server up: probes on the sshfs directory with no size/timeout/files configured
  * iodrift_probe_target_info says fstype="fuse.sshfs", remote="1" (a local probe: remote="0");
  * the remote defaults hold: a buffered run reads at most 8 MiB, the probe file iodriftd made
    in the served directory is 16 MiB (not the local 128 MiB), the metadata probe works in
    iodriftd's own subdirectory iodrift-meta, and nothing else appears in the served directory.
Part 2, the server goes away mid-run (its ssh session and sshd SIGSTOPped: no FIN, no RST):
  * the probe on the mount ends as result="timeout" (or "error"), never ok;
  * every /metrics scrape answers within 1 s, the local probe keeps succeeding;
  * SIGTERM stops iodriftd within 5 s although a probe thread is blocked on the mount; after
    the FUSE connection is aborted (teardown) the process is reaped with status 0.

Needs root, /dev/fuse, sshfs and openssh-server; otherwise exits 77 (skipped).
"""
import os
import signal
import socket
import tempfile
import time
import shutil

from iodrift_test import fuse, prom, sshfs
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.skip import fail
from iodrift_test.wait import wait_for

sshfs.need_sshfs()

MIB = 1 << 20
# Above the 4 s collector deadline: a scrape that waited on the frozen read would never return;
# a loaded machine may make an ordinary scrape slow, which is not what this checks.
SCRAPE_LIMIT_S = 6.0
STOP_LIMIT_S = 5.0


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def info(samples, probe):
    found = [ls for n, ls, _ in samples if n == "iodrift_probe_target_info" and ls.get("probe") == probe]
    return found[0] if found else None


def part1_defaults(m, local_dir, work):
    config = write_config(os.path.join(work, "p1.yaml"), [
        {"name": "net-buffered", "kind": "buffered", "target": m.mountpoint, "interval": "2s"},
        {"name": "net-meta", "kind": "metadata", "target": m.mountpoint, "interval": "2s"},
        {"name": "local-buffered", "kind": "buffered", "target": local_dir, "interval": "2s",
         "size": "4MiB"},
    ])
    with Daemon("--config", config) as d:
        def all_ran():
            samples, _ = scrape(d)
            done = all(prom.runs(samples, p, "ok") + prom.runs(samples, p, "error") >= 1
                       for p in ("net-buffered", "net-meta", "local-buffered"))
            return samples if done else None

        samples = wait_for("a run of every probe", all_ran, timeout=120, interval=0.5)
        for probe in ("net-buffered", "net-meta"):
            if prom.value(samples, "iodrift_probe_success", probe=probe) != 1:
                fail(f"{probe} did not succeed on sshfs; log: {d.stderr()[-2000:]}")
            labels = info(samples, probe)
            print(f"{probe} target_info: {labels}")
            if not labels or labels.get("fstype") != "fuse.sshfs" or labels.get("remote") != "1":
                fail(f"{probe}: want fstype=fuse.sshfs remote=1 in target_info, got {labels}")
        local = info(samples, "local-buffered")
        if not local or local.get("remote") != "0":
            fail(f"local-buffered: want remote=0, got {local}")
        read = prom.value(samples, "iodrift_probe_bytes", probe="net-buffered")
        print(f"net-buffered read {read:g} bytes in its last run")
        if not read or read > 8 * MIB:
            fail(f"net-buffered read {read} bytes; the remote default size is 8 MiB")
    probe_file = os.path.join(m.export, "iodrift-probe.dat")
    size = os.stat(probe_file).st_size
    print(f"probe file on the server: {size} bytes")
    if size != 16 * MIB:
        fail(f"probe file on the remote directory is {size} bytes, want 16 MiB")
    entries = sorted(os.listdir(m.export))
    if entries != ["iodrift-meta", "iodrift-probe.dat"]:
        fail(f"the served directory holds {entries}; iodriftd may only make iodrift-probe.dat "
             "and iodrift-meta")


def part2_server_gone(m, local_dir, work):
    config = write_config(os.path.join(work, "p2.yaml"), [
        {"name": "net-buffered", "kind": "buffered", "target": m.mountpoint, "interval": "2s",
         "timeout": "3s", "time_budget": "250ms"},
        {"name": "local-buffered", "kind": "buffered", "target": local_dir, "interval": "2s",
         "size": "4MiB"},
    ])
    d = Daemon("--config", config)
    with d:
        pid = d.proc.pid
        wait_for("an ok run on sshfs",
                 lambda: prom.runs(scrape(d)[0], "net-buffered", "ok") >= 1, timeout=60)
        frozen = m.freeze()
        print(f"server gone: SIGSTOPped ssh {frozen} and sshd")
        worst = 0.0

        def sample():
            nonlocal worst
            samples, elapsed = scrape(d, timeout=10)
            worst = max(worst, elapsed)
            if elapsed > SCRAPE_LIMIT_S:
                fail(f"/metrics took {elapsed:.2f} s with the server gone")
            return samples

        ok_before = prom.runs(sample(), "net-buffered", "ok")
        local_before = prom.runs(sample(), "local-buffered", "ok")

        def failed():
            s = sample()
            bad = prom.runs(s, "net-buffered", "timeout") + prom.runs(s, "net-buffered", "error")
            return s if bad >= 1 else None

        samples = wait_for("a timeout or error on sshfs after the server went away", failed,
                           timeout=40, interval=0.25)
        # A little longer: scrapes stay fast, the local probe keeps going.
        samples = wait_for("two more local runs while the server is gone",
                           lambda: (lambda s: s if prom.runs(s, "local-buffered", "ok")
                                    >= local_before + 2 else None)(sample()),
                           timeout=30, interval=0.25)
        ok_after = prom.runs(samples, "net-buffered", "ok")
        print(f"net-buffered: timeout={prom.runs(samples, 'net-buffered', 'timeout'):g} "
              f"error={prom.runs(samples, 'net-buffered', 'error'):g} "
              f"skipped={prom.runs(samples, 'net-buffered', 'skipped'):g}; slowest scrape "
              f"{worst * 1000:.0f} ms")
        if ok_after > ok_before + 1:  # one run may have finished just before the freeze
            fail(f"net-buffered kept succeeding with the server gone ({ok_before:g} → {ok_after:g})")
        if prom.value(samples, "iodrift_probe_success", probe="net-buffered") != 0:
            fail("iodrift_probe_success{probe=net-buffered} is not 0 with the server gone")

        start = time.monotonic()
        d.proc.send_signal(signal.SIGTERM)
        stopped = None
        while time.monotonic() - start < STOP_LIMIT_S + 5:
            gone = d.proc.poll() is not None or fuse.leader_state(pid) in (None, "Z", "X")
            if gone and "stopped" in d.stderr() and not port_open(d.port):
                stopped = time.monotonic() - start
                break
            time.sleep(0.05)
        print(f"SIGTERM → stopped in {stopped} s with the server gone")
        if stopped is None or stopped > STOP_LIMIT_S:
            m.abort()
            fail(f"iodriftd did not stop within {STOP_LIMIT_S} s of SIGTERM with the server "
                 f"gone; log: {d.stderr()[-1500:]}")
        m.abort()
        try:
            rc = d.proc.wait(10)
        except Exception:
            fail("iodriftd was not reaped within 10 s of aborting the FUSE connection")
        if rc != 0:
            fail(f"iodriftd exited {rc} after SIGTERM, want 0; log: {d.stderr()[-1500:]}")


def main():
    work = tempfile.mkdtemp(prefix="iodrift-netfs-", dir="/var/tmp")
    local_dir = os.path.join(work, "local")
    os.makedirs(local_dir, mode=0o755)
    try:
        with sshfs.mounted() as m:
            part1_defaults(m, local_dir, work)
        with sshfs.mounted() as m:
            part2_server_gone(m, local_dir, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
