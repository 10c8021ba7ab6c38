"""Mount faultfs (tests/fuse/faultfs.c) for a test, and tear it down so that nothing ever hangs;
plus process facts for threads stuck in FUSE requests (threads, leader_state).

    from iodrift_test import fuse
    with fuse.mounted(size="8M") as fs:
        fs.path("hang.dat")        # absolute path inside the mount
        fs.stats()                 # {'reads': 3, 'hung': 1, 'writes': 0, ...} from `stats`
        fs.release()               # SIGUSR1: hung reads return data, hang.dat stops hanging
        fs.toggle_slow()           # SIGUSR2: slow.dat's sleep paused / resumed
    fuse.mounted(single_threaded=True)  # one request at a time: readers queue behind each other
    fuse.mounted(writable=True)   # slow.dat takes writes too (slept like reads, bytes discarded)

A thread blocked in a FUSE read cannot be freed by any signal (after a fatal signal it is in
state D and its process cannot even be reaped). So teardown, which runs on every exit — normal
return, assertion failure, exception, SIGTERM from CTest — never waits on the filesystem:
  1. abort the connection: write 1 to /sys/fs/fuse/connections/<dev>/abort (fusectl is mounted
     there first when it is not; unmounted again afterwards if we mounted it). Every pending
     request fails with ENOTCONN; blocked readers return.
  2. lazy unmount (umount -l, else fusermount3 -uz);
  3. stop faultfs (SIGTERM, SIGKILL after 3 s) and remove the mount point.
The connection id is the st_dev of the mount, taken from /proc/self/mountinfo (no syscall on the
mount itself, which may hang).

requirements() names what is missing (not root, no /dev/fuse, no faultfs binary) or returns None;
tests skip (exit 77) on it (need_faultfs() does that). The faultfs binary comes from $FAULTFS
(set by tests/fuse/CMakeLists.txt).
"""
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time

from iodrift_test.skip import skip_guaranteed

FUSECTL = "/sys/fs/fuse/connections"


def binary():
    return os.environ.get("FAULTFS", "")


def requirements():
    """None when faultfs can run here, else the reason it cannot."""
    if os.geteuid() != 0:
        return "needs root (mounting FUSE, fusectl abort)"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    path = binary()
    if not path or not os.access(path, os.X_OK):
        return f"faultfs not built (FAULTFS={path!r}; Debian: libfuse3-dev)"
    return None


def need_faultfs():
    """Skips (77) with requirements()' reason unless faultfs can run here."""
    reason = requirements()
    if reason:
        skip_guaranteed(reason)


def _mountinfo():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            # id parent maj:min root mountpoint opts ... - fstype source superopts
            sep = fields.index("-")
            maj, mnr = (int(x) for x in fields[2].split(":"))
            point = fields[4].replace("\\040", " ").replace("\\011", "\t") \
                             .replace("\\012", "\n").replace("\\134", "\\")
            yield point, maj, mnr, fields[sep + 1]


def mount_entry(mountpoint):
    """(major, minor, fstype) of the mount at `mountpoint` (the last one mounted), or None."""
    found = None
    for point, maj, mnr, fstype in _mountinfo():
        if point == mountpoint:
            found = (maj, mnr, fstype)
    return found


