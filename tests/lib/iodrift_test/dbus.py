"""D-Bus for tests: a private dbus-daemon (session-like, or system-like with our deny-by-default
policy file), real clients (busctl, gdbus, iodriftctl) and waiting until iodriftd owns its name.
Many calls from one sender: iodrift_test.dbus_wire.

    need_tools("dbus-daemon", "busctl")
    with Bus() as bus, Daemon("--config", cfg, "--dbus", bus.address) as d:
        wait_for_service(bus.address, d)
        res = busctl(bus.address, "call", NAME, PATH, IFACE, "ListProbes")
"""
import contextlib
import os
import shutil
import subprocess
import tempfile
import time

from iodrift_test.config import write_config
from iodrift_test.daemon import ctl_binary
from iodrift_test.skip import fail, need_tools  # noqa: F401  (part of this module's API)

NAME = "org.iodrift.Monitor1"
PATH = "/org/iodrift/Monitor1"
IFACE = "org.iodrift.Monitor1"

SESSION_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={dir}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""

# The stock system.conf's default policy, plus our policy file: deny by default, our file opens
# what it opens.
SYSTEM_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={dir}/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <include>{policy}</include>
</busconfig>
"""


class Bus:
    """A private dbus-daemon; `address` is its address. Use as a context manager."""

    def __init__(self, system_policy=None):
        self.dir = tempfile.mkdtemp(prefix="iodrift-bus-")
        os.chmod(self.dir, 0o755)  # the policy test connects as nobody
        self.config = os.path.join(self.dir, "bus.conf")
        with open(self.config, "w") as f:
            if system_policy:
                f.write(SYSTEM_CONFIG.format(dir=self.dir, policy=system_policy))
            else:
                f.write(SESSION_CONFIG.format(dir=self.dir))
        self.proc = None
        self.address = None

    def __enter__(self):
        self.proc = subprocess.Popen(
            ["dbus-daemon", f"--config-file={self.config}", "--print-address", "--nofork"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line:
            fail(f"dbus-daemon printed no address: {self.proc.stderr.read()}")
        self.address = line
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def run(args, timeout=60, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


def busctl(address, *args, timeout=60, prefix=()):
    return run([*prefix, "busctl", f"--address={address}", *args], timeout=timeout)


def gdbus_call(address, method, *args, timeout=60, prefix=()):
    return run([*prefix, "gdbus", "call", "--address", address, "--dest", NAME,
                "--object-path", PATH, "--method", f"{IFACE}.{method}", *args], timeout=timeout)


def ctl(address, *args, timeout=120):
    return run([ctl_binary(), "--bus", address, *args], timeout=timeout)


def wait_for_service(address, daemon, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        res = busctl(address, "call", NAME, PATH, IFACE, "ListProbes", timeout=10)
        if res.returncode == 0:
            return res.stdout
        if daemon.proc.poll() is not None:
            fail(f"iodriftd exited with {daemon.proc.returncode}: {daemon.stderr()}")
        time.sleep(0.1)
    fail(f"{NAME} did not appear on the bus within {seconds} s: {daemon.stderr()}")


def write_two_probe_config(path, work, extra=""):
    """A config (state_dir WORK/state, then `extra` YAML) with two probes that run when asked and
    otherwise hourly, the scheduler's first runs 2 and 3 s after start: `mem` (memory, 16 MiB) and
    `rnd` (random on WORK/target, made here)."""
    target = os.path.join(work, "target")
    os.makedirs(target, exist_ok=True)
    probes = [{"name": "mem", "kind": "memory", "interval": "1h", "size": "16MiB"},
              {"name": "rnd", "kind": "random", "target": target, "interval": "1h"}]
    return write_config(path, probes, f"{work}/state", extra, dbus=None, log_level=None)


@contextlib.contextmanager
def service_user():
    """The packaged service's user and group `iodrift` (root only): created as the package does
    when missing, and removed again on leaving if it was created here."""
    created = False
    if subprocess.run(["getent", "passwd", "iodrift"], capture_output=True).returncode != 0:
        res = run(["useradd", "--system", "--user-group", "--no-create-home",
                   "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", "iodrift"])
        if res.returncode != 0:
            fail(f"useradd iodrift: {res.stderr}")
        created = True
    try:
        yield
    finally:
        if created:
            subprocess.run(["userdel", "iodrift"], capture_output=True)
            subprocess.run(["groupdel", "iodrift"], capture_output=True)
