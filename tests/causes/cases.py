"""The zoo's cases: each a zoo.Case whose setup makes a small probe set on its own loop device /
FUSE file / sshfs mount, and whose induce() holds the cause for the induced runs and removes it
on exit (however the test ends). A setup or induce that cannot produce its cause here returns
(yields) the reason: the case is reported skipped with it.

Everything a case creates (cgroups, loop devices, mounts, processes) goes on the case's ExitStack
or the test's Scratch and is removed on exit; nothing of anyone else's is touched.
"""
import contextlib
import os
import shutil
import subprocess
import sys

from iodrift_test import fuse, sshfs
from iodrift_test.cgroup import Cgroup
from iodrift_test.delay_proxy import DelayProxy
from iodrift_test.devices import sh
from iodrift_test.slowdown import MemorySqueeze, kill_group, squeeze_writer_dir, tmpfs_loop
from zoo import Case

FILE_MIB = 128
COMMON = {"interval": "1s", "size": "32MiB", "time_budget": "1s", "timeout": "30s"}


# -- helpers ---------------------------------------------------------------------------------------
def data_file(mnt, mib=FILE_MIB):
    path = os.path.join(mnt, "data")
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))
        os.fsync(f.fileno())
    return path


def loop_fs(scratch, name, in_memory=False):
    """ext4 on a --direct-io=on loop device with a FILE_MIB random data file: (dev, file). The
    image is on the disk under /var/tmp, or with in_memory in a tmpfs."""
    if in_memory:
        dev = tmpfs_loop(scratch, name, 512 << 20, "--direct-io=on")
    else:
        dev = scratch.loop(512 << 20, name, losetup_args=("--direct-io=on",))
    mnt = scratch.mount(dev, name + "-mnt")
    return dev, data_file(mnt)


def twin_probes(prefix, target):
    return [{"name": f"{prefix}-direct", "kind": "direct", "target": target, **COMMON},
            {"name": f"{prefix}-buffered", "kind": "buffered", "target": target, **COMMON}]


