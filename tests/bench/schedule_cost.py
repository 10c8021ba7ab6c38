#!/usr/bin/env python3
"""What the embedded default probe schedule costs per hour. Not a timed test.

Runs `iodriftd` without --config (the embedded default: one probe of each kind on
<state_dir>/probe every 5 min, plus the memory probe) for --seconds (default 600) with no scrapes
in between, and prints per hour:

  CPU-seconds       utime + stime of the whole daemon process (/proc/PID/stat, all threads)
  device-seconds    io_ticks delta of the state directory's block device (/sys/dev/block/M:m/stat
                    field 10: time the device had I/O in flight)
  bytes read        sectors read on that device × 512, and the daemon's own /proc/PID/io
                    read_bytes (reads that reached a block device)

As root (default --device loop) the state directory lives on a fresh ext4 on a loop device
(losetup --direct-io=on, backing file in --work-parent), so the device figures count the daemon's
I/O alone; without root (or --device state) they are those of the device under --work-parent,
shared with whatever else runs there.

Method: one `iodriftd --once` first (it writes the 128 MiB probe file and calibrates the sequential
sizes: a one-time cost, printed separately). Then the daemon starts; after its first scheduled
cycle (all 6 probes have a result, polled with 1 scrape/s) sample A is taken, after --seconds more
sample B, each with one scrape for iodrift_probe_runs_total. Per hour = (B - A) / (runs between A
and B) × runs per hour (6 probes × 3600 / 300 s = 72), so a run that the interval's ±10 % jitter
moves in or out of the window does not skew the figure; the plain time rate (B - A) / elapsed is
printed beside it.

  sudo IODRIFT_BENCH=1 python3 tests/bench/schedule_cost.py [--iodriftd build/bin/iodriftd] [--seconds 600]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLK_TCK = os.sysconf("SC_CLK_TCK")
RUNS_PER_HOUR = 6 * 3600 / 300
SKIP = 77


def log(msg):
    print(f"schedule_cost: {msg}", file=sys.stderr, flush=True)


def sh(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def proc_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_read_bytes(pid):
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    return 0


def device_of(path):
    """(name, stat path) of the block device holding `path`, or None (tmpfs, overlay...)."""
    st = os.stat(path)
    sysdir = f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    if not os.path.exists(f"{sysdir}/stat"):
        return None
    return os.path.basename(os.path.realpath(sysdir)), f"{sysdir}/stat"


def device_stat(stat_path):
    """(sectors read, io_ticks ms) from a block device's stat file."""
    with open(stat_path) as f:
        v = [int(x) for x in f.read().split()]
    return v[2], v[9]


