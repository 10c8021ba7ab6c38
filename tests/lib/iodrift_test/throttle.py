"""A block-device read throttle: a cgroup (iodrift_test.cgroup, controller io) whose members may
read a device at most `bps` bytes/s (cgroup v2 io.max "MAJ:MIN rbps=N" where the io controller is
on the v2 hierarchy, else cgroup v1 blkio.throttle.read_bps_device — the same blk-throttle code).

    with ReadThrottle("/dev/loop3", 8 << 20) as t:   # limited from here to the end
        subprocess.run(t.wrap([iodriftd, "--once", ...]))   # a command inside it
        t.add(pid)                                   # or a running process
        t.limit(False)                               # lifted (True: back on)

Skips (77) when neither hierarchy offers a read throttle. Members go back to the root and the
cgroup is removed on exit (or close()).
"""
import contextlib

from iodrift_test.cgroup import Cgroup
from iodrift_test.skip import skip


class ReadThrottle:
    def __init__(self, device, bps, name="throttle"):
        self.device = device
        self.bps = int(bps)
        self.cgroup = Cgroup(name, "io")
        if self.cgroup.missing:
            skip(f"no block read throttle: {self.cgroup.missing}")
        self.path = self.cgroup.path
        self.kind = (f"cgroup v1 blkio.throttle.read_bps_device {self.bps}" if self.cgroup.v1
                     else f"cgroup v2 io.max rbps={self.bps}")

    def __enter__(self):
        self.limit(True)
        return self

    def __exit__(self, *exc):
        self.close()

    def limit(self, on):
        self.cgroup.read_bps(self.device, self.bps if on else None)

    def add(self, pid):
        self.cgroup.add(pid)

    def release(self, pid):
        self.cgroup.release(pid)

    def wrap(self, cmd):
        """`cmd` (a list) run as a member of the throttled cgroup."""
        return self.cgroup.wrap(cmd)

    def close(self):
        with contextlib.suppress(OSError):
            self.limit(False)
        self.cgroup.close()