def wait_mounted(mountpoint, fstype, proc, what, log, timeout):
    """Waits until `mountpoint` is a mount of `fstype` (e.g. fuse.sshfs) made by process `proc`;
    returns its (major, minor). Raises RuntimeError with log() when `proc` exits first or after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        entry = mount_entry(mountpoint)
        if entry and entry[2] == fstype:
            return entry[:2]
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {log()}")
        time.sleep(0.02)
    raise RuntimeError(f"{what} did not mount {mountpoint} in {timeout} s: {log()}")


def _fusectl_mounted():
    return any(point == FUSECTL and fstype == "fusectl" for point, _, _, fstype in _mountinfo())


class FuseConnection:
    """The fusectl side of a FUSE mount whose `dev` is (major, minor) once mounted (faultfs,
    sshfs): abort() fails every pending and future request (ENOTCONN); release_fusectl()
    unmounts fusectl when abort() had to mount it."""

    dev = None
    mounted_fusectl = False

    def connection_dir(self):
        if self.dev is None:
            return None
        maj, mnr = self.dev
        # fusectl names a connection by the kernel's dev_t: MAJOR << 20 | MINOR.
        return os.path.join(FUSECTL, str((maj << 20) | mnr))

    def abort(self):
        """Aborts the FUSE connection; False when there is none (not mounted, already gone)."""
        conn = self.connection_dir()
        if conn is None:
            return False
        if not _fusectl_mounted():
            os.makedirs(FUSECTL, exist_ok=True)
            res = subprocess.run(["mount", "-t", "fusectl", "fusectl", FUSECTL],
                                 capture_output=True, text=True)
            self.mounted_fusectl = res.returncode == 0
        try:
            with open(os.path.join(conn, "abort"), "w") as f:
                f.write("1")
            return True
        except OSError:
            return False  # already gone (the daemon exited, connection released)

    def release_fusectl(self):
        if self.mounted_fusectl:
            subprocess.run(["umount", FUSECTL], capture_output=True)
            self.mounted_fusectl = False


class FaultFS(FuseConnection):
    def __init__(self, size="8M", hang_after=None, eio_after=None, slow_ms=None, lifetime=300,
                 debug=False, single_threaded=False, writable=False):
        self.mountpoint = os.path.realpath(tempfile.mkdtemp(prefix="iodrift-faultfs-"))
        self.args = [binary(), self.mountpoint, "-f", f"--size={size}",
                     f"--lifetime={int(lifetime)}"]
        if hang_after is not None:
            self.args.append(f"--hang-after={hang_after}")
        if eio_after is not None:
            self.args.append(f"--eio-after={eio_after}")
        if slow_ms is not None:
            self.args.append(f"--slow-ms={int(slow_ms)}")
        if debug:
            self.args.append("-d")
        if single_threaded:  # libfuse's -s: one request at a time, in arrival order
            self.args.append("-s")
        if writable:  # slow.dat takes writes: each sleeps slow_ms, its bytes are discarded
            self.args.append("--writable")
        self.proc = None
        self.dev = None  # (major, minor)
        self.log_path = self.mountpoint + ".log"
        self.mounted_fusectl = False

    # -- public ---------------------------------------------------------------------------------
    def path(self, name):
        return os.path.join(self.mountpoint, name)

    def stats(self):
        """The `stats` file as a dict of ints (reads, hung, hung_total, eio, slow, released)."""
        with open(self.path("stats")) as f:
            text = f.read()
        return {k: int(v) for k, v in (item.split("=") for item in text.split())}

    def release(self):
        """Frees every hung read (they return data) and makes hang.dat behave like ok.dat."""
        self.proc.send_signal(signal.SIGUSR1)

    def toggle_slow(self):
        """Pauses slow.dat's per-read sleep, or resumes it (SIGUSR2 flips it)."""
        self.proc.send_signal(signal.SIGUSR2)

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self):
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.dev = wait_mounted(self.mountpoint, "fuse.faultfs", self.proc, "faultfs", self.log,
                                timeout=10)
        return self

    def stop(self):
        """Abort, lazy-unmount, stop faultfs, remove the mount point. Never blocks on the FS."""
        errors = []
        if self.dev is not None:
            self.abort()
        entry = mount_entry(self.mountpoint)
        if entry is not None:
            res = subprocess.run(["umount", "-l", self.mountpoint], capture_output=True, text=True)
            if res.returncode != 0 and shutil.which("fusermount3"):
                res = subprocess.run(["fusermount3", "-uz", self.mountpoint],
                                     capture_output=True, text=True)
            if res.returncode != 0:
                errors.append(f"unmount {self.mountpoint}: {res.stderr.strip()}")
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(3)
        self.release_fusectl()
        if getattr(self, "_log", None):
            self._log.close()
        try:
            os.rmdir(self.mountpoint)
        except OSError as e:
            errors.append(f"rmdir {self.mountpoint}: {e}")
        with contextlib.suppress(OSError):
            os.unlink(self.log_path)
        return errors


@contextlib.contextmanager
def sigterm_exits():
    """SIGTERM (CTest's timeout) raises SystemExit inside, so the `finally` of a mount's teardown
    runs then too; the previous handler is back on exit. (faultfs and sshfs mounts.)"""

    def on_term(signum, frame):
        raise SystemExit(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def mounted(**kwargs):
    """Mounts faultfs at a temporary directory; always aborts, unmounts and stops it on exit.

    SIGTERM (CTest's timeout) is turned into SystemExit while the mount exists, so the teardown
    runs then too.
    """
    fs = FaultFS(**kwargs)
    with sigterm_exits():
        try:
            fs.start()
            yield fs
        finally:
            errors = fs.stop()
            if errors:
                print("faultfs teardown: " + "; ".join(errors))


@contextlib.contextmanager
def bound_over(fs, name, target):
    """Bind-mounts the faultfs file NAME over TARGET (e.g. a file of a --proc-root tree). On exit
    the FUSE connection is aborted first, so a read blocked in it cannot hold the unmount, then
    TARGET is unmounted lazily."""
    subprocess.run(["mount", "--bind", fs.path(name), target], check=True, capture_output=True)
    try:
        yield
    finally:
        fs.abort()
        subprocess.run(["umount", "-l", target], capture_output=True)


def threads(pid):
    """Threads of process `pid` (from /proc/PID/status), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def leader_state(pid):
    """State letter of the thread-group leader (R, S, D, Z, …), or None when the process is gone.

    A process one of whose threads is stuck in a FUSE request cannot be reaped after it exits:
    its leader shows Z while the stuck thread stays in D until the request ends.
    """
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None