def runs_total(url):
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("iodrift_probe_runs_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


LABEL_RE = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def scrape(url):
    return urllib.request.urlopen(url, timeout=10).read().decode()


def last_run_figures(text):
    """{probe: {figure: value}} of each probe's last run, from one scrape."""
    out = {}
    wanted = {
        "iodrift_probe_last_run_timestamp_seconds": lambda l: "start",
        "iodrift_probe_cpu_seconds": lambda l: "cpu_" + l.get("mode", ""),
        "iodrift_probe_time_seconds": lambda l: l.get("part") if l.get("part") == "device_busy"
        else None,
        "iodrift_probe_bytes": lambda l: "bytes",
        "iodrift_probe_duration_seconds": lambda l: "wall",
    }
    for line in text.splitlines():
        name, brace, rest = line.partition("{")
        if not brace or name not in wanted:
            continue
        labels_text, _, value = rest.rpartition("} ")
        labels = dict(LABEL_RE.findall(labels_text))
        key = wanted[name](labels)
        if key and "probe" in labels:
            out.setdefault(labels["probe"], {})[key] = float(value)
    return out


class PerProbe:
    """Sums each probe's last-run figures over the runs seen by polling /metrics."""

    def __init__(self):
        self.seen = {}
        self.sums = {}

    def poll(self, url, count):
        figures = last_run_figures(scrape(url))
        for probe, f in figures.items():
            start = f.get("start")
            if start is None or self.seen.get(probe) == start:
                continue
            first = probe not in self.seen
            self.seen[probe] = start
            if first or not count:
                continue
            acc = self.sums.setdefault(probe, {"runs": 0})
            acc["runs"] += 1
            for k, v in f.items():
                if k != "start":
                    acc[k] = acc.get(k, 0.0) + v


class Sample:
    def __init__(self, pid, stat_path, url):
        self.t = time.monotonic()
        self.cpu = proc_cpu_seconds(pid)
        self.read_bytes = proc_read_bytes(pid)
        self.sectors, self.io_ticks = device_stat(stat_path) if stat_path else (0, 0)
        self.runs = runs_total(url) if url else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iodriftd", default=os.environ.get("IODRIFTD",
                                                         os.path.join(ROOT, "build/bin/iodriftd")))
    ap.add_argument("--seconds", type=float, default=600, help="measured window (default 600)")
    ap.add_argument("--device", choices=["loop", "state"], default=None,
                    help="loop: a fresh ext4 on a loop device (root, the default as root); "
                    "state: the device under --work-parent")
    ap.add_argument("--work-parent", default="/var/tmp")
    ap.add_argument("--poll-seconds", type=float, default=0,
                    help="scrape every N s to sum each probe's last-run figures (per-probe table; "
                    "each scrape costs ~1-2 ms of the daemon's CPU); 0: no per-probe table")
    args = ap.parse_args()
    if os.environ.get("IODRIFT_BENCH") != "1":
        print("SKIPPED: a benchmark, not a test: set IODRIFT_BENCH=1 to run it")
        return SKIP
    if not os.path.exists(args.iodriftd):
        print(f"SKIPPED: no iodriftd at {args.iodriftd}")
        return SKIP
    device = args.device or ("loop" if os.geteuid() == 0 else "state")
    work = tempfile.mkdtemp(prefix="iodrift-schedcost-", dir=args.work_parent)
    loopdev = mounted = daemon = None
    try:
        if device == "loop":
            if os.geteuid() != 0:
                print("SKIPPED: --device loop needs root")
                return SKIP
            img = os.path.join(work, "fs.img")
            with open(img, "wb") as f:
                f.truncate(4 << 30)  # sparse; the probe file needs 1 GiB to stay free
            sh("mkfs.ext4", "-q", "-F", img)
            loopdev = sh("losetup", "--direct-io=on", "--find", "--show", img)
            mounted = os.path.join(work, "mnt")
            os.makedirs(mounted)
            sh("mount", loopdev, mounted)
            state = os.path.join(mounted, "state")
        else:
            state = os.path.join(work, "state")
        os.makedirs(state)
        dev = device_of(state)
        dev_name, stat_path = dev if dev else ("-", None)
        log(f"state_dir {state} on {dev_name}")

        # One-time: probe file + calibration.
        before = device_stat(stat_path) if stat_path else (0, 0)
        t0 = time.monotonic()
        once = subprocess.run([args.iodriftd, "--once", "--json", "--state-dir", state,
                               "--dbus", "none"], capture_output=True, text=True, timeout=300)
        once_s = time.monotonic() - t0
        after = device_stat(stat_path) if stat_path else (0, 0)
        if once.returncode != 0:
            log(f"--once exited {once.returncode}: {once.stdout[-2000:]} {once.stderr[-2000:]}")
            return 1

        log_path = os.path.join(work, "daemon.log")
        logf = open(log_path, "w+")
        daemon = subprocess.Popen([args.iodriftd, "--state-dir", state, "--listen",
                                   "127.0.0.1:0", "--dbus", "none"],
                                  stdout=subprocess.DEVNULL, stderr=logf)
        url = None
        deadline = time.monotonic() + 30
        while url is None and time.monotonic() < deadline:
            if daemon.poll() is not None:
                log(f"iodriftd exited {daemon.returncode}: {open(log_path).read()[-2000:]}")
                return 1
            m = re.search(r"serving metrics on (http://\S+/metrics)", open(log_path).read())
            url = m.group(1) if m else None
            time.sleep(0.1)
        if url is None:
            log("iodriftd did not report its address")
            return 1
        deadline = time.monotonic() + 120
        while runs_total(url) < 6:
            if time.monotonic() > deadline:
                log("the first scheduled cycle did not complete in 120 s")
                return 1
            time.sleep(1)
        per_probe = PerProbe()
        if args.poll_seconds > 0:
            per_probe.poll(url, count=False)
        a = Sample(daemon.pid, stat_path, url)
        log(f"first cycle done; measuring {args.seconds:.0f} s"
            + (f", polling every {args.poll_seconds:.0f} s" if args.poll_seconds > 0 else
               " with no scrapes"))
        end = time.monotonic() + args.seconds
        polls = 0
        while time.monotonic() < end:
            time.sleep(min(args.poll_seconds or args.seconds, max(0.0, end - time.monotonic())))
            if args.poll_seconds > 0 and time.monotonic() < end:
                per_probe.poll(url, count=True)
                polls += 1
        b = Sample(daemon.pid, stat_path, url)
        if args.poll_seconds > 0:
            per_probe.poll(url, count=True)

        elapsed = b.t - a.t
        runs = b.runs - a.runs
        rows = [
            ("CPU-seconds (daemon process)", b.cpu - a.cpu, "s"),
            (f"device-seconds ({dev_name} io_ticks)", (b.io_ticks - a.io_ticks) / 1000, "s"),
            (f"bytes read from {dev_name}", (b.sectors - a.sectors) * 512, "B"),
            ("bytes read by the daemon (read_bytes)", b.read_bytes - a.read_bytes, "B"),
        ]

        def fmt(v, unit):
            return f"{v / 2**20:,.1f} MiB" if unit == "B" else f"{v:,.2f} s"

        print(f"iodriftd {args.iodriftd}, embedded default schedule, state_dir on {dev_name} "
              f"({device}), window {elapsed:.0f} s, {runs:.0f} runs (expected "
              f"{RUNS_PER_HOUR * elapsed / 3600:.1f})")
        print(f"{'figure':<44} {'in window':>14} {'per run':>14} {'per hour':>14} "
              f"{'per hour (time)':>16}")
        for name, v, unit in rows:
            per_run = v / runs if runs else float("nan")
            print(f"{name:<44} {fmt(v, unit):>14} {fmt(per_run, unit):>14} "
                  f"{fmt(per_run * RUNS_PER_HOUR, unit):>14} {fmt(v / elapsed * 3600, unit):>16}")
        cpu_h = (b.cpu - a.cpu) / runs * RUNS_PER_HOUR if runs else float("nan")
        print(f"=> {cpu_h:.2f} CPU-s/h = {cpu_h / 36:.3f} % of one core "
              f"(goal: <= 7.2 CPU-s/h, 0.2 %)")
        if per_probe.sums:
            print(f"per probe ({polls} polling scrapes; runs seen by polling; per hour = per run x "
                  f"{3600 / 300:.0f}):")
            print(f"{'probe':<18} {'runs':>5} {'CPU s/run':>10} {'CPU s/h':>8} {'wall s/run':>11} "
                  f"{'dev-busy s/h':>13} {'MiB read/h':>11}")
            for probe, acc in sorted(per_probe.sums.items()):
                n = acc["runs"]
                cpu = (acc.get("cpu_user", 0) + acc.get("cpu_system", 0)) / n
                print(f"{probe:<18} {n:>5} {cpu:>10.3f} {cpu * 12:>8.2f} "
                      f"{acc.get('wall', 0) / n:>11.3f} {acc.get('device_busy', 0) / n * 12:>13.2f} "
                      f"{acc.get('bytes', 0) / n * 12 / 2**20:>11,.0f}")
        print(f"one-time (--once: probe file + calibration): {once_s:.1f} s wall, "
              f"{(after[0] - before[0]) * 512 / 2**20:,.1f} MiB read, "
              f"{(after[1] - before[1]) / 1000:.2f} device-s on {dev_name}")
        return 0
    finally:
        if daemon is not None:
            daemon.terminate()
            try:
                daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        if mounted:
            subprocess.run(["umount", mounted])
        if loopdev:
            subprocess.run(["losetup", "-d", loopdev])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
