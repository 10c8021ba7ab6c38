"""A block-device read throttle: a cgroup whose members may read a device at most `bps` bytes/s
(cgroup v2 io.max "MAJ:MIN rbps=N" where the io controller is on the v2 hierarchy, else cgroup v1
blkio.throttle.read_bps_device — the same blk-throttle code). Commands run inside it.

    with ReadThrottle("/dev/loop3", 8 << 20) as t:
        subprocess.run(t.wrap([iodriftd, "--once", ...]))

Skips (77) when neither hierarchy offers a read throttle. Removes the cgroup on exit.
"""
import os
import shlex
import time

from iodrift_test.skip import skip

V2 = "/sys/fs/cgroup"
V1_BLKIO = "/sys/fs/cgroup/blkio"


def _v2_root():
    for root in (V2, os.path.join(V2, "unified")):
        try:
            with open(os.path.join(root, "cgroup.controllers")) as f:
                if "io" in f.read().split():
                    return root
        except OSError:
            pass
    return None


class ReadThrottle:
    def __init__(self, device, bps, name="iodrift-throttle"):
        st = os.stat(device)
        self.majmin = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        self.bps = int(bps)
        self.name = f"{name}-{os.getpid()}"
        self.dir = None
        self.kind = None

    def __enter__(self):
        root = _v2_root()
        if root:
            with open(os.path.join(root, "cgroup.subtree_control"), "w") as f:
                f.write("+io")
            self.dir = os.path.join(root, self.name)
            os.makedirs(self.dir, exist_ok=True)
            with open(os.path.join(self.dir, "io.max"), "w") as f:
                f.write(f"{self.majmin} rbps={self.bps}")
            self.kind = f"cgroup v2 io.max rbps={self.bps}"
        elif os.path.exists(os.path.join(V1_BLKIO, "blkio.throttle.read_bps_device")):
            self.dir = os.path.join(V1_BLKIO, self.name)
            os.makedirs(self.dir, exist_ok=True)
            with open(os.path.join(self.dir, "blkio.throttle.read_bps_device"), "w") as f:
                f.write(f"{self.majmin} {self.bps}")
            self.kind = f"cgroup v1 blkio.throttle.read_bps_device {self.bps}"
        else:
            skip("no block read throttle: neither cgroup v2 io.max nor v1 blkio is available")
        return self

    def wrap(self, cmd):
        """`cmd` (a list) run as a member of the throttled cgroup."""
        procs = os.path.join(self.dir, "cgroup.procs")
        return ["sh", "-c", f'echo $$ > {shlex.quote(procs)} && exec "$@"', "sh", *cmd]

    def __exit__(self, *exc):
        if not self.dir:
            return
        for _ in range(50):  # members have exited; the kernel may need a moment to let go
            try:
                os.rmdir(self.dir)
                return
            except OSError:
                time.sleep(0.1)
