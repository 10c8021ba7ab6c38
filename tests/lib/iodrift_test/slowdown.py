"""Machine states that slow reads down, for the slowdown bench and e2e test (issue 15 item 4).

    with ReadThrottle(loop_dev, 40 << 20) as t:   # block cgroup read limit on the device
        t.add(pid)
    warm_free_memory(1 << 30)                     # touch + release: pages backed again
    with Fragmented(2 << 30): ...                 # half of 2 GiB freed page by page, held
    negative_dentries(dir, 1_000_000)             # stat() of names that do not exist
    with PageCacheFiller(dir, 4 << 30): ...       # clean page cache read from a sparse file

Each is reversible and cleans up on exit. v1 (blkio.throttle.read_bps_device) and v2 (io.max)
block cgroups are both handled.
"""
import mmap
import os
import time

from iodrift_test.skip import skip

PAGE = os.sysconf("SC_PAGE_SIZE")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def dev_numbers(dev):
    st = os.stat(dev)
    return os.major(st.st_rdev), os.minor(st.st_rdev)


class ReadThrottle:
    """A block cgroup of its own with a read bandwidth limit on `dev`; add() moves a process
    into it. Skips (77) when neither v1 blkio nor v2 io controller is available."""

    def __init__(self, dev, bytes_per_second, name=None):
        name = name or f"iodrift-throttle-{os.getpid()}"
        major, minor = dev_numbers(dev)
        self.v1 = os.path.isfile("/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device")
        if self.v1:
            self.path = os.path.join("/sys/fs/cgroup/blkio", name)
            self.limit_file = "blkio.throttle.read_bps_device"
            self.limit_text = f"{major}:{minor} {bytes_per_second}"
            self.clear_text = f"{major}:{minor} 0"
        else:
            root = "/sys/fs/cgroup"
            try:
                controllers = open(os.path.join(root, "cgroup.subtree_control")).read().split()
            except OSError:
                controllers = []
            if "io" not in controllers:
                skip("no block cgroup controller (neither v1 blkio.throttle.read_bps_device nor "
                     "io in the v2 root's cgroup.subtree_control)")
            self.path = os.path.join(root, name)
            self.limit_file = "io.max"
            self.limit_text = f"{major}:{minor} rbps={bytes_per_second}"
            self.clear_text = f"{major}:{minor} rbps=max"
        os.makedirs(self.path, exist_ok=True)
        self.pids = []

    def __enter__(self):
        self.limit(True)
        return self

    def __exit__(self, *exc):
        self.close()

    def limit(self, on):
        _write(os.path.join(self.path, self.limit_file), self.limit_text if on else self.clear_text)

    def add(self, pid):
        _write(os.path.join(self.path, "cgroup.procs"), str(pid))
        self.pids.append(pid)

    def close(self):
        try:
            self.limit(False)
        except OSError:
            pass
        parent = os.path.dirname(self.path)
        for pid in self.pids:
            try:
                _write(os.path.join(parent, "cgroup.procs"), str(pid))
            except OSError:
                pass
        for _ in range(20):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)


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
