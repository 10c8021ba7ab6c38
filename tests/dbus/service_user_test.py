#!/usr/bin/env python3
"""The packaged D-Bus setup, as an operator gets it: a private dbus-daemon built from Debian's own
/usr/share/dbus-1/system.conf (only the socket, user, fork, pid file and include directories
changed), our policy file included verbatim, and iodriftd running as the unprivileged user
`iodrift` with `--dbus auto` (DBUS_SYSTEM_BUS_ADDRESS points at the private bus).

Checks: the name is owned by the iodrift user; an unprivileged caller (nobody, no groups) can
ListProbes, Snapshot, Explain, Boots and read Version, and is denied RunProbe and Reload with
AccessDenied; a caller in group iodrift can RunProbe. Then the daemon's own check, with a
permissive bus where the policy lets everything through: nobody still gets
org.iodrift.Error.AccessDenied for RunProbe and Reload, a member of group iodrift runs.

Needs root (creates user/group `iodrift` when missing and removes them afterwards); exits 77
otherwise or when a tool is missing.
"""
import os
import re
import shutil
import subprocess
import tempfile
import time

from iodrift_test import dbus
from iodrift_test.daemon import Daemon
from iodrift_test.dbus import IFACE, NAME, PATH
from iodrift_test.skip import fail, need_tools, skip_guaranteed


if os.geteuid() != 0:
    skip_guaranteed("needs root (creates the iodrift user, runs the daemon and callers as others)")
need_tools("dbus-daemon", "busctl", "gdbus", "setpriv", "useradd", "userdel", "getent")
SYSTEM_CONF = "/usr/share/dbus-1/system.conf"
if not os.path.exists(SYSTEM_CONF):
    skip_guaranteed(f"{SYSTEM_CONF} is missing (package dbus)")

SOURCE = os.environ["IODRIFT_SOURCE_DIR"]
POLICY = os.path.join(SOURCE, "systemd/org.iodrift.Monitor1.conf")
NOBODY = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")
MEMBER = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--groups=iodrift")
AS_IODRIFT = ("setpriv", "--reuid=iodrift", "--regid=iodrift", "--init-groups")

PERMISSIVE_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={dir}/open_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def system_config(work):
    """Debian's system.conf, pointed at a private socket and an include dir holding our policy."""
    with open(SYSTEM_CONF) as f:
        conf = f.read()
    for tag in ("user", "pidfile", "servicehelper"):
        conf = re.sub(rf"<{tag}>[^<]*</{tag}>", "", conf)
    for tag in ("fork", "syslog", "standard_system_servicedirs"):
        conf = conf.replace(f"<{tag}/>", "")
    conf, n = re.subn(r"<listen>[^<]*</listen>",
                      f"<listen>unix:path={work}/system_bus_socket</listen>", conf)
    if n != 1:
        fail(f"{SYSTEM_CONF}: expected one <listen>, found {n}")
    conf, n = re.subn(r"<includedir>[^<]*</includedir>",
                      f"<includedir>{work}/system.d</includedir>", conf)
    if n == 0:
        fail(f"{SYSTEM_CONF}: no <includedir> for system.d")
    conf = re.sub(r'<include ignore_missing="yes">/etc/[^<]*</include>', "", conf)
    os.makedirs(f"{work}/system.d")
    shutil.copy(POLICY, f"{work}/system.d/org.iodrift.Monitor1.conf")  # verbatim
    path = f"{work}/system.conf"
    with open(path, "w") as f:
        f.write(conf)
    return path


