#!/usr/bin/env python3
"""An idle daemon (no probes, no connections, after one scrape) has no periodic wake-up.

Counts the context switches of all of iodriftd's threads (/proc/PID/task/*/status, voluntary +
involuntary) over WINDOW_S seconds with nobody talking to it. The slowloris reaper used to wake
every second (1 switch/s, ~WINDOW_S in the window); it now sleeps until a connection deadline.
The limit leaves room for a stray wake-up or two (a log flush, the kernel) but not a 1 s period.
"""
import os
import time

from iodrift_test.daemon import Daemon
from iodrift_test.skip import fail

source = os.environ["IODRIFT_SOURCE_DIR"]
config = os.path.join(source, "tests/e2e/no-probes.yaml")
WINDOW_S = 12.0
LIMIT = 4  # a 1 s timer alone would make 12


def switches(pid):
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass  # a thread that just exited
    return total


with Daemon("--config", config) as d:
    status, _, _ = d.get()
    if status != 200:
        fail(f"/metrics answered {status}")
    pid = d.proc.pid
    # The scrape's connection is closed by the client; give its teardown time to settle, then
    # count from a fresh baseline.
    time.sleep(1.0)
    before = switches(pid)
    time.sleep(WINDOW_S)
    after = switches(pid)
    woke = after - before
    print(f"idle iodriftd: {woke} context switches in {WINDOW_S:.0f} s")
    if woke > LIMIT:
        fail(f"idle daemon woke {woke} times in {WINDOW_S:.0f} s (limit {LIMIT}): a periodic "
             "wake-up without work")
