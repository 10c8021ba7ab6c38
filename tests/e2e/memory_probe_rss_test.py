#!/usr/bin/env python3
"""A memory probe run raises iodriftd's peak RSS by at most 16 MiB, and gives the
memory back afterwards.

The daemon runs a `memory` probe (default size) every 4 s. Right after a run has finished, the
test resets the process's peak RSS (clear_refs 5: VmHWM := VmRSS), reads VmRSS, waits for two more
completed runs and reads VmHWM and VmRSS again from /proc/PID/status. The growth of the peak must
be at least 8 MiB (the measurement sees the probe's buffers at all) and at most 16 MiB; the RSS
after the runs must be back within 4 MiB of before (buffers unmapped, heap trimmed).
"""
from iodrift_test import prom
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.procstatus import reset_peak, status_bytes
from iodrift_test.skip import fail
from iodrift_test.wait import wait_for

MIB = 1 << 20
LIMIT = 16 * MIB


def main():
    import tempfile
    work = tempfile.mkdtemp(prefix="iodrift-memrss-")
    config = write_config(f"{work}/iodrift.yaml", [
        {"name": "mem", "kind": "memory", "interval": "4s", "timeout": "20s"}])
    with Daemon("--config", config) as d:
        pid = d.proc.pid

        def ok_runs():
            samples, _ = scrape(d)
            return prom.runs(samples, "mem", "ok")

        def wait_runs(n, what):
            return wait_for(what, lambda: (lambda r: r if r >= n else None)(ok_runs()),
                            timeout=120, interval=0.05)

        first = wait_runs(1, "the first ok run of the memory probe")
        # Right after a run completed: the next one starts ~4 s later.
        wait_runs(first + 1, "a further ok run")
        reset_peak(pid)
        rss_before = status_bytes(pid, "VmRSS")
        hwm_reset = status_bytes(pid, "VmHWM")
        seen = ok_runs()
        wait_runs(seen + 2, "two more ok runs")
        hwm = status_bytes(pid, "VmHWM")
        rss_after = status_bytes(pid, "VmRSS")
        samples, _ = scrape(d)
        print(f"VmRSS before {rss_before / MIB:.1f} MiB (VmHWM after reset {hwm_reset / MIB:.1f}),"
              f" VmHWM over two runs {hwm / MIB:.1f} MiB (+{(hwm - rss_before) / MIB:.1f} MiB),"
              f" VmRSS after {rss_after / MIB:.1f} MiB")
        growth = hwm - rss_before
        if hwm_reset > rss_before + 4 * MIB:
            fail("clear_refs did not reset VmHWM: cannot measure the peak")
        if growth > LIMIT:
            fail(f"a memory probe run raised the peak RSS by {growth / MIB:.1f} MiB > {LIMIT / MIB:.0f} MiB")
        if growth < 8 * MIB:
            fail(f"peak RSS grew only {growth / MIB:.1f} MiB over two memory probe runs: the "
                 "measurement did not see the probe's buffers (was a run under way at the reset?)")
        if rss_after > rss_before + 4 * MIB:
            fail(f"RSS after the runs {rss_after / MIB:.1f} MiB > before {rss_before / MIB:.1f} "
                 "MiB + 4 MiB: the probe keeps memory")
        value = prom.value(samples, "iodrift_probe_success", probe="mem")
        if value != 1:
            fail(f"iodrift_probe_success{{probe=mem}} = {value}")


main()
