#!/usr/bin/env python3
"""Malformed and hostile D-Bus calls get proper D-Bus errors and never hurt the daemon.

On a private bus, each call below must come back as the named error (busctl for typed
arguments, a raw connection for a 1 MB string, which no command line can carry), and after each
one the daemon must still be running, answer ListProbes and serve /metrics:

  RunProbe("nope"), RunProbe(""), RunProbe(<1 MiB of "a">), RunProbe("../../etc/passwd"),
  RunProbe("/dev/vda"), "mem " / "mem\\n" / "MEM" (near misses), Boots("nope"),
  Boots("../../etc/passwd"), Boots(<1 MiB>) (its reply under 4 KiB)        → UnknownProbe
  RunProbe(int32 5), RunProbe(), RunProbe("mem", "extra"), Reload("x"), Snapshot(uint32 1),
  Boots(int32 5)
                                                        → org.freedesktop.DBus.Error.InvalidArgs
  Frobnicate() on the interface, ListProbes on another interface or object path
                                                        → UnknownMethod / UnknownInterface / UnknownObject
  Set Version (read-only), Get of a missing property     → PropertyReadOnly / UnknownProperty
                                                          (or InvalidArgs, sd-bus's spelling)

Finally a valid RunProbe still succeeds and the daemon exits 0 on SIGTERM. No probe may run
for a rejected call: the scheduler's first runs (2 and 3 s after start, then hourly) are awaited
before the first bad call, and iodrift_probe_runs_total must not move from there.
"""
import os
import shutil
import struct
import tempfile

from iodrift_test import dbus, dbus_wire
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.dbus import IFACE, NAME, PATH
from iodrift_test.skip import fail, need_tools
from iodrift_test.wait import wait_for


need_tools("dbus-daemon", "busctl")

UNKNOWN_PROBE = "org.iodrift.Error.UnknownProbe"
INVALID_ARGS = "org.freedesktop.DBus.Error.InvalidArgs"


class RawConnection(dbus_wire.Connection):
    """dbus_wire.Connection that also keeps the first string of an error reply (its message)."""

    def error_reply(self, serial):
        while True:
            if len(self.buf) >= 16:
                _, mtype, _, _, body_len, _, fields_len = struct.unpack_from("<cBBBIII", self.buf)
                head = 16 + fields_len + (-(16 + fields_len) % 8)
                total = head + body_len
                if len(self.buf) >= total:
                    msg, self.buf = self.buf[:total], self.buf[total:]
                    fields = self._fields(msg[16:16 + fields_len])
                    if fields.get(5) != serial or mtype not in (2, 3):
                        continue
                    if mtype == 2:
                        return ("return", None, total)
                    text = ""
                    if body_len >= 4:
                        (n,) = struct.unpack_from("<I", msg, head)
                        text = msg[head + 4:head + 4 + n].decode(errors="replace")
                    return (fields.get(4), text, total)
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("connection closed")
            self.buf += chunk