class PrivateBus:
    def __init__(self, config, socket):
        self.config, self.address = config, f"unix:path={socket}"
        self.proc = None

    def __enter__(self):
        self.proc = subprocess.Popen(["dbus-daemon", f"--config-file={self.config}", "--nofork",
                                      "--print-address"], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        if not self.proc.stdout.readline().strip():
            fail(f"dbus-daemon did not start: {self.proc.stderr.read()}")
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


def call(addr, method, *args, prefix=()):
    return dbus.busctl(addr, "call", NAME, PATH, IFACE, method, *args, prefix=prefix)


def expect_ok(res, what, needle):
    if res.returncode != 0 or needle not in res.stdout:
        fail(f"{what}: want success with {needle!r}, got rc={res.returncode} "
             f"{res.stdout}{res.stderr}")


def gcall(addr, method, *args, prefix=()):
    """gdbus prints the D-Bus error name (busctl only its message)."""
    return dbus.gdbus_call(addr, method, *args, prefix=prefix)


def expect_denied(res, what, error_name):
    out = res.stdout + res.stderr
    if res.returncode == 0 or error_name.lower() not in out.lower():
        fail(f"{what}: want {error_name}, got rc={res.returncode} {out}")


def start_daemon(binary, config, state, env):
    d = Daemon("--config", config, "--state-dir", state, "--dbus", "auto", env=env)
    d.args = [*AS_IODRIFT, binary, *d.args[1:]]
    return d


work = tempfile.mkdtemp(prefix="iodrift-svcuser-", dir="/var/tmp")
user = dbus.service_user()
try:
    user.__enter__()
    os.chmod(work, 0o755)
    # The daemon runs as iodrift: its binary, config and state where that user can reach them.
    binary = os.path.join(work, "iodriftd")
    shutil.copy(os.environ["IODRIFTD"], binary)
    os.chmod(binary, 0o755)
    config = os.path.join(work, "iodrift.yaml")
    dbus.write_two_probe_config(config, work)
    state = os.path.join(work, "state")
    os.makedirs(state)
    for path in (state, os.path.join(work, "target"), config):
        shutil.chown(path, "iodrift", "iodrift")

    # 1. Debian's system bus rules plus the installed policy.
    with PrivateBus(system_config(work), f"{work}/system_bus_socket") as bus:
        env = {"DBUS_SYSTEM_BUS_ADDRESS": bus.address}
        env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        with start_daemon(binary, config, state, env) as d:
            addr = bus.address
            dbus.wait_for_service(addr, d)
            if "serving org.iodrift.Monitor1 on the system bus" not in d.stderr():
                fail(f"dbus=auto as a non-root user did not take the system bus: "
                     f"{d.stderr()}")
            owner = dbus.busctl(addr, "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                "org.freedesktop.DBus", "GetNameOwner", "s", NAME)
            unique = owner.stdout.split('"')[1] if '"' in owner.stdout else ""
            uid = dbus.busctl(addr, "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                              "org.freedesktop.DBus", "GetConnectionUnixUser", "s", unique)
            want_uid = subprocess.run(["id", "-u", "iodrift"], capture_output=True,
                                      text=True).stdout.strip()
            if uid.stdout.strip() != f"u {want_uid}":
                fail(f"name owner {unique} has uid {uid.stdout}{uid.stderr}, "
                     f"want iodrift ({want_uid})")

            expect_ok(call(addr, "ListProbes", prefix=NOBODY), "nobody ListProbes", '"rnd"')
            expect_ok(call(addr, "Snapshot", prefix=NOBODY), "nobody Snapshot", '"MemTotal"')
            expect_ok(call(addr, "Explain", "s", "rnd", prefix=NOBODY), "nobody Explain",
                      "probe rnd")
            expect_ok(call(addr, "Boots", "s", "rnd", prefix=NOBODY), "nobody Boots",
                      "probe rnd")
            expect_ok(dbus.busctl(addr, "get-property", NAME, PATH, IFACE, "Version",
                                  prefix=NOBODY), "nobody Version", "s ")
            # The bus refuses (its policy): org.freedesktop.DBus.Error.AccessDenied.
            expect_denied(gcall(addr, "RunProbe", "rnd", prefix=NOBODY), "nobody RunProbe",
                          "org.freedesktop.DBus.Error.AccessDenied")
            expect_denied(gcall(addr, "Reload", prefix=NOBODY), "nobody Reload",
                          "org.freedesktop.DBus.Error.AccessDenied")
            expect_ok(call(addr, "RunProbe", "s", "rnd", prefix=MEMBER), "group member RunProbe",
                      '"success" b true')
            expect_ok(call(addr, "RunProbe", "s", "rnd"), "root RunProbe", '"success" b true')
            if d.stop() != 0:
                fail(f"iodriftd did not exit 0 on SIGTERM: {d.stderr()}")

    # 2. A bus whose policy lets everything through: the daemon's own check still holds.
    open_conf = os.path.join(work, "open.conf")
    with open(open_conf, "w") as f:
        f.write(PERMISSIVE_CONFIG.format(dir=work))
    with PrivateBus(open_conf, f"{work}/open_bus_socket") as bus:
        addr = bus.address
        d = Daemon("--config", config, "--state-dir", state, "--dbus", addr)
        d.args = [*AS_IODRIFT, binary, *d.args[1:]]
        with d:
            dbus.wait_for_service(addr, d)
            expect_ok(call(addr, "ListProbes", prefix=NOBODY), "open bus: nobody ListProbes",
                      '"rnd"')
            expect_denied(gcall(addr, "RunProbe", "rnd", prefix=NOBODY),
                          "open bus: nobody RunProbe", "org.iodrift.Error.AccessDenied")
            expect_denied(gcall(addr, "Reload", prefix=NOBODY), "open bus: nobody Reload",
                          "org.iodrift.Error.AccessDenied")
            expect_ok(call(addr, "RunProbe", "s", "rnd", prefix=MEMBER),
                      "open bus: group member RunProbe", '"success" b true')
finally:
    shutil.rmtree(work, ignore_errors=True)
    user.__exit__(None, None, None)
print("ok")
