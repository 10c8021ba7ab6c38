"""A cgroup of a test's own for one controller, on cgroup v2 where the controller is there, else on
its v1 hierarchy — with the limits the tests use, written for either:

    cg = Cgroup("mem", "memory")     # cg.missing: why not (no such controller), else cg.path
    cg.add(pid)                      # the whole process (move_charge=True: v1 takes its memory)
    cg.release(pid)                  # back to the root
    cg.memory_limit(64 << 20)        # v2 memory.high, v1 memory.limit_in_bytes; None lifts it
    cg.memory_limit(64 << 20, hard=True)  # v2 memory.max instead of memory.high
    cg.read_bps("/dev/loop3", 20 << 20)   # v2 io.max rbps, v1 blkio.throttle.read_bps_device
    cg.cpu_quota(0.1)                # v2 cpu.max, v1 cpu.cfs_quota_us/cfs_period_us
    cg.wrap(cmd)                     # a command list that runs as a member
    cg.close()                       # members back to the root, the cgroup removed
    with Cgroup(...) as cg: ...      # close() on exit

The one implementation of a test's cgroup: the block read throttle (throttle.py), the memory
squeeze (e2e.memory_squeeze) and the causes zoo use it.
"""
import contextlib
import os
import shlex
import time

CGROUP_ROOT = "/sys/fs/cgroup"


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


V1_DIRS = {"io": "blkio", "memory": "memory", "cpu": "cpu"}


class Cgroup:
    """A cgroup of our own for one controller ("io", "memory", "cpu"): on cgroup v2 where the
    controller is there (enabled in the root's subtree_control), else on its v1 hierarchy
    (blkio, memory, cpu). `missing` says why neither is usable. close() moves its members back
    to the root and removes it."""

    def __init__(self, name, controller):
        """`name` is made unique per test process (iodrift-test-PID-NAME is the cgroup's name)."""
        self.controller = controller
        self.missing = None
        self.path = None
        leaf = f"iodrift-test-{os.getpid()}-{name}"
        v1 = os.path.join(CGROUP_ROOT, V1_DIRS[controller])
        for root in (CGROUP_ROOT, os.path.join(CGROUP_ROOT, "unified")):
            try:
                available = open(os.path.join(root, "cgroup.controllers")).read().split()
            except OSError:
                continue
            if controller in available:
                _write(os.path.join(root, "cgroup.subtree_control"), f"+{controller}")
                self.v1, self.root = False, root
                break
        else:
            if not os.path.isfile(os.path.join(v1, "cgroup.procs")):
                self.missing = f"no {controller} cgroup controller (v2 or v1 {v1})"
                return
            self.v1, self.root = True, v1
        self.path = os.path.join(self.root, leaf)
        os.makedirs(self.path, exist_ok=True)

    def set(self, key, value):
        _write(os.path.join(self.path, key), value)

    def get(self, key):
        with open(os.path.join(self.path, key)) as f:
            return f.read()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def add(self, pid, move_charge=False):
        """Moves the whole process `pid` in. move_charge (v1 memory): its memory comes along, so
        the limit counts it (refused by kernels that deprecated charge moving: ignored)."""
        if move_charge and self.v1 and self.controller == "memory":
            with contextlib.suppress(OSError):
                self.set("memory.move_charge_at_immigrate", "3")
        self.set("cgroup.procs", str(pid))

    def release(self, pid):
        """Moves `pid` back to the root."""
        _write(os.path.join(self.root, "cgroup.procs"), str(pid))

    def wrap(self, cmd):
        """`cmd` (a list) run as a member of this cgroup."""
        procs = os.path.join(self.path, "cgroup.procs")
        return ["sh", "-c", f'echo $$ > {shlex.quote(procs)} && exec "$@"', "sh", *cmd]

    # The three limits the zoo uses, v1 or v2; None lifts the limit.
    def read_bps(self, dev, bps):
        st = os.stat(dev)
        majmin = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        if self.v1:
            self.set("blkio.throttle.read_bps_device", f"{majmin} {bps or 0}")
        else:
            self.set("io.max", f"{majmin} rbps={bps or 'max'}")

    def memory_limit(self, limit, hard=False):
        """v2 memory.high (hard: memory.max); v1 memory.limit_in_bytes either way."""
        if self.v1:  # no memory.high on v1: the hard limit reclaims page cache the same way
            self.set("memory.limit_in_bytes", str(limit or -1))
        else:
            self.set("memory.max" if hard else "memory.high", str(limit or "max"))

    def anon_bytes(self):
        key = "rss" if self.v1 else "anon"
        for line in self.get("memory.stat").splitlines():
            k, v = line.split()
            if k == key:
                return int(v)
        return 0

    def cpu_quota(self, share):
        period = 100000
        if self.v1:
            self.set("cpu.cfs_period_us", str(period))
            self.set("cpu.cfs_quota_us", str(int(share * period) if share else -1))
        else:
            self.set("cpu.max", f"{int(share * period) if share else 'max'} {period}")

    def close(self):
        if self.missing or not self.path or not os.path.isdir(self.path):
            return
        try:
            pids = self.get("cgroup.procs").split()
        except OSError:
            pids = []
        for pid in pids:
            with contextlib.suppress(OSError):
                self.release(pid)
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)
