"""A real network filesystem over loopback: a private sshd on 127.0.0.1 (free port, generated
host and client keys, its own config; nothing of the system's sshd is used) and sshfs mounting
a directory it serves. Teardown never hangs on a server that went away: the FUSE connection is
aborted (fusectl, as in iodrift_test.fuse), the mount lazily unmounted, sshfs/ssh/sshd killed.

    from iodrift_test import sshfs
    sshfs.need_sshfs()                          # skipped (77) unless root with sshfs and sshd
    with sshfs.mounted() as m:
        m.mountpoint, m.export                  # the sshfs mount, the directory it serves
        m.freeze()                              # SIGSTOP the session's ssh: reads hang
"""
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from iodrift_test import fuse
from iodrift_test.net import free_port
from iodrift_test.skip import skip_guaranteed


def need_sshfs():
    """Skips (77) unless root with /dev/fuse, sshfs, sshd, ssh and ssh-keygen."""
    if os.geteuid() != 0:
        skip_guaranteed("needs root (private sshd, FUSE mount, fusectl abort)")
    if not os.path.exists("/dev/fuse"):
        skip_guaranteed("no /dev/fuse")
    for tool in ("sshfs", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            skip_guaranteed(f"{tool} is not installed (Debian: sshfs, openssh-client)")
    if sshd_binary() is None:
        skip_guaranteed("sshd is not installed (Debian: openssh-server)")


def sshd_binary():
    for path in (shutil.which("sshd"), "/usr/sbin/sshd"):
        if path and os.access(path, os.X_OK):
            return path
    return None


def children(pid):
    """Direct child pids of `pid` (from /proc/*/stat)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            out.append(int(entry))
    return out


def descendants(pid):
    """Every process below `pid`."""
    out, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        out += kids
        todo += kids
    return out


class SshfsMount(fuse.FuseConnection):
    def __init__(self, options=(), proxy=None):
        self.dir = tempfile.mkdtemp(prefix="iodrift-sshfs-", dir="/var/tmp")
        os.chmod(self.dir, 0o755)
        self.export = os.path.join(self.dir, "export")
        self.mountpoint = os.path.join(self.dir, "mnt")
        os.makedirs(self.export, mode=0o755)
        os.makedirs(self.mountpoint)
        self.options = list(options)
        self.sshd = None
        self.sshfs = None
        self.dev = None
        self.mounted_fusectl = False
        self.port = free_port()
        self.proxy_factory = proxy  # sshd port -> object with .port and .close(): sshfs uses it
        self.proxy = None

    def path(self, *parts):
        return os.path.join(self.mountpoint, *parts)

    def _keys(self):
        for name in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            os.path.join(self.dir, name)], check=True, capture_output=True)
        shutil.copy(os.path.join(self.dir, "client_key.pub"),
                    os.path.join(self.dir, "authorized_keys"))
        os.chmod(os.path.join(self.dir, "authorized_keys"), 0o600)

    def start(self):
        self._keys()
        config = os.path.join(self.dir, "sshd_config")
        with open(config, "w") as f:
            f.write(f"Port {self.port}\nListenAddress 127.0.0.1\n"
                    f"HostKey {self.dir}/host_key\nPidFile {self.dir}/sshd.pid\n"
                    f"AuthorizedKeysFile {self.dir}/authorized_keys\n"
                    "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                    "Subsystem sftp internal-sftp\n")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation dir
        self._sshd_log = open(os.path.join(self.dir, "sshd.log"), "w")
        self.sshd = subprocess.Popen([sshd_binary(), "-D", "-e", "-f", config],
                                     stdout=self._sshd_log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                break
            except OSError:
                if self.sshd.poll() is not None:
                    raise RuntimeError(f"sshd exited {self.sshd.returncode}: {self.sshd_log()}")
                time.sleep(0.05)
        else:
            raise RuntimeError(f"sshd did not listen in 10 s: {self.sshd_log()}")
        self._sshfs_log = open(os.path.join(self.dir, "sshfs.log"), "w")
        if self.proxy_factory:
            self.proxy = self.proxy_factory(self.port)
        opts = ["-f", "-p", str(self.proxy.port if self.proxy else self.port),
                "-o", f"IdentityFile={self.dir}/client_key", "-o", "IdentitiesOnly=yes",
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "BatchMode=yes", "-o", "LogLevel=ERROR"]
        for o in self.options:
            opts += ["-o", o]
        self.sshfs = subprocess.Popen(["sshfs", *opts, f"root@127.0.0.1:{self.export}",
                                       self.mountpoint],
                                      stdin=subprocess.DEVNULL, stdout=self._sshfs_log,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        self.dev = fuse.wait_mounted(self.mountpoint, "fuse.sshfs", self.sshfs, "sshfs",
                                     self.sshfs_log, timeout=max(1.0, deadline + 10 - time.monotonic()))
        return self

    def sshd_log(self):
        with contextlib.suppress(OSError), open(os.path.join(self.dir, "sshd.log")) as f:
            return f.read()
        return ""

    def sshfs_log(self):
        with contextlib.suppress(OSError), open(os.path.join(self.dir, "sshfs.log")) as f:
            return f.read()
        return ""

    def ssh_pids(self):
        """The ssh client process(es) sshfs started for its session (sshfs double-forks it, so
        it is found by its command line: our own client key)."""
        key = f"IdentityFile={self.dir}/client_key".encode()
        out = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmd = f.read().split(b"\0")
            except OSError:
                continue
            if cmd and os.path.basename(cmd[0]) == b"ssh" and any(key in a for a in cmd):
                out.append(int(entry))
        return out

    def freeze(self):
        """The server goes away without a word: SIGSTOP the session's ssh client and the sshd
        processes. Reads on the mount then block until teardown aborts the connection."""
        pids = self.ssh_pids()
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        if self.sshd:
            for pid in [self.sshd.pid] + descendants(self.sshd.pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGSTOP)
        return pids

    def stop(self):
        """Abort, lazy-unmount, kill sshfs/ssh/sshd, remove everything. Never blocks on the FS."""
        if self.dev is not None:
            self.abort()
        if fuse.mount_entry(self.mountpoint) is not None:
            res = subprocess.run(["umount", "-l", self.mountpoint], capture_output=True)
            if res.returncode != 0 and shutil.which("fusermount3"):
                subprocess.run(["fusermount3", "-uz", self.mountpoint], capture_output=True)
        procs = [p for p in (self.sshfs, self.sshd) if p is not None]
        extra = self.ssh_pids() + (descendants(self.sshd.pid) if self.sshd else [])
        for pid in extra:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for p in procs:
            if p.poll() is None:
                with contextlib.suppress(OSError):
                    os.kill(p.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(5)
        if self.proxy:
            self.proxy.close()
            self.proxy = None
        self.release_fusectl()
        for log in ("_sshd_log", "_sshfs_log"):
            if getattr(self, log, None):
                getattr(self, log).close()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def mounted(options=(), proxy=None):
    """A private sshd and an sshfs mount of its export dir; always torn down (SIGTERM from
    CTest included). `proxy(sshd_port)` (e.g. iodrift_test.delay_proxy.DelayProxy) puts a
    relay between sshfs and sshd; it is closed on teardown."""
    m = SshfsMount(options, proxy)
    with fuse.sigterm_exits():
        try:
            m.start()
            yield m
        finally:
            m.stop()
