"""Machine states that slow reads down, for the slowdown bench and e2e test.

    with ReadThrottle(loop_dev, 40 << 20) as t:   # block cgroup read limit on the device
        t.add(pid)
    warm_free_memory(1 << 30)                     # touch + release: pages backed again
    with Fragmented(2 << 30): ...                 # half of 2 GiB freed page by page, held
    negative_dentries(dir, 1_000_000)             # stat() of names that do not exist
    with PageCacheFiller(dir, 4 << 30): ...       # clean page cache read from a sparse file

Each is reversible and cleans up on exit. ReadThrottle is iodrift_test.throttle's (v1
blkio.throttle.read_bps_device and v2 io.max, on iodrift_test.cgroup), here for these callers.
"""
import mmap
import os

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
