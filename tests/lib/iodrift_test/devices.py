"""Loop devices, filesystems and mounts that are always cleaned up, plus whole-file and
whole-tree checksums (to show that nothing was written where it must not be).

    need_root("mkfs.ext4")
    with Scratch("mytest") as s:
        dev = s.loop(64 << 20, "fs")          # ext4 on a 64 MiB loop device
        mnt = s.mount(dev, "mnt")
"""
import errno
import hashlib
import os
import shutil
import subprocess
import tempfile

from iodrift_test.skip import fail, skip_guaranteed


def need_root(*tools):
    """Skips (77) unless root and losetup, mount, umount and every tool in `tools` are
    installed."""
    if os.geteuid() != 0:
        skip_guaranteed("needs root for loop devices and mounts")
    for tool in ("losetup", "mount", "umount") + tools:
        if shutil.which(tool) is None:
            skip_guaranteed(f"{tool} is not installed")


def sh(*cmd, check=True):
    """Runs `cmd`; returns its stripped stdout. Fails the test on a non-zero exit (unless
    check is False)."""
    res = subprocess.run(cmd, capture_output=True, text=True)
    if check and res.returncode != 0:
        fail(f"{' '.join(cmd)} exited {res.returncode}: {res.stderr.strip()}")
    return res.stdout.strip()


class Scratch:
    """A work dir under /var/tmp (mode 0755) plus the loop devices and mounts made in it;
    `close()` (or leaving the context manager, however the test ends) unmounts lazily and
    detaches in reverse order and removes the dir."""

    def __init__(self, prefix):
        self.dir = tempfile.mkdtemp(prefix=f"iodrift-{prefix}-", dir="/var/tmp")
        os.chmod(self.dir, 0o755)  # tests that run the daemon as nobody need to reach it
        self._loops, self._mounts = [], []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def image(self, size, name, fill_random=False):
        """A `size`-byte file work/<name>.img (sparse, or random data), fsynced; its path."""
        img = self.path(f"{name}.img")
        with open(img, "wb") as f:
            if fill_random:
                for _ in range(size >> 20):
                    f.write(os.urandom(1 << 20))
            else:
                f.truncate(size)
            f.flush()
            os.fsync(f.fileno())
        return img

    def attach(self, img, *losetup_args):
        """`losetup --show -f [ARGS] IMG`; the device is detached by close()."""
        dev = sh("losetup", "--show", "-f", *losetup_args, img)
        self._loops.append(dev)
        return dev

    def loop(self, size, name, fill_random=False, mkfs=True, mkfs_args=(), losetup_args=()):
        """A loop device over a `size`-byte image; ext4 on it unless mkfs is False."""
        dev = self.attach(self.image(size, name, fill_random), *losetup_args)
        if mkfs:
            sh("mkfs.ext4", "-q", "-F", *mkfs_args, dev)
        return dev

    def mount(self, source, name, *options):
        """Mounts `source` (a device, or a directory with options ("--bind",)) on work/<name>."""
        mnt = self.path(name)
        os.makedirs(mnt, exist_ok=True)
        sh("mount", *options, source, mnt)
        self._mounts.append(mnt)
        return mnt

    def remount_ro(self, mnt):
        sh("mount", "-o", "remount,bind,ro", mnt)

    def close(self):
        for mnt in reversed(self._mounts):
            subprocess.run(["umount", "-l", mnt], capture_output=True)
        for dev in reversed(self._loops):
            subprocess.run(["losetup", "-d", dev], capture_output=True)
        self._mounts, self._loops = [], []
        shutil.rmtree(self.dir, ignore_errors=True)


def fill_filesystem(mnt, name="filler"):
    """Fills the filesystem mounted at `mnt` to the last byte of its last block with the file
    `name` (remove it to make room again), then syncs."""
    with open(os.path.join(mnt, name), "wb", buffering=0) as f:
        for chunk in (65536, 4096, 512, 1):
            try:
                while True:
                    f.write(b"\x5a" * chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
    os.sync()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tree_digest(root, exclude=()):
    """{relative path: (type, mode, size, sha256 or link target)} of everything under `root`,
    except the subtrees whose relative paths are in `exclude`. Directories appear too, so a
    created or removed entry shows."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames
                             if os.path.normpath(os.path.join(rel_dir, d)) not in exclude)
        for name in dirnames + sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if rel in exclude:
                continue
            st = os.lstat(full)
            if os.path.islink(full):
                out[rel] = ("link", st.st_mode, 0, os.readlink(full))
            elif os.path.isdir(full):
                out[rel] = ("dir", st.st_mode, 0, "")
            else:
                out[rel] = ("file", st.st_mode, st.st_size, sha256_file(full))
    return out


def diff_trees(before, after):
    """Human-readable differences between two tree_digest() results (empty: equal)."""
    out = []
    for rel in sorted(set(before) | set(after)):
        if rel not in after:
            out.append(f"removed {rel}")
        elif rel not in before:
            out.append(f"created {rel}")
        elif before[rel] != after[rel]:
            out.append(f"changed {rel}: {before[rel]} -> {after[rel]}")
    return out
