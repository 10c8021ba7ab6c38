#!/usr/bin/env python3
"""iodriftctl's operator-facing messages.

  * `iodriftctl --version` (and -V) prints the version, exit 0.
  * No bus: with the system bus pointed at a socket that does not exist, `iodriftctl list` exits
    3 and says which bus it tried (the address) and what to do; the session bus without
    DBUS_SESSION_BUS_ADDRESS says so.
  * A bus without iodriftd: exit 3, naming org.iodrift.Monitor1 and the bus.
  * `iodriftctl watch` lines start with the run's start time (ISO 8601 with offset).
Exits 77 when a tool is missing.
"""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from iodrift_test import dbus
from iodrift_test.daemon import Daemon, ctl_binary
from iodrift_test.skip import fail, need_tools


need_tools("dbus-daemon")
ctl = ctl_binary()

for flag in ("--version", "-V"):
    res = dbus.run([ctl, flag])
    if res.returncode != 0 or not re.match(r"iodriftctl \d+\.\d+\.\d+", res.stdout):
        fail(f"iodriftctl {flag}: rc={res.returncode} {res.stdout!r} {res.stderr!r}")

work = tempfile.mkdtemp(prefix="iodrift-ctlmsg-")
try:
    missing = f"unix:path={work}/no-such-socket"
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=missing)
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    res = dbus.run([ctl, "list"], env=env)
    if res.returncode != 3 or f"the system bus ({missing})" not in res.stderr \
            or "systemctl status iodrift" not in res.stderr or "--bus" not in res.stderr:
        fail(f"no system bus: want exit 3 naming {missing} and what to do, got "
             f"rc={res.returncode} {res.stderr!r}")
    res = dbus.run([ctl, "--bus", "session", "list"], env=env)
    if res.returncode != 3 or "DBUS_SESSION_BUS_ADDRESS is not set" not in res.stderr:
        fail(f"no session bus: rc={res.returncode} {res.stderr!r}")

    config = os.path.join(work, "iodrift.yaml")
    with open(config, "w") as f:
        f.write(f"state_dir: {work}/state\nprobes:\n"
                "  - {name: mem, kind: memory, interval: 1s, size: 4MiB}\n")
    with dbus.Bus() as bus:
        # A bus with nobody serving the name.
        res = dbus.run([ctl, "--bus", bus.address, "list"])
        if res.returncode != 3 or "org.iodrift.Monitor1" not in res.stderr \
                or bus.address not in res.stderr:
            fail(f"bus without iodriftd: rc={res.returncode} {res.stderr!r}")
        with Daemon("--config", config, "--dbus", bus.address) as d:
            dbus.wait_for_service(bus.address, d)
            watch = subprocess.Popen([ctl, "--bus", bus.address, "watch"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                line = watch.stdout.readline()  # `mem` runs every second
            finally:
                watch.send_signal(signal.SIGINT)
                watch.wait(30)
            if not re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}  mem  memory  ", line):
                fail(f"watch line without a leading timestamp: {line!r}")
            stamp = time.mktime(time.strptime(line[:19], "%Y-%m-%dT%H:%M:%S"))
            if abs(stamp - time.time()) > 600:
                fail(f"watch timestamp {line[:24]} is not the run's time")
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
