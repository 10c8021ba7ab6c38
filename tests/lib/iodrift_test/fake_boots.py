"""Boots faked for one daemon state dir: a copy of tests/fixtures/proc/local-6.18 whose boot_id and
uptime the caller changes between (or during) daemon lives, and one cached probe `hot` every
100 ms on a 1 MiB file. Used by statuspage.boots and tests/statuspage/boots_screenshot.py."""
import os
import shutil

from iodrift_test.config import write_config

FIXTURE = os.path.join(os.environ.get("IODRIFT_SOURCE_DIR", "."), "tests/fixtures/proc/local-6.18")


class FakeBoots:
    def __init__(self, work):
        """Lays out proc/, state/, target.dat and iodrift.yaml under `work` (which it does not
        remove)."""
        self.proc = os.path.join(work, "proc")
        shutil.copytree(FIXTURE, self.proc)
        self.state = os.path.join(work, "state")
        os.makedirs(self.state)
        target = os.path.join(work, "target.dat")
        with open(target, "wb") as f:
            f.write(os.urandom(1 << 20))
        self.config = write_config(os.path.join(work, "iodrift.yaml"), [
            {"name": "hot", "kind": "cached", "target": target, "interval": "100ms",
             "size": "256KiB", "timeout": "10s"}], dbus=None, log_level=None)

    def set_boot_id(self, boot_id):
        with open(os.path.join(self.proc, "sys/kernel/random/boot_id"), "w") as f:
            f.write(boot_id + "\n")

    def set_uptime(self, seconds):
        with open(os.path.join(self.proc, "uptime"), "w") as f:
            f.write(f"{seconds:.2f} {seconds * 1.5:.2f}\n")

    def daemon_args(self, *more):
        """iodriftd's arguments for one life on this state dir and proc root."""
        return ("--config", self.config, "--state-dir", self.state, "--proc-root", self.proc,
                *more)
