#!/usr/bin/env python3
"""Squeeze the page cache of the running daemon and check that iodrift sees it (issue 4's
end-to-end test).

A 384 MiB loop device (random data, --direct-io=on so the backing file adds no second cache) is
probed by a `buffered` and a `direct` probe (64 MiB) every 2 s. (At 1 s and 128 MiB the probes'
own reads kept PSI io above 10 % and no baseline formed, until the io_pressure rule learned to
discount the daemon's own stall, collectors/probes/own_stall.h.) The daemon is
moved into a memory cgroup of its own (v1 `memory.limit_in_bytes` or v2 `memory.max`), and the
test alternates four phases of at least RUNS runs each: free (no limit), squeezed (limit = the
daemon's resident memory + 8 MiB, so each buffered read must reclaim the page cache it has just
filled), free, squeezed. Alternating — rather than one step — keeps `uptime_seconds` from correlating as well as the
squeeze does.

Asserted, from GET /api/v1/probes (each run's own memory context), /metrics and the status page
(the same explain text as `iodriftctl explain`):
  1. the squeeze is recorded with exactly the runs it affected: the buffered runs of the squeezed
     phases carry `reclaim_pages` of at least a quarter of the pages they read, the free phases'
     runs at most a sixteenth;
  2. `direct` stays: its median per phase is within 2x of the first free phase's (else the
     device itself changed speed: the run is skipped, 77, with the figures);
  3. explain names the memory feature that moved: its `reclaim_pages` row shows the squeezed value
     now and the free value at baseline time, with the rho that
     `iodrift_probe_correlation{feature="reclaim_pages"}` exports; the baseline and the ratio
     exist;
  4. when buffered responds to the squeeze by at least 1.5x the same way in both pairs, the ratio
     of the last (squeezed) run shows it, |rho(reclaim_pages)| >= 0.5 with the matching sign, and
     explain ranks reclaim_pages above uptime_seconds.

Whether and which way buffered responds depends on the machine, so 4 is conditional (the output
says "NOT ASSERTED" when it does not apply). On bare metal, reclaiming inside the read should make
it slower. On the VM this project is developed on, buffered throughput follows the state of free
memory rather than the squeeze (PROBES.md §3.2: allocating memory the hypervisor took back through
free page reporting costs ~5x more than reusing reclaimed page cache): one exploratory run here
read 547-685 MB/s squeezed against 71-158 MB/s free (the squeeze *faster*), while the runs of this
test so far showed 0.97-1.37x, i.e. no consistent response.

Needs root, losetup and a memory cgroup controller; otherwise exits 77 (skipped).
"""
import html
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from iodrift_test import prom
from iodrift_test.config import write_temp_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.skip import fail, need_tools, require_root, skip
from iodrift_test.wait import wait_for


DEVICE_BYTES = 384 << 20
READ_BYTES = 64 << 20
RUNS = 8            # runs per phase and probe
SQUEEZE_SLACK = 8 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")

require_root("needs root (loop device, memory cgroup)")
need_tools("losetup", reason="{tool} not found")


class MemoryCgroup:
    """A memory cgroup of its own (v1 or v2) that holds one process and can be limited."""

    def __init__(self, name):
        v1 = "/sys/fs/cgroup/memory"
        v2 = "/sys/fs/cgroup"
        if os.path.isfile(os.path.join(v1, "memory.limit_in_bytes")):
            self.path = os.path.join(v1, name)
            self.limit_file, self.usage_file, self.unlimited = \
                "memory.limit_in_bytes", "memory.usage_in_bytes", "-1"
        elif "memory" in _read(os.path.join(v2, "cgroup.subtree_control"), "").split():
            self.path = os.path.join(v2, name)
            self.limit_file, self.usage_file, self.unlimited = \
                "memory.max", "memory.current", "max"
        else:
            skip("no memory cgroup controller (neither v1 memory.limit_in_bytes nor "
                 "memory in the v2 root's cgroup.subtree_control)")
        os.makedirs(self.path, exist_ok=True)
        self.v1 = self.limit_file == "memory.limit_in_bytes"

    def add(self, pid):
        if self.v1:
            # Take the daemon's memory along, so the limit counts it (refused by kernels that
            # deprecated charge moving; the page cache still has at most the limit, then).
            try:
                _write(os.path.join(self.path, "memory.move_charge_at_immigrate"), "3")
            except OSError:
                pass
        _write(os.path.join(self.path, "cgroup.procs"), str(pid))

    def limit(self, value):
        _write(os.path.join(self.path, self.limit_file), str(value))

    def remove(self):
        # The daemon has exited (or is moved back by the kernel on rmdir failure); try a few times.
        for _ in range(20):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.2)


