#!/usr/bin/env python3
"""Reload is rate limited for group members: a flood gets refusals naming the limit.

iodriftd (root) on a private system-like bus with the packaged policy; a caller in group `iodrift` that is neither root nor the
daemon's user (nobody with the supplementary group iodrift) calls Reload 15 times back to back,
each call on a new connection (a new sender: the limit is per uid, so reconnecting gains
nothing). At most the per-caller burst (3) plus its refill (one every 5 s) may be applied; every
other call must be refused with org.iodrift.Error.RateLimited whose message names the limit
("Reload rate limit", "3 at once, then one every 5 s") and the wait; the daemon applied exactly
the calls that were answered. Root (who may send SIGHUP, an unlimited reload, anyway) is not
limited: 10 Reloads back to back all apply. Before the limit every member call was applied.

Needs root (setpriv to nobody; creates group `iodrift` when missing and removes it afterwards);
exits 77 otherwise or when a tool is missing.
"""
import os
import shutil
import subprocess
import tempfile
import time

from iodrift_test import dbus
from iodrift_test.daemon import Daemon
from iodrift_test.dbus import IFACE, NAME, PATH
from iodrift_test.skip import fail, need_tools, skip_guaranteed

if os.geteuid() != 0:
    skip_guaranteed("needs root (calls as nobody in group iodrift)")
need_tools("dbus-daemon", "busctl", "gdbus", "setpriv", "groupadd", "groupdel", "getent")

POLICY = os.path.join(os.environ["IODRIFT_SOURCE_DIR"], "systemd/org.iodrift.Monitor1.conf")
MEMBER = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--groups=iodrift")
FLOOD = 15
BURST, EVERY_S = 3, 5  # DbusServiceOptions::reload_rate_limits, per caller
RATE_LIMITED = "org.iodrift.Error.RateLimited"

created_group = False
work = tempfile.mkdtemp(prefix="iodrift-reload-limit-", dir="/var/tmp")
try:
    if subprocess.run(["getent", "group", "iodrift"], capture_output=True).returncode != 0:
        res = dbus.run(["groupadd", "--system", "iodrift"])
        if res.returncode != 0:
            fail(f"groupadd iodrift: {res.stderr}")
        created_group = True
    config = os.path.join(work, "iodrift.yaml")
    dbus.write_two_probe_config(config, work)
    # The packaged policy (group iodrift may call Reload): the group exists before the bus starts.
    with dbus.Bus(system_policy=POLICY) as bus, \
            Daemon("--config", config, "--dbus", bus.address) as d:
        addr = bus.address
        dbus.wait_for_service(addr, d)

        applied, limited, other = 0, [], []
        start = time.monotonic()
        for _ in range(FLOOD):
            res = dbus.gdbus_call(addr, "Reload", prefix=MEMBER, timeout=30)
            out = (res.stdout + res.stderr).strip()
            if res.returncode == 0 and out == "(@as [],)":
                applied += 1
            elif res.returncode != 0 and RATE_LIMITED in out:
                limited.append(out)
            else:
                other.append(f"rc={res.returncode} {out}")
        elapsed = time.monotonic() - start
        print(f"member flood: {applied} applied, {len(limited)} rate limited, "
              f"{len(other)} other in {elapsed:.2f} s")
        if other:
            fail(f"unexpected answers to a member's Reload: {other[:3]}")
        allowed = BURST + int(elapsed / EVERY_S) + 1
        if applied < 1 or applied > allowed:
            fail(f"{applied} member Reloads applied in {elapsed:.1f} s, at most {allowed} may be")
        if not limited:
            fail(f"none of {FLOOD} back-to-back member Reloads was rate limited")
        message = limited[0]
        for needle in ("Reload rate limit", f"{BURST} at once, then one every {EVERY_S} s",
                       "retry in"):
            if needle not in message:
                fail(f"the refusal does not name the limit ({needle!r}): {message}")
        print(f"refusal: {message}")

        # Root may SIGHUP anyway: its Reloads are not limited.
        for i in range(10):
            res = dbus.busctl(addr, "call", NAME, PATH, IFACE, "Reload", timeout=30)
            if res.returncode != 0 or res.stdout.strip() != "as 0":
                fail(f"root Reload {i}: rc={res.returncode} {res.stdout}{res.stderr}")
        logged = d.stderr().count("reload: applied")
        if logged != applied + 10:
            fail(f"the daemon logged {logged} applied reloads, want {applied} + 10")
        if d.stop() != 0:
            fail("iodriftd did not exit 0 on SIGTERM")
finally:
    shutil.rmtree(work, ignore_errors=True)
    if created_group:
        subprocess.run(["groupdel", "iodrift"], capture_output=True)
print("ok")
