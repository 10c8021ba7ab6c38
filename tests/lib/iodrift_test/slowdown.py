"""Machine states that slow reads down, for the slowdown bench and e2e test.

    with ReadThrottle(loop_dev, 40 << 20) as t:   # block cgroup read limit on the device
        t.add(pid)
    warm_free_memory(1 << 30)                     # touch + release: pages backed again
    with Fragmented(2 << 30): ...                 # half of 2 GiB freed page by page, held
    negative_dentries(dir, 1_000_000)             # stat() of names that do not exist
    with PageCacheFiller(dir, 4 << 30): ...       # clean page cache read from a sparse file
    writer_dir = squeeze_writer_dir(scratch, "w")  # ext4 on a loop device over a tmpfs file
    with MemorySqueeze(pid, writer_dir): ...      # pid's memory cgroup: its anon + 8 MiB, a writer

Each is reversible and cleans up on exit. ReadThrottle is iodrift_test.throttle's (v1
blkio.throttle.read_bps_device and v2 io.max, on iodrift_test.cgroup), here for these callers.
"""
import contextlib
import mmap
import os
import signal
import subprocess

from iodrift_test.cgroup import Cgroup
from iodrift_test.devices import sh
from iodrift_test.throttle import ReadThrottle  # noqa: F401  (re-exported)

PAGE = os.sysconf("SC_PAGE_SIZE")


def mem_available():
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) << 10
    return 0


def warm_free_memory(size):
    """Touches `size` bytes of fresh anonymous memory and releases it at once: the free pages it
    leaves behind are backed by the hypervisor again (until free page reporting takes them back,
    ~2 s here). Bounded by half of MemAvailable."""
    size = min(size, mem_available() // 2) // PAGE * PAGE
    if size <= 0:
        return 0
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        for off in range(0, size, PAGE):
            m[off] = 1
    finally:
        m.close()
    return size


class Fragmented:
    """Holds `size` bytes of anonymous memory of which every other page was released
    (MADV_DONTNEED): the free memory it leaves is in single pages. Released on exit."""

    def __init__(self, size):
        self.size = min(size, mem_available() // 2) // (2 * PAGE) * (2 * PAGE)
        self.m = None

    def __enter__(self):
        self.m = mmap.mmap(-1, self.size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        self.m.madvise(mmap.MADV_NOHUGEPAGE)
        for off in range(0, self.size, PAGE):
            self.m[off] = 1
        for off in range(0, self.size, 2 * PAGE):
            self.m.madvise(mmap.MADV_DONTNEED, off, PAGE)
        return self

    def __exit__(self, *exc):
        if self.m is not None:
            self.m.close()
            self.m = None


def negative_dentries(directory, count):
    """stat()s `count` names that do not exist in `directory`: each leaves a negative dentry."""
    for i in range(count):
        try:
            os.stat(os.path.join(directory, f"nx{i:08d}"))
        except FileNotFoundError:
            pass


class PageCacheFiller:
    """Reads `size` bytes of a sparse file in `directory` so clean page cache fills memory (held
    until exit, then dropped with fadvise DONTNEED and the file removed)."""

    def __init__(self, directory, size):
        self.path = os.path.join(directory, "iodrift-pagecache-filler")
        self.size = size

    def __enter__(self):
        with open(self.path, "wb") as f:
            f.truncate(self.size)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            chunk = 8 << 20
            off = 0
            while off < self.size:
                n = len(os.pread(fd, chunk, off))
                if n == 0:
                    break
                off += n
        finally:
            os.close(fd)
        return self

    def __exit__(self, *exc):
        try:
            fd = os.open(self.path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
            os.unlink(self.path)
        except OSError:
            pass


def tmpfs_loop(scratch, name, size, *losetup_args):
    """ext4 on a loop device over a file in a tmpfs of its own (RAM: no disk under it)."""
    mem = scratch.mount("tmpfs", name + "-mem", "-t", "tmpfs", "-o", f"size={(size >> 20) + 40}m")
    img = os.path.join(mem, "fs.img")
    with open(img, "wb") as f:
        f.truncate(size)
    dev = scratch.attach(img, *losetup_args)
    sh("mkfs.ext4", "-q", "-F", dev)
    return dev


def squeeze_writer_dir(scratch, name):
    """Where MemorySqueeze's writer writes: ext4 on a loop device over a tmpfs file, so its
    writeback never reaches the disk under a probe's loop device (on a disk-backed writer, the
    probe's reads queued behind its writeback: a device cause as well)."""
    return scratch.mount(tmpfs_loop(scratch, name, 600 << 20), name + "-mnt")


class MemorySqueeze:
    """Page-cache reclaim in the memory cgroup of process `pid` (the cause zoo's memory_high,
    e2e.slowdown's memory phase): inside `with`, `pid` is in a memory cgroup of its own limited
    to its anonymous memory + `room` bytes (v2 memory.high, v1 memory.limit_in_bytes), shared with
    a nice-19 `dd` loop dirtying a file in `writer_dir` (squeeze_writer_dir()). A buffered read
    larger than the room has its readahead reclaimed before it is read and reads it again, and
    reclaim waits on the writer's dirty pages; O_DIRECT reads allocate no page cache. On exit the
    writer is killed, the limit lifted, `pid` moved back and the cgroup removed. `missing` says
    why this machine has no memory cgroup (then `with` does nothing)."""

    def __init__(self, pid, writer_dir, room=8 << 20, cgroup=None):
        self.pid, self.writer_dir, self.room = pid, writer_dir, room
        self.cg = cgroup or Cgroup("squeeze", "memory")
        self.missing = self.cg.missing
        self.stack = contextlib.ExitStack()

    def __enter__(self):
        if self.missing:
            return self
        try:
            self.stack.callback(self.cg.close)
            self.cg.add(self.pid)
            self.cg.memory_limit(self.cg.anon_bytes() + self.room)
            self.stack.callback(self.cg.memory_limit, None)
            fill = os.path.join(self.writer_dir, "fill")
            # Each dd at oom_score_adj 1000: when the limit leaves an allocation nothing to
            # reclaim (the writer's own __GFP_NOFAIL buffer heads under GFP_NOFS), the cgroup's
            # OOM killer takes that dd, and the loop starts another, not the process under test
            # (seen: iodriftd killed at usage 8448 of 8448 kB in 1 of 4 zoo runs).
            writer = subprocess.Popen(
                ["sh", "-c", f"echo $$ > {self.cg.path}/cgroup.procs && while :; do "
                 "(echo 1000 > /proc/self/oom_score_adj && exec nice -n 19 dd if=/dev/zero "
                 f"of={fill} bs=1M count=512 conv=notrunc 2>/dev/null); done"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            self.stack.callback(kill_group, writer)
        except BaseException:
            self.stack.close()
            raise
        return self

    def __exit__(self, *exc):
        self.stack.close()


def kill_group(proc):
    """Kills the process group of `proc` (started with start_new_session) and reaps `proc`."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