work = tempfile.mkdtemp(prefix="iodrift-dbus-bad-", dir="/var/tmp")
config = os.path.join(work, "iodrift.yaml")
dbus.write_two_probe_config(config, work)
try:
    with dbus.Bus() as bus, Daemon("--config", config, "--dbus", bus.address) as d:
        addr = bus.address
        dbus.wait_for_service(addr, d)

        def runs(probe):
            samples, _ = scrape(d)
            return sum(v for n, ls, v in samples
                       if n == "iodrift_probe_runs_total" and ls.get("probe") == probe)

        # Both probes' scheduled first runs, so that any later run is one a call caused.
        wait_for("the first scheduled runs of mem and rnd",
                 lambda: runs("mem") >= 1 and runs("rnd") >= 1, 60,
                 detail=lambda: d.stderr()[-3000:])
        scheduled = runs("rnd")

        def healthy(what):
            if d.proc.poll() is not None:
                fail(f"iodriftd died after {what}: exit {d.proc.returncode}\n"
                     f"{d.stderr()[-3000:]}")
            res = dbus.busctl(addr, "call", NAME, PATH, IFACE, "ListProbes", timeout=10)
            if res.returncode != 0:
                fail(f"ListProbes failed after {what}: {res.stderr}")
            samples, _ = scrape(d)
            return samples

        def busctl_call(what, want, *args, path=PATH, iface=IFACE):
            # busctl prints only the error message; with SYSTEMD_LOG_LEVEL=debug sd-bus also
            # logs the received error message with its name.
            res = dbus.run(["busctl", f"--address={addr}", "call", NAME, path, iface, *args],
                           timeout=20, env=dict(os.environ, SYSTEMD_LOG_LEVEL="debug"))
            out = res.stdout + res.stderr
            if res.returncode == 0:
                fail(f"{what}: succeeded, want {want}: {out}")
            if not any(w in out for w in want):
                fail(f"{what}: want one of {want}, got: {out.strip()[-600:]}")
            got = next(w for w in want if w in out)
            print(f"{what:48s} → {got}")
            healthy(what)

        # Names that are not configured: UnknownProbe, nothing runs.
        for label, name in (("RunProbe('nope')", "nope"), ("RunProbe('')", ""),
                            ("RunProbe('../../etc/passwd')", "../../etc/passwd"),
                            ("RunProbe('/dev/vda')", "/dev/vda"),
                            ("RunProbe('mem ')", "mem "), ("RunProbe('mem\\n')", "mem\n"),
                            ("RunProbe('MEM')", "MEM")):
            busctl_call(label, (UNKNOWN_PROBE,), "RunProbe", "s", name)
        busctl_call("Boots('nope')", (UNKNOWN_PROBE,), "Boots", "s", "nope")
        busctl_call("Boots('../../etc/passwd')", (UNKNOWN_PROBE,), "Boots", "s", "../../etc/passwd")

        # A 1 MiB name over a raw connection (too long for any command line).
        conn = RawConnection(addr)
        big = "a" * (1 << 20)
        reply = conn.error_reply(conn.send(NAME, PATH, IFACE, "RunProbe", big))
        conn.close()
        if reply[0] != UNKNOWN_PROBE:
            fail(f"RunProbe(1 MiB): got {reply[0]}: {reply[1][:200]!r}")
        print(f"{'RunProbe(<1 MiB name>)':48s} → {reply[0]} (reply {reply[2]} bytes)")
        healthy("a 1 MiB name")
        conn = RawConnection(addr)
        reply = conn.error_reply(conn.send(NAME, PATH, IFACE, "Boots", big))
        conn.close()
        if reply[0] != UNKNOWN_PROBE or reply[2] > 4096:
            fail(f"Boots(1 MiB): got {reply[0]}, {reply[2]} bytes: {reply[1][:200]!r}")
        print(f"{'Boots(<1 MiB name>)':48s} → {reply[0]} (reply {reply[2]} bytes)")
        healthy("a 1 MiB name to Boots")

        # Wrong argument types and counts.
        busctl_call("RunProbe(int32 5)", (INVALID_ARGS,), "RunProbe", "i", "5")
        busctl_call("RunProbe()", (INVALID_ARGS,), "RunProbe")
        busctl_call("RunProbe('mem', 'extra')", (INVALID_ARGS,), "RunProbe", "ss", "mem", "extra")
        busctl_call("RunProbe(array of strings)", (INVALID_ARGS,), "RunProbe", "as", "1", "mem")
        busctl_call("Reload('x')", (INVALID_ARGS,), "Reload", "s", "x")
        busctl_call("Snapshot(uint32 1)", (INVALID_ARGS,), "Snapshot", "u", "1")
        busctl_call("Boots(int32 5)", (INVALID_ARGS,), "Boots", "i", "5")

        # Unknown members, interfaces and objects.
        busctl_call("Frobnicate()", ("org.freedesktop.DBus.Error.UnknownMethod",), "Frobnicate")
        busctl_call("ListProbes on org.example.Nope",
                    ("org.freedesktop.DBus.Error.UnknownMethod",
                     "org.freedesktop.DBus.Error.UnknownInterface"),
                    "ListProbes", iface="org.example.Nope")
        busctl_call("ListProbes on /org/iodrift/Nope",
                    ("org.freedesktop.DBus.Error.UnknownObject",
                     "org.freedesktop.DBus.Error.UnknownMethod"),
                    "ListProbes", path="/org/iodrift/Nope")

        # Properties: Version is read-only; there is no property Nope.
        busctl_call("Set Version", ("org.freedesktop.DBus.Error.PropertyReadOnly", INVALID_ARGS,
                                    "org.freedesktop.DBus.Error.AccessDenied"),
                    "Set", "ssv", IFACE, "Version", "s", "9.9",
                    iface="org.freedesktop.DBus.Properties")
        busctl_call("Get Nope", ("org.freedesktop.DBus.Error.UnknownProperty", INVALID_ARGS),
                    "Get", "ss", IFACE, "Nope", iface="org.freedesktop.DBus.Properties")

        # Nothing ran for any of it; a valid call still works.
        healthy("everything")
        ran = runs("rnd") - scheduled
        if ran:
            fail(f"{ran:.0f} runs of rnd happened for rejected calls")
        res = dbus.busctl(addr, "--timeout=120", "call", NAME, PATH, IFACE, "RunProbe", "s",
                          "rnd", timeout=150)
        if res.returncode != 0 or '"success" b true' not in res.stdout:
            fail(f"a valid RunProbe after the bad input failed: {res.stdout[:300]}{res.stderr}")
        samples = healthy("a valid RunProbe")
        if d.stop() != 0:
            fail("iodriftd did not exit 0 on SIGTERM")
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
