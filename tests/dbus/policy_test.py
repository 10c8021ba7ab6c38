#!/usr/bin/env python3
"""systemd/org.iodrift.Monitor1.conf enforced by a real dbus-daemon.

A private bus with a system-like configuration (deny by default) that includes our policy file;
iodriftd as root owns the name on it. As `nobody` (setpriv), RunProbe and Reload are denied
(AccessDenied) while ListProbes, Snapshot, the Version property and introspection work; root may
run a probe. Needs root (exits 77 otherwise).
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import dbus_harness as dh  # noqa: E402
from dbus_harness import harness  # noqa: E402

if os.geteuid() != 0:
    harness.skip("needs root (owns the name on a system-like bus, calls as nobody)")
dh.need_tools("dbus-daemon", "busctl", "setpriv")

policy = os.path.join(os.environ["IODRIFT_SOURCE_DIR"], "systemd/org.iodrift.Monitor1.conf")
NOBODY = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")
work = tempfile.mkdtemp(prefix="iodrift-policy-", dir="/var/tmp")
config = os.path.join(work, "iodrift.yaml")
dh.write_config(config, work)


def call(addr, method, *args, prefix=()):
    return dh.busctl(addr, "call", dh.NAME, dh.PATH, dh.IFACE, method, *args, prefix=prefix)


def denied(res):
    return res.returncode != 0 and "access denied" in (res.stdout + res.stderr).lower()


try:
    with dh.Bus(system_policy=policy) as bus, \
            harness.Daemon("--config", config, "--dbus", bus.address) as d:
        addr = bus.address
        dh.wait_for_service(addr, d)

        # A non-root process may not own the name.
        res = dh.run([*NOBODY, "busctl", f"--address={addr}", "call", "org.freedesktop.DBus",
                      "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName", "su",
                      "org.iodrift.Monitor1.Other", "0"])
        # (Any name under our prefix other than the service's own is simply not allowed either.)
        if res.returncode == 0 and "u 1" in res.stdout:
            harness.fail(f"nobody could own a name: {res.stdout}")

        for method, args in (("RunProbe", ("s", "rnd")), ("Reload", ())):
            res = call(addr, method, *args, prefix=NOBODY)
            if not denied(res):
                harness.fail(f"nobody {method}: want AccessDenied, got rc={res.returncode} "
                             f"{res.stdout}{res.stderr}")
        res = call(addr, "ListProbes", prefix=NOBODY)
        if res.returncode != 0 or '"rnd"' not in res.stdout:
            harness.fail(f"nobody ListProbes: {res.stdout}{res.stderr}")
        res = call(addr, "Snapshot", prefix=NOBODY)
        if res.returncode != 0 or '"MemTotal"' not in res.stdout:
            harness.fail(f"nobody Snapshot: {res.stdout}{res.stderr}")
        res = dh.busctl(addr, "get-property", dh.NAME, dh.PATH, dh.IFACE, "Version", prefix=NOBODY)
        if res.returncode != 0:
            harness.fail(f"nobody Version: {res.stdout}{res.stderr}")
        res = dh.busctl(addr, "introspect", dh.NAME, dh.PATH, prefix=NOBODY)
        if res.returncode != 0 or "RunProbe" not in res.stdout:
            harness.fail(f"nobody introspect: {res.stdout}{res.stderr}")

        # Root may.
        res = call(addr, "RunProbe", "s", "rnd")
        if res.returncode != 0 or '"success" b true' not in res.stdout:
            harness.fail(f"root RunProbe: {res.stdout}{res.stderr}")
        res = call(addr, "Reload")
        if res.returncode != 0:
            harness.fail(f"root Reload: {res.stdout}{res.stderr}")
        if d.stop() != 0:
            harness.fail("iodriftd did not exit 0 on SIGTERM")
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
