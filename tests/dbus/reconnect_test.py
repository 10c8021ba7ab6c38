#!/usr/bin/env python3
"""iodriftd and a bus that goes away, and a bus name already taken.

1. The daemon is given the bus address exactly as dbus-daemon prints it (with `guid=`). A
   second daemon on the same bus cannot own org.iodrift.Monitor1 and must say the name is
   already owned, by whom (unique name and pid), not "File exists".
2. The bus is killed and a new dbus-daemon (new guid) listens on the same socket: the first
   daemon must serve the name on it again (it reconnects without the stale guid).

Runs as any user (a private bus with a same-user policy); exits 77 when a tool is missing.
"""
import os
import shutil
import subprocess
import tempfile
import time

from iodrift_test import dbus
from iodrift_test.daemon import Daemon
from iodrift_test.skip import fail, need_tools


need_tools("dbus-daemon", "busctl")

CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={dir}/bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def start_bus(conf):
    proc = subprocess.Popen(["dbus-daemon", f"--config-file={conf}", "--nofork",
                             "--print-address"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    address = proc.stdout.readline().strip()
    if not address:
        fail(f"dbus-daemon did not start: {proc.stderr.read()}")
    return proc, address


def stop_bus(proc):
    if proc.poll() is None:
        proc.terminate()
        proc.wait(10)


def wait_for_log(daemon, needle, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if needle in daemon.stderr():
            return
        time.sleep(0.1)
    fail(f"no log line with {needle!r} within {seconds} s: {daemon.stderr()}")


work = tempfile.mkdtemp(prefix="iodrift-reconnect-")
buses = []
try:
    conf = os.path.join(work, "bus.conf")
    with open(conf, "w") as f:
        f.write(CONFIG.format(dir=work))
    config = os.path.join(work, "iodrift.yaml")
    dbus.write_two_probe_config(config, work)
    bus, address = start_bus(conf)
    buses.append(bus)
    if "guid=" not in address:
        fail(f"dbus-daemon printed no guid: {address}")
    plain = f"unix:path={work}/bus_socket"
    with Daemon("--config", config, "--dbus", address) as d:
        dbus.wait_for_service(plain, d)

        # A second daemon: the name is taken.
        with Daemon("--config", config, "--dbus", address) as second:
            wait_for_log(second, "cannot connect")
            log = second.stderr()
            if "File exists" in log or "already owned by :" not in log:
                fail(f"second daemon: want 'already owned by :1.N', got: {log}")
            if f"pid {d.proc.pid}" not in log:
                fail(f"second daemon does not name the owner's pid {d.proc.pid}: {log}")

        # The bus restarts (new guid, same socket): the daemon must come back on it.
        stop_bus(bus)
        socket = os.path.join(work, "bus_socket")
        if os.path.exists(socket):
            os.unlink(socket)
        bus, new_address = start_bus(conf)
        buses.append(bus)
        if new_address == address:
            fail("the new bus has the old guid; the test proves nothing")
        dbus.wait_for_service(plain, d, seconds=90)
        if d.stop() != 0:
            fail(f"iodriftd did not exit 0 on SIGTERM: {d.stderr()}")
finally:
    for b in buses:
        stop_bus(b)
    shutil.rmtree(work, ignore_errors=True)
print("ok")
