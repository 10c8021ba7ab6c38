#!/usr/bin/env python3
"""Squeeze the page cache of the running daemon and check what iodrift does with it.

A 384 MiB loop device (random data, --direct-io=on so the backing file adds no second cache) is
probed by a `buffered` and a `direct` probe (64 MiB) every 2 s. The daemon is moved into a memory
cgroup of its own (v1 `memory.limit_in_bytes` or v2 `memory.max`), and the test alternates four
phases of at least RUNS runs each: free (no limit), squeezed (limit = the daemon's resident
memory + 8 MiB, so each buffered read must reclaim the page cache it has just filled), free,
squeezed. Alternating keeps `uptime_seconds` from correlating as well as the squeeze does.

What buffered throughput does under the squeeze is the machine's: on bare metal reclaim inside
the read should slow it; on the VM this is developed on it got *faster* (1,990 vs 953 MB/s:
reusing reclaimed page cache is cheaper than allocating memory the hypervisor took back), or did
not move. So the test asserts what iodrift does with whatever the machine did:
  1. the squeeze is recorded with exactly the runs it affected: the buffered runs of the squeezed
     phases carry `reclaim_pages` of at least a quarter of the pages they read (a free phase
     that reclaims as well is a machine without the contrast: skipped with the figures);
  2. the feature is ranked with the sign the data has: rho(reclaim_pages) recomputed here from
     the runs /api/v1/probes marks `drift_window` equals the rho of the explain text in the same
     snapshot, its row shows the last run's value now and a page count at baseline time, the
     rows are ranked by |rho|, `iodrift_probe_correlation` agrees and the status page shows
     the row; when the squeezed runs never reached the window (suspect), explain must have no
     row, and the run is skipped with the figures;
  3. the ratio is the last run's figure over the baseline; only where the machine shows a
     consistent effect (direct within 2x, buffered moved 1.5x the same way in both pairs,
     |rho| >= 0.5) and stayed as it was when the baseline formed in phase 1 (direct now and the
     later free phase's buffered within 1.25x of phase 1): the last run's ratio shows the
     direction and reclaim_pages ranks above uptime_seconds. Otherwise "NOT ASSERTED" with the
     figures.

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
from iodrift_test.cgroup import Cgroup
from iodrift_test.config import write_temp_config
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.skip import fail, need_tools, require_root, skip, skip_guaranteed
from iodrift_test.wait import wait_for


DEVICE_BYTES = 384 << 20
READ_BYTES = 64 << 20
RUNS = 8            # runs per phase and probe
SQUEEZE_SLACK = 8 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")

require_root("needs root (loop device, memory cgroup)")
need_tools("losetup", reason="{tool} not found")


def _read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        if default is None:
            raise
        return default


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
            skip_guaranteed(f"losetup: {res.stderr.strip()}")
        loop = res.stdout.strip()
        config = write_temp_config([
            {"name": "sq-buffered", "kind": "buffered", "target": loop, "interval": "2s",
             "size": "64MiB", "time_budget": "5s", "timeout": "30s"},
            {"name": "sq-direct", "kind": "direct", "target": loop, "interval": "2s",
             "size": "64MiB", "time_budget": "5s", "timeout": "30s"},
        ], directory=work)
        cgroup = Cgroup("squeeze", "memory")
        if cgroup.missing:
            skip(cgroup.missing)
        with Daemon("--config", config) as d:
            cgroup.add(d.proc.pid, move_charge=True)
            phases = []
            for label, squeezed in (("free", False), ("squeezed", True),
                                    ("free", False), ("squeezed", True)):
                cgroup.memory_limit(vm_rss(d.proc.pid) + SQUEEZE_SLACK if squeezed else None,
                                    hard=True)
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
            page = d.get("/", timeout=20)
            samples, _ = scrape(d)
            cgroup.memory_limit(None, hard=True)
        report(phases, probes, page, samples)
    finally:
        if cgroup:
            cgroup.close()
        if loop:
            subprocess.run(["losetup", "-d", loop], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def spearman(xs, ys):
    """collectors/analysis/drift.cpp Spearman: average ranks, >= 8 finite pairs, else None."""
    pairs = [(x, y) for x, y in zip(xs, ys) if x is not None and y is not None]
    if len(pairs) < 8:
        return None

    def ranks(values):
        order = sorted(range(len(values)), key=lambda i: values[i])
        out = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + 1 + j + 1) / 2
            i = j + 1
        return out
    rx, ry = ranks([p[0] for p in pairs]), ranks([p[1] for p in pairs])
    mean = (len(pairs) + 1) / 2
    sxy = sum((a - mean) * (b - mean) for a, b in zip(rx, ry))
    sxx = sum((a - mean) ** 2 for a in rx)
    syy = sum((b - mean) ** 2 for b in ry)
    if sxx <= 0 or syy <= 0:
        return None
    return max(-1.0, min(1.0, sxy / (sxx * syy) ** 0.5))


def explain_rows(explain):
    """{feature: [rho, now, at baseline]} in the order explain ranks them."""
    return {line.split()[0]: line.split()[1:] for line in explain.splitlines()
            if line.startswith("    ") and line.split()[0] != "feature"}


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
            skip(f"free phase: median reclaim_pages {median(reclaim):.0f} > "
                 f"{read_pages // 16}: this machine reclaims without the squeeze, so the "
                 f"phases do not differ in the feature under test")

    # 2. Whatever buffered did, iodrift ranks the feature with the sign its own data has. The
    # drift window is the last runs marked drift_window in the history (same snapshot as the
    # explain text of /api/v1/probes); rho is recomputed here from those runs.
    buffered = probes["sq-buffered"]
    explain = buffered["explain"]
    print(explain)
    window = [h for h in buffered["history"] if h["drift_window"] and h["figure"]][-64:]
    left_out = [h for h in buffered["history"] if h["result"] == "ok" and not h["drift_window"]]
    reclaim_window = [h["features"].get("reclaim_pages") for h in window]
    expected = spearman([h["figure"] for h in window], reclaim_window)
    rows = explain_rows(explain)
    ranked = list(rows)
    known = [r for r in reclaim_window if r is not None]
    spread = f"reclaim_pages from {min(known):.0f} to {max(known):.0f}" if known else "none"
    suspects = buffered.get("suspect") or []  # the last run's (history points carry none)
    print(f"drift window: {len(window)} runs, {spread}; {len(left_out)} ok runs left out "
          f"(the last run's suspects: {', '.join(suspects) or '-'}); rho recomputed here: {expected}")
    if expected is None:
        if "reclaim_pages" in rows:
            fail(f"explain shows a reclaim_pages row {rows['reclaim_pages']} although its drift "
                 f"window gives no correlation")
        skip(f"the squeezed runs did not reach the drift window ({len(window)} runs in it, "
             f"{len(left_out)} ok runs left out as suspect; the last run's: "
             f"{', '.join(suspects) or '-'}), so "
             f"reclaim_pages did not vary there; iodrift agreed (no row)")
    if "reclaim_pages" not in rows or len(rows["reclaim_pages"]) != 3:
        fail(f"explain has no reclaim_pages row (rho, now, at baseline) although its window "
             f"gives rho {expected:+.2f}: {ranked}")
    rho_text, now, then = rows["reclaim_pages"]
    if abs(float(rho_text) - expected) > 0.011:
        fail(f"explain says rho(reclaim_pages) {rho_text}; the window's runs give {expected:+.2f}")
    last = window[-1]["features"].get("reclaim_pages")
    if last is not None and float(now) != round(last):
        fail(f"explain says reclaim_pages is {now} now; the last run in the window has {last:.0f}")
    # "at baseline" is the median over the runs that formed the baseline: which runs were clean
    # enough for it (free or squeezed phase) is the machine's, so only its form is checked.
    if not then.isdigit():
        fail(f"explain's reclaim_pages at baseline time is {then!r}, not a page count")
    magnitudes = [abs(float(v[0])) for v in rows.values()]
    if magnitudes != sorted(magnitudes, reverse=True):
        fail(f"explain's features are not ranked by |rho|: {list(rows.items())}")
    rho = prom.value(samples, "iodrift_probe_correlation", probe="sq-buffered",
                     feature="reclaim_pages")
    # Read a moment later than the API snapshot: a run may have landed since, and one run moves
    # a rank correlation over tens of runs by far less than 0.25.
    if rho is None or abs(rho - expected) > 0.25:
        fail(f"iodrift_probe_correlation{{probe=sq-buffered,feature=reclaim_pages}} = {rho}, "
             f"its window gives {expected:+.2f}")
    _, _, page_text = page
    if "reclaim_pages" not in html.unescape(page_text):
        fail("the status page's explain text has no reclaim_pages row")
    ratio = buffered.get("ratio")
    if buffered.get("baseline") is None or ratio is None:
        fail(f"sq-buffered has no baseline or ratio: baseline {buffered.get('baseline')}, "
             f"ratio {ratio}")
    last_ok = [h for h in buffered["history"] if h["result"] == "ok" and h["figure"]][-1]
    if abs(ratio - last_ok["figure"] / buffered["baseline"]) > 0.005 * max(1.0, ratio):
        fail(f"sq-buffered ratio {ratio:.3f} is not the last run's figure over the baseline "
             f"({last_ok['figure']:.0f} / {buffered['baseline']:.0f})")
    print(f"sq-buffered baseline {buffered['baseline'] / mb:.0f} MB/s, ratio of the last run "
          f"{ratio:.2f}, rho(reclaim_pages) {expected:+.2f}, rank "
          f"{ranked.index('reclaim_pages') + 1} of {len(ranked)}")

    # 3. Machine-dependent, so conditional: when direct stayed (the device did not change) and
    # buffered responded to the squeeze by at least 1.5x the same way in both pairs, the ratio of
    # the last (squeezed) run shows it and reclaim_pages ranks above uptime_seconds.
    direct0 = median(phases[0]["direct"])
    factors = [median(p["direct"]) / direct0 for p in phases[1:]]
    moves = [median(phases[i + 1]["buffered"]) / median(phases[i]["buffered"]) for i in (0, 2)]
    print(f"buffered squeezed/free: {moves[0]:.2f}x, {moves[1]:.2f}x; direct against phase 1: "
          f"{', '.join(f'{f:.2f}x' for f in factors)}")
    if not all(0.5 <= f <= 2 for f in factors):
        print("NOT ASSERTED (machine-dependent): direct moved by more than 2x, so the device "
              "changed speed and buffered's response to the squeeze is not judged")
        print("ok")
        return
    # The ratio compares the last run with the baseline, formed in phase 1: it can only show the
    # squeeze when the machine is as it was then (direct now and buffered in the later free phase
    # within 1.25x of phase 1). A CI run had direct at 0.61x and the free phase's buffered at
    # 0.58x of phase 1: the squeeze's 1.76x then put the ratio back at 0.89.
    drift = {"direct now": factors[-1],
             "free-phase buffered": median(phases[2]["buffered"]) / median(phases[0]["buffered"])}
    if not all(0.8 <= f <= 1.25 for f in drift.values()):
        print("NOT ASSERTED (machine-dependent): the machine moved since the baseline formed ("
              + ", ".join(f"{k} {v:.2f}x of phase 1" for k, v in drift.items())
              + "), so the ratio to that baseline does not isolate the squeeze")
        print("ok")
        return
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
    if abs(expected) < 0.5:
        print(f"NOT ASSERTED: rho(reclaim_pages) = {expected:+.2f} is below 0.5 (the free and "
              f"squeezed runs overlap, load {os.getloadavg()[0]:.1f}): the ranking above uptime "
              f"is not judged")
        print("ok")
        return
    if "uptime_seconds" in rows and ranked.index("uptime_seconds") < ranked.index("reclaim_pages"):
        fail(f"explain ranks uptime_seconds above reclaim_pages: {ranked}")
    print("ok")


main()