def spawn(stack, cmd):
    """A helper process in its own session, killed (the whole group) when the case ends."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)

    stack.callback(kill_group, proc)
    return proc


def in_cgroup(name, controller):
    """A Case.before that puts the running daemon in a new cgroup (removed after the daemon
    stops): ctx["cg"], or ctx["why"] when this machine has no such controller."""
    def before(ctx):
        cg = Cgroup(name, controller)
        ctx["cg"], ctx["why"] = (None, cg.missing) if cg.missing else (cg, None)
        if cg.missing:
            return
        ctx["stack"].callback(cg.close)
        cg.add(ctx["daemon"].proc.pid)
    return before


@contextlib.contextmanager
def nothing(ctx):
    yield None


# -- device: a block cgroup read throttle on the loop device ------------------------------------
def device_setup(scratch):
    dev, path = loop_fs(scratch, "dev")
    return {"probes": twin_probes("thr", path), "dev": dev}


@contextlib.contextmanager
def device_induce(ctx):
    if ctx["why"]:
        yield ctx["why"]
        return
    ctx["cg"].read_bps(ctx["dev"], 20 << 20)
    try:
        yield None
    finally:
        ctx["cg"].read_bps(ctx["dev"], None)


# -- device: a slow backing store (loop device over a FUSE file whose reads sleep) ---------------
def fuse_loop(**fuse_args):
    """A loop device over faultfs's slow.dat (every FUSE read of it sleeps slow_ms), read-only
    unless fuse_args has writable=True (then writes sleep too): {"dev", "fs", "stack"} (the stack
    detaches the loop device, then unmounts), or why not."""
    why = fuse.requirements()
    if why:
        return why
    stack = contextlib.ExitStack()
    try:
        fs = stack.enter_context(fuse.mounted(size=f"{FILE_MIB}M", **fuse_args))
        ro = () if fuse_args.get("writable") else ("-r",)
        dev = sh("losetup", "--show", "-f", *ro, fs.path("slow.dat"))
        # Detached before the FUSE connection is aborted (callbacks run last-in first-out).
        stack.callback(subprocess.run, ["losetup", "-d", dev], capture_output=True)
    except BaseException:
        stack.close()
        raise
    return {"dev": dev, "fs": fs, "stack": stack}


def slow_store_setup(scratch):
    store = fuse_loop(slow_ms=5)
    if isinstance(store, str):
        return store
    store["fs"].toggle_slow()  # paused: the baseline is formed on fast reads
    return dict(store, probes=twin_probes("store", store["dev"]))


@contextlib.contextmanager
def slow_store_induce(ctx):
    ctx["fs"].toggle_slow()  # every FUSE read of the backing file sleeps 5 ms
    try:
        yield None
    finally:
        ctx["fs"].toggle_slow()


# -- device_busy: another reader on the same device ----------------------------------------------
# A serialized, slow-but-steady device: a loop device over a FUSE file whose every read (1 MiB:
# the loop splits requests at 1280 KiB, FUSE at 1 MiB) sleeps BUSY_SLOW_MS in a single-threaded
# server, so requests are served one at a time in arrival order. The baseline forms on that
# device; then one O_DIRECT `dd` with BUSY_DD_BS blocks keeps several requests queued ahead of
# each of ours. The reader waits, it takes next to no CPU (a few ms per second), and the device's
# bytes are mostly its: our requests queue behind others'. (Two `dd` loops on a loop device over
# a host-cached file instead: others' share 70-93 %, but the device served 1.4 GB/s, the runs
# slowed mildly and alike in every part, and the loops took CPU on 2 cores.)
BUSY_SLOW_MS = 5
BUSY_DD_BS = "16M"


def busy_device(prefix, dd_args, writable=False):
    """(setup, induce) of a device_busy case: the serialized device (writable: faultfs
    --writable), twin probes named PREFIX-direct/-buffered, and once induced one `dd` loop with
    dd_args(dev) (another process's reads or writes queued ahead of ours)."""
    def setup(scratch):
        store = fuse_loop(slow_ms=BUSY_SLOW_MS, single_threaded=True, writable=writable)
        if isinstance(store, str):
            return store
        return dict(store, probes=twin_probes(prefix, store["dev"]))

    @contextlib.contextmanager
    def induce(ctx):
        if not shutil.which("dd"):
            yield "dd is not installed"
            return
        with contextlib.ExitStack() as stack:
            spawn(stack, ["sh", "-c", f"while :; do dd {dd_args(ctx['dev'])} 2>/dev/null; done"])
            yield None
    return setup, induce


def other_reader(dev):
    return f"if={dev} of=/dev/null bs={BUSY_DD_BS} iflag=direct"


# -- device_busy: another writer on the same device ----------------------------------------------
# The same serialized device, writable (faultfs --writable: a write sleeps BUSY_SLOW_MS like a
# read, and its bytes are discarded), and one O_DIRECT `dd` writing the device's upper half in
# BUSY_DD_BS blocks: its writes queue ahead of our reads in the single-threaded server. The probes
# read [0, 32 MiB) only; the writer writes [WRITE_FROM_MIB, FILE_MIB), so the probes never read
# what is written (and faultfs discards it anyway).
WRITE_FROM_MIB = FILE_MIB // 2


def other_writer(dev):
    blocks = int(BUSY_DD_BS.rstrip("M"))
    seek, count = WRITE_FROM_MIB // blocks, (FILE_MIB - WRITE_FROM_MIB) // blocks
    return (f"if=/dev/zero of={dev} bs={BUSY_DD_BS} seek={seek} count={count} oflag=direct "
            "conv=notrunc")


# -- memory_reclaim: the daemon in a memory cgroup whose limit forces reclaim ---------------------
# iodrift_test.slowdown.MemorySqueeze: the limit leaves 8 MiB of page cache, so the probe's
# readahead is reclaimed before it is read and read again (read amplification ~2x), and reclaim
# waits on a nice-19 dirty writer sharing the cgroup, on a loop device over a tmpfs file. The
# daemon joins the cgroup before its baseline (in_cgroup), so its anonymous memory is counted.
def reclaim_setup(scratch):
    dev, path = loop_fs(scratch, "reclaim")
    return {"probes": [{"name": "reclaim-buffered", "kind": "buffered", "target": path,
                        **dict(COMMON, size="96MiB")}],
            "writer_dir": squeeze_writer_dir(scratch, "reclaim-writer")}


@contextlib.contextmanager
def reclaim_induce(ctx):
    if ctx["why"]:
        yield ctx["why"]
        return
    with MemorySqueeze(ctx["daemon"].proc.pid, ctx["writer_dir"], cgroup=ctx["cg"]):
        yield None


# -- cpu_contention: CPU quota of the daemon's cgroup; busy loops on the daemon's CPU ------------
def cpu_probes(path, buffered_size=COMMON["size"]):
    """A cached and a buffered probe of `path`, the buffered one reading `buffered_size`."""
    return {"probes": [{"name": "cpu-cached", "kind": "cached", "target": path, **COMMON},
                       {"name": "cpu-buffered", "kind": "buffered", "target": path,
                        **dict(COMMON, size=buffered_size)}]}


def cpu_setup(scratch):
    return cpu_probes(loop_fs(scratch, "cpu")[1])


def pin_setup(scratch):
    # The loop device is over memory, and the buffered probe reads the whole file (~40 ms a run):
    # over the disk, a 32 or 128 MiB buffered run under the busy loops alternated slow and fast
    # (0.45, 1.39, 0.40, 1.08, 0.33, 1.33 ... of baseline), its kernel CPU per GiB doubling in
    # the slow runs, so it never stayed slow for the runs a verdict needs.
    return cpu_probes(loop_fs(scratch, "pin", in_memory=True)[1], f"{FILE_MIB}MiB")


@contextlib.contextmanager
def quota_induce(ctx):
    if ctx["why"]:
        yield ctx["why"]
        return
    with contextlib.ExitStack() as stack:
        # A busy loop in the same cgroup spends the quota, so the readers find it spent whenever
        # they run. Alone, a buffered run (~5 ms of mostly kernel CPU for 32 MiB) fit in the
        # 10 ms of a period in 3 of 20 runs and was not slowed by the quota at all.
        hog = spawn(stack, [sys.executable, "-c", "while True: pass"])
        ctx["cg"].add(hog.pid)
        ctx["cg"].cpu_quota(0.1)  # 10 % of one CPU
        stack.callback(ctx["cg"].cpu_quota, None)
        yield None


PIN_CPU = str(os.cpu_count() - 1)


def pin_before(ctx):
    sh("taskset", "-a", "-p", "-c", PIN_CPU, str(ctx["daemon"].proc.pid))


@contextlib.contextmanager
def pin_induce(ctx):
    # At nice -10 each loop weighs 9.3 times the daemon's threads, so a reader that wakes from
    # its I/O waits for a CPU on every wake-up. At the daemon's own priority the scheduler let
    # a reader that sleeps on I/O most of the time run at once: the buffered probe was slowed
    # for a lasting stretch in 3 of 10 runs.
    with contextlib.ExitStack() as stack:
        for _ in range(3):
            spawn(stack, ["nice", "-n", "-10", "taskset", "-c", PIN_CPU, sys.executable, "-c",
                          "while True: pass"])
        yield None


# -- remote_filesystem: sshfs through a relay that delays every chunk ----------------------------
def remote_setup(scratch):
    for tool in ("sshfs", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if sshfs.sshd_binary() is None or not os.path.exists("/dev/fuse"):
        return "sshd or /dev/fuse missing"
    stack = contextlib.ExitStack()
    try:
        m = stack.enter_context(sshfs.mounted(proxy=lambda port: DelayProxy(port)))
    except BaseException:
        stack.close()
        raise
    return {"probes": [{"name": "net-buffered", "kind": "buffered", "target": m.mountpoint,
                        **dict(COMMON, size="8MiB")}],
            "mount": m, "stack": stack}


@contextlib.contextmanager
def remote_induce(ctx):
    proxy = ctx["mount"].proxy
    proxy.delay_ms = 5
    try:
        yield None
    finally:
        proxy.delay_ms = 0


# -- healthy: nothing induced --------------------------------------------------------------------
# The healthy case's loop device is over a tmpfs file: on a disk-backed one the VM's disk itself
# varied (direct runs at 42-53 % of baseline with the loop device busy 2.3-2.7x as long per byte,
# nobody else on it, CPU pressure 0): a device that really was slower, which "device" names
# rightly. Over RAM nothing outside the machine moves, so any cause named is iodrift's error.
def healthy_setup(scratch):
    dev, path = loop_fs(scratch, "healthy", in_memory=True)
    return {"probes": twin_probes("ok", path) +
            [{"name": "ok-cached", "kind": "cached", "target": path, **COMMON}]}


COMPACTION_SKIP = (
    "not induced: the zoo has no reproducible recipe for direct compaction yet (not tried here: "
    "iodrift_test.slowdown.Fragmented leaves free memory in single pages, but whether a "
    "buffered read then compacts depends on the folio orders the filesystem's readahead asks "
    "for and on the host taking free memory back); kept out rather than flaky")


def compaction_setup(scratch):
    return COMPACTION_SKIP


# -- page_allocation: free memory left idle long enough to go back to the host ---------------
# The baseline forms with runs 1 s apart; then a reload spaces the same probe's runs IDLE_INTERVAL
# apart. Each run leaves its pages free when it ends (the probe drops its own cache); with
# virtio-balloon free page reporting, memory free for ~2 s is handed to the host, and the next
# page-cache fill has it faulted back in, as kernel CPU. Measured here (a 1 GiB and a 256 MiB
# buffered probe of a loop device, 1 s then 8 s apart): 20-44 % of baseline at 0.7-1.7 s/GiB of
# kernel CPU against 0.18, named page_allocation, and hypervisor_reclaim in the one run whose
# own step saw memory reported; `hdparm -t`'s 3 s pause slows its reads the same way
# (docs/benchmarks.md, "Parallel readers against fio --numjobs"). Where the host does not take
# memory back, no run slows and the case says skipped with its ratios.
IDLE_INTERVAL = "8s"


def idle_memory_setup(scratch):
    dev, path = loop_fs(scratch, "idle")
    return {"probes": [{"name": "idle-buffered", "kind": "buffered", "target": path,
                        **dict(COMMON, size=f"{FILE_MIB}MiB")}]}


@contextlib.contextmanager
def idle_induce(ctx):
    ctx["reload"]([dict(p, interval=IDLE_INTERVAL) for p in ctx["probes"]])
    yield None


CASES = [
    Case("device_throttle", "device", device_setup, device_induce, before=in_cgroup("io", "io")),
    Case("slow_store", "device", slow_store_setup, slow_store_induce),
    Case("other_readers", "device_busy", *busy_device("busy", other_reader)),
    Case("other_writers", "device_busy", *busy_device("wbusy", other_writer, writable=True)),
    Case("memory_high", "memory_reclaim", reclaim_setup, reclaim_induce, before=in_cgroup("mem", "memory")),
    Case("fragmented", "memory_compaction", compaction_setup, nothing),
    Case("idle_free_memory", "page_allocation", idle_memory_setup, idle_induce,
         also=("hypervisor_reclaim",)),
    Case("cpu_quota", "cpu_contention", cpu_setup, quota_induce, before=in_cgroup("cpu", "cpu")),
    Case("cpu_busy_loops", "cpu_contention", pin_setup, pin_induce, before=pin_before),
    Case("sshfs_delay", "remote_filesystem", remote_setup, remote_induce),
    Case("healthy", None, healthy_setup, nothing, min_slowdown=False),
]