def _read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        if default is None:
            raise
        return default


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def vm_rss(pid):
    for line in _read(f"/proc/{pid}/status").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) << 10
    fail(f"no VmRSS for pid {pid}")


def api(d):
    status, _, body = d.get("/api/v1/probes", timeout=20)
    if status != 200:
        fail(f"/api/v1/probes answered {status}")
    return {p["name"]: p for p in json.loads(body)["probes"]}


def runs_since(probes, name, since):
    return [h for h in probes.get(name, {}).get("history", [])
            if h["time_seconds"] >= since and h["result"] == "ok" and h["figure"]]


def median(values):
    return statistics.median(values) if values else float("nan")


def main():
    work = tempfile.mkdtemp(prefix="iodrift-squeeze-", dir="/var/tmp")
    image = os.path.join(work, "device.img")
    loop = None
    cgroup = None
    try:
        with open(image, "wb") as f:
            for _ in range(DEVICE_BYTES >> 20):
                f.write(os.urandom(1 << 20))
        res = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", image],
                             capture_output=True, text=True, timeout=30)
        if res.returncode != 0:
            skip(f"losetup: {res.stderr.strip()}")
        loop = res.stdout.strip()
        config = write_temp_config([
            {"name": "sq-buffered", "kind": "buffered", "target": loop, "interval": "2s",
             "size": "64MiB", "time_budget": "5s", "timeout": "30s"},
            {"name": "sq-direct", "kind": "direct", "target": loop, "interval": "2s",
             "size": "64MiB", "time_budget": "5s", "timeout": "30s"},
        ], directory=work)
        cgroup = MemoryCgroup(f"iodrift-squeeze-{os.getpid()}")
        with Daemon("--config", config) as d:
            cgroup.add(d.proc.pid)
            phases = []
            for label, squeezed in (("free", False), ("squeezed", True),
                                    ("free", False), ("squeezed", True)):
                if squeezed:
                    cgroup.limit(vm_rss(d.proc.pid) + SQUEEZE_SLACK)
                else:
                    cgroup.limit(cgroup.unlimited)
                since = time.time()
                wait_for(f"{RUNS} ok runs of each probe in phase {len(phases) + 1} ({label})",
                         lambda: all(len(runs_since(api(d), n, since)) >= RUNS
                                     for n in ("sq-buffered", "sq-direct")), timeout=180,
                         interval=0.5)
                probes = api(d)
                phases.append({
                    "label": label,
                    "buffered": [h["figure"] for h in runs_since(probes, "sq-buffered", since)],
                    "direct": [h["figure"] for h in runs_since(probes, "sq-direct", since)],
                    "reclaim": [h["features"].get("reclaim_pages")
                                for h in runs_since(probes, "sq-buffered", since)],
                })
            # Read everything while the last squeeze holds: the last run is a squeezed one.
            probes = api(d)
            _, _, page = d.get("/", timeout=20)
            samples, _ = scrape(d)
            cgroup.limit(cgroup.unlimited)
        report(phases, probes, page, samples)
    finally:
        if cgroup:
            cgroup.remove()
        if loop:
            subprocess.run(["losetup", "-d", loop], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def report(phases, probes, page, samples):
    mb = 1e6
    for i, p in enumerate(phases, 1):
        print(f"phase {i} {p['label']:8}: buffered median {median(p['buffered']) / mb:7.0f} MB/s "
              f"({len(p['buffered'])} runs), direct {median(p['direct']) / mb:7.0f} MB/s, "
              f"reclaim_pages median {median([r for r in p['reclaim'] if r is not None]):.0f}")
    read_pages = READ_BYTES // PAGE

    # 1. The squeeze is in the context recorded with each run.
    for p in phases:
        reclaim = [r for r in p["reclaim"] if r is not None]
        if not reclaim:
            fail(f"{p['label']} phase: no buffered run carries reclaim_pages")
        if p["label"] == "squeezed" and median(reclaim) < read_pages / 4:
            fail(f"squeezed phase: median reclaim_pages {median(reclaim):.0f} < "
                 f"{read_pages // 4} (a quarter of the {read_pages} pages each run reads): "
                 f"the run context does not show the squeeze")
        if p["label"] == "free" and median(reclaim) > read_pages / 16:
            fail(f"free phase: median reclaim_pages {median(reclaim):.0f} > "
                 f"{read_pages // 16}: the machine reclaims without the squeeze")

    # 2. direct stays.
    direct0 = median(phases[0]["direct"])
    for i, p in enumerate(phases[1:], 2):
        factor = median(p["direct"]) / direct0
        if not 1 / 2 <= factor <= 2:
            skip(f"direct moved by {factor:.2f}x in phase {i} ({p['label']}): the device "
                 f"itself changed speed (a busy machine?), so this run cannot tell what "
                 f"the squeeze did to buffered")

    # 3. explain names the memory feature that moved: the reclaim_pages row, with its value now
    # (a squeezed run) and at baseline time (a free run), and the metric with the same rho.
    # The explain text opens with its verdict line, then "probe NAME (…)".
    start = page.find("\nprobe sq-buffered (")
    start = page.rfind("<pre class=\"explain\">", 0, start) if start >= 0 else -1
    if start < 0:
        fail("the status page has no explain text for sq-buffered")
    explain = html.unescape(page[start:page.find("</pre>", start)]).split(">", 1)[1]
    print(explain)
    rows = {line.split()[0]: line.split()[1:] for line in explain.splitlines()
            if line.startswith("    ") and line.split()[0] != "feature"}
    ranked = list(rows)
    if "reclaim_pages" not in rows or len(rows["reclaim_pages"]) != 3:
        fail(f"explain has no reclaim_pages row (rho, now, at baseline): {ranked}; last "
             f"run suspect of {probes['sq-buffered'].get('suspect')}")
    rho_text, now, then = rows["reclaim_pages"]
    if float(now) < read_pages / 4 or float(then) > read_pages / 16:
        fail(f"explain says reclaim_pages is {now} now and {then} at baseline; expected "
             f">= {read_pages // 4} now (squeezed) and <= {read_pages // 16} at baseline")
    rho = prom.value(samples, "iodrift_probe_correlation", probe="sq-buffered",
                     feature="reclaim_pages")
    if rho is None or abs(rho - float(rho_text)) > 0.011:
        fail(f"iodrift_probe_correlation{{probe=sq-buffered,feature=reclaim_pages}} = "
             f"{rho}, explain says {rho_text}")
    buffered = probes["sq-buffered"]
    ratio = buffered.get("ratio")
    if buffered.get("baseline") is None or ratio is None:
        fail(f"sq-buffered has no baseline or ratio after "
             f"{sum(map(len, [p['buffered'] for p in phases]))} runs: "
             f"baseline {buffered.get('baseline')}, ratio {ratio}")
    print(f"sq-buffered baseline {buffered['baseline'] / mb:.0f} MB/s, ratio of the last "
          f"(squeezed) run {ratio:.2f}, rho(reclaim_pages) {rho:+.2f}, rank "
          f"{ranked.index('reclaim_pages') + 1} of {len(ranked)}")

    # 4. When buffered responds to the squeeze the same way twice, the answer must say so.
    moves = [median(phases[i + 1]["buffered"]) / median(phases[i]["buffered"]) for i in (0, 2)]
    print(f"buffered squeezed/free: {moves[0]:.2f}x, {moves[1]:.2f}x")
    if not (min(moves) >= 1.5 or max(moves) <= 1 / 1.5):
        print("NOT ASSERTED (machine-dependent): buffered did not respond to the squeeze by 1.5x "
              "the same way twice, so the ratio direction and the ranking of reclaim_pages above "
              "uptime are not checked in this run")
        print("ok")
        return
    faster = moves[0] > 1
    if not (ratio >= 1.3 if faster else ratio <= 1 / 1.3):
        fail(f"sq-buffered ratio {ratio:.2f} does not show the squeezed phase "
             f"(buffered moved {moves[1]:.2f}x against the free phase)")
    if (rho > 0) != faster:
        fail(f"rho(reclaim_pages) = {rho:+.2f}: expected the sign of buffered moving "
             f"{moves[0]:.2f}x when squeezed")
    if abs(rho) < 0.5:
        # The medians moved, but the runs of the two states overlap (a busy machine spreads
        # them): the strength of a rank correlation is then not the product's to guarantee.
        skip(f"rho(reclaim_pages) = {rho:+.2f} has the right sign but is below 0.5: buffered "
             f"moved {moves[0]:.2f}x / {moves[1]:.2f}x by median, yet the free and squeezed runs "
             f"overlap (load {os.getloadavg()[0]:.1f}); too noisy to judge the ranking")
    if "uptime_seconds" in rows and ranked.index("uptime_seconds") < ranked.index("reclaim_pages"):
        fail(f"explain ranks uptime_seconds above reclaim_pages: {ranked}")
    print("ok")

main()
