#!/usr/bin/env python3
"""systemd/org.iodrift.Monitor1.conf enforced by a real dbus-daemon.

A private bus with a system-like configuration (deny by default) that includes our policy file;
iodriftd as root owns the name on it. As `nobody` (setpriv), RunProbe and Reload are denied
(AccessDenied) while ListProbes, Snapshot, the Version property and introspection work; root may
run a probe. Needs root (exits 77 otherwise).
"""
import os
import shutil
import tempfile

from iodrift_test import dbus
from iodrift_test.daemon import Daemon
from iodrift_test.dbus import IFACE, NAME, PATH
from iodrift_test.skip import fail, need_tools, require_root


require_root("needs root (owns the name on a system-like bus, calls as nobody)")
need_tools("dbus-daemon", "busctl", "setpriv")

policy = os.path.join(os.environ["IODRIFT_SOURCE_DIR"], "systemd/org.iodrift.Monitor1.conf")
NOBODY = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")
work = tempfile.mkdtemp(prefix="iodrift-policy-", dir="/var/tmp")
config = os.path.join(work, "iodrift.yaml")
dbus.write_two_probe_config(config, work)


def call(addr, method, *args, prefix=()):
    return dbus.busctl(addr, "call", NAME, PATH, IFACE, method, *args, prefix=prefix)


def denied(res):
    return res.returncode != 0 and "access denied" in (res.stdout + res.stderr).lower()


try:
    with dbus.Bus(system_policy=policy) as bus, \
            Daemon("--config", config, "--dbus", bus.address) as d:
        addr = bus.address
        dbus.wait_for_service(addr, d)

        # A non-root process may not own the name.
        res = dbus.run([*NOBODY, "busctl", f"--address={addr}", "call", "org.freedesktop.DBus",
                        "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName", "su",
                        "org.iodrift.Monitor1.Other", "0"])
        # (Any name under our prefix other than the service's own is simply not allowed either.)
        if res.returncode == 0 and "u 1" in res.stdout:
            fail(f"nobody could own a name: {res.stdout}")

        for method, args in (("RunProbe", ("s", "rnd")), ("Reload", ())):
            res = call(addr, method, *args, prefix=NOBODY)
            if not denied(res):
                fail(f"nobody {method}: want AccessDenied, got rc={res.returncode} "
                     f"{res.stdout}{res.stderr}")
        res = call(addr, "ListProbes", prefix=NOBODY)
        if res.returncode != 0 or '"rnd"' not in res.stdout:
            fail(f"nobody ListProbes: {res.stdout}{res.stderr}")
        res = call(addr, "Snapshot", prefix=NOBODY)
        if res.returncode != 0 or '"MemTotal"' not in res.stdout:
            fail(f"nobody Snapshot: {res.stdout}{res.stderr}")
        res = dbus.busctl(addr, "get-property", NAME, PATH, IFACE, "Version", prefix=NOBODY)
        if res.returncode != 0:
            fail(f"nobody Version: {res.stdout}{res.stderr}")
        res = dbus.busctl(addr, "introspect", NAME, PATH, prefix=NOBODY)
        if res.returncode != 0 or "RunProbe" not in res.stdout:
            fail(f"nobody introspect: {res.stdout}{res.stderr}")

        # Root may.
        res = call(addr, "RunProbe", "s", "rnd")
        if res.returncode != 0 or '"success" b true' not in res.stdout:
            fail(f"root RunProbe: {res.stdout}{res.stderr}")
        res = call(addr, "Reload")
        if res.returncode != 0:
            fail(f"root Reload: {res.stdout}{res.stderr}")
        if d.stop() != 0:
            fail("iodriftd did not exit 0 on SIGTERM")
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
