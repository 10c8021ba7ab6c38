#!/usr/bin/env python3
"""The status page (GET /) of a real iodriftd, rendered by real headless Chromium.

iodriftd runs fast probes (every 2 s, small sizes) on a 64 MiB ext4 loop device: cached,
direct and random on the block device, metadata in a directory on it, plus memory. After several
runs the test checks:
  * GET /api/v1/probes is valid JSON with the --once fields, baseline/ratio and a history per probe;
  * chromium --dump-dom: the rendered DOM has four SVG charts per probe with a legend each, >= 2
    data points (<circle>) on every probe's figure chart, the baseline line, and the inline script
    ran to its end (body[data-js=ready]); chromium logged no console error;
  * the boots chart (ratio against uptime, one line per boot) of every probe that has a point in
    GET /api/v1/boots is in the DOM with one series per boot (the test waits for one such probe);
  * chromium --screenshot: a PNG of 1280 px width that is not blank (decoded with zlib here).
IODRIFT_STATUS_SCREENSHOT=PATH copies the screenshot there; docs/status-page.png was made with
IODRIFT_STATUS_MIN_RUNS=15 (then cropped to the summary and the first probe, to stay < 300 KB).

Needs root (losetup, mkfs.ext4, mount) and /usr/bin/chromium; exits 77 (skipped) otherwise.
"""
import html.parser
import json
import os
import shutil
import struct
import subprocess
import time
import zlib

from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon
from iodrift_test.devices import Scratch, need_root
from iodrift_test.skip import fail, skip_guaranteed

CHROMIUM = "/usr/bin/chromium"
need_root("mkfs.ext4")
if not os.access(CHROMIUM, os.X_OK):
    skip_guaranteed(f"{CHROMIUM} not installed (apt-get install chromium)")

MIN_RUNS = int(os.environ.get("IODRIFT_STATUS_MIN_RUNS", "4"))  # more: a fuller screenshot


def chromium(work, *args, timeout=90):
    """Runs headless chromium; returns (stdout, stderr)."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-dev-shm-usage",
           "--disable-crash-reporter", "--enable-logging=stderr", "--v=0",
           f"--user-data-dir={os.path.join(work, 'chromium-profile')}", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, HOME=work))
    if p.returncode != 0:
        fail(f"chromium exited {p.returncode}: {p.stderr[-3000:]}")
    return p.stdout, p.stderr


def console_errors(stderr):
    """Lines where chromium reports a console message of the page or an uncaught exception.
    Chromium logs every console message (console.error too) as `INFO:CONSOLE:N] "text"`; the
    status page writes none, so any such line is an error."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


class Dom(html.parser.HTMLParser):
    """Collects per <section class=probe>: its charts (svg id -> circles, legend items,
    baseline polylines) and the body attributes."""

    def __init__(self):
        super().__init__()
        self.sections = {}  # probe -> {svg_id: {"circles": n, "legend": n, "baseline": n}}
        self.boots_charts = {}  # boots-chart-N -> series (boots) drawn
        self.boots_chart = None
        self.body = {}
        self.section = None
        self.svg = None
        self.in_baseline = 0
        self.depth_g = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "section" and "probe" in a.get("class", "").split():
            self.section = a.get("data-probe")
            self.sections[self.section] = {}
        elif tag == "svg" and a.get("id", "").startswith("boots-chart-"):
            self.boots_chart = a["id"]
            self.boots_charts[self.boots_chart] = 0
        elif self.boots_chart and tag == "g" and a.get("class", "").startswith("series boot-"):
            self.boots_charts[self.boots_chart] += 1
        elif tag == "svg" and "chart" in a.get("class", "").split() and self.section:
            self.svg = a.get("id")
            self.sections[self.section][self.svg] = {"circles": 0, "legend": 0, "baseline": 0}
        elif self.svg:
            chart = self.sections[self.section][self.svg]
            if tag == "circle" and a.get("class") == "pt":
                chart["circles"] += 1
            elif tag == "g" and a.get("class") == "legend-item":
                chart["legend"] += 1
            elif tag == "g" and a.get("data-series") == "baseline" and "series" in a.get("class", ""):
                self.in_baseline = 1
            elif tag == "polyline" and self.in_baseline:
                chart["baseline"] += 1

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None
            self.boots_chart = None
        elif tag == "g":
            self.in_baseline = 0
        elif tag == "section":
            self.section = None


def png_pixels(path):
    """(width, height, rows of bytes per pixel channel, channels) of an 8-bit non-interlaced PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if ctype == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", chunk)
        elif ctype == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, color, _, _, interlace = ihdr
    if depth != 8 or interlace != 0 or color not in (2, 6):
        fail(f"unexpected PNG format depth={depth} color={color} interlace={interlace}")
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 0xFF
            elif ftype == 2:
                line[x] = (line[x] + b) & 0xFF
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows, channels


with Scratch("status") as scratch:
    work = scratch.dir
    dev = scratch.loop(64 << 20, "fs")
    mnt = scratch.mount(dev, "mnt")
    probe_dir = os.path.join(mnt, "probes")
    os.makedirs(probe_dir)

    probes = [
        ("loop-cached", "cached", dev, "size: 4MiB"),
        ("loop-direct", "direct", dev, "size: 4MiB"),
        ("loop-random", "random", dev, "requests: 32"),
        ("loop-metadata", "metadata", probe_dir, "files: 16"),
        ("mem", "memory", None, "size: 4MiB"),
    ]
    config = os.path.join(work, "iodrift.yaml")
    probe_dicts = []
    for name, kind, target, extra in probes:
        p = {"name": name, "kind": kind}
        if target:
            p["target"] = target
        p.update(interval="2s", timeout="10s", time_budget="200ms")
        key, _, value = extra.partition(": ")
        p[key] = value
        probe_dicts.append(p)
    write_config(config, probe_dicts, dbus=None, log_level=None,
                 extra="status:\n  enabled: true\n  history_runs: 50")

    with Daemon("--config", config) as d:
        # Wait for MIN_RUNS successful runs of every probe, seen through the JSON API.
        deadline = time.monotonic() + 60 + 10 * MIN_RUNS
        while True:
            status, headers, body = d.get("/api/v1/probes")
            if status != 200:
                fail(f"/api/v1/probes answered {status}: {body}")
            doc = json.loads(body)
            by_name = {p["name"]: p for p in doc["probes"]}
            ok = {name: sum(1 for h in by_name.get(name, {}).get("history", [])
                            if h["result"] == "ok" and h["figure"])
                  for name, *_ in probes}
            if all(n >= MIN_RUNS for n in ok.values()):
                break
            if time.monotonic() > deadline:
                fail(f"not {MIN_RUNS} ok runs per probe in time: {ok}\n"
                     f"{json.dumps(doc, indent=1)[:4000]}\n{d.stderr()[-3000:]}")
            time.sleep(1)

        # The JSON API.
        if not headers.get("Content-Type", "").startswith("application/json"):
            fail(f"/api/v1/probes Content-Type {headers.get('Content-Type')!r}")
        if doc["history_runs"] != 50:
            fail(f"history_runs {doc['history_runs']} != 50 from the config")
        once_fields = {"name", "kind", "target", "success", "result", "supported", "error",
                       "start_time_seconds", "duration_seconds", "bytes",
                       "throughput_bytes_per_second", "ops_per_second", "latency_seconds",
                       "cpu_seconds", "suspect", "context", "vmstat_delta", "extra",
                       "target_info", "mode", "uptime_seconds", "dentry_state",
                       "pressure_delta_us"}
        for p in doc["probes"]:
            missing = (once_fields | {"baseline", "ratio", "history", "figure_unit"}) - set(p)
            if missing:
                fail(f"{p['name']}: fields missing from /api/v1/probes: {sorted(missing)}")
            if not p["history"]:
                fail(f"{p['name']}: empty history")
            last = p["history"][-1]
            for key in ("time_seconds", "boot_id", "uptime_seconds", "features"):
                if last.get(key) is None:
                    fail(f"{p['name']}: history point lacks {key}: {last}")
            if last["features"].get("mem_free_bytes") is None:
                fail(f"{p['name']}: no mem_free_bytes in the history features: {last}")
        if by_name["loop-random"]["figure_unit"] != "ops/s":
            fail("loop-random figure_unit is not ops/s")
        # Baselines form after 5 clean runs; by then the history carries them.
        if not any(h["baseline"] for p in doc["probes"] for h in p["history"]):
            print("note: no baseline formed yet (needs 5 clean runs per probe)")

        # The boots chart needs a counted run after a baseline (5 clean runs) of some probe.
        def boots_with_points():
            status, _, body = d.get("/api/v1/boots")
            if status != 200:
                fail(f"/api/v1/boots answered {status}: {body}")
            return {f"boots-chart-{i}": len(p["boots"])
                    for i, p in enumerate(json.loads(body)["probes"])
                    if any(b["last_ratio"] is not None for b in p["boots"])}

        deadline = time.monotonic() + 60
        while not (boots := boots_with_points()):
            if time.monotonic() > deadline:
                fail(f"no probe has a counted run after its baseline in 60 s:\n{d.stderr()[-3000:]}")
            time.sleep(1)

        # The page through Chromium: DOM.
        url = d.url("/")
        dom_text, dom_err = chromium(work, "--dump-dom", url)
        dom = Dom()
        dom.feed(dom_text)
        if dom.body.get("data-js") != "ready":
            fail(f"the inline script did not run to its end: body={dom.body}\n"
                 f"{dom_err[-3000:]}")
        for name, *_ in probes:
            charts = dom.sections.get(name)
            if charts is None:
                fail(f"no <section> for {name} in the DOM: {list(dom.sections)}")
            if len(charts) != 4:
                fail(f"{name}: {len(charts)} charts, want 4: {charts}")
            for svg_id, chart in charts.items():
                if chart["legend"] < 1:
                    fail(f"{name}: chart {svg_id} has no legend")
            fig = charts.get(f"probe-{name}-figure")
            if not fig or fig["circles"] < 2:
                fail(f"{name}: fewer than 2 data points on the figure chart: {charts}")
            if fig["circles"] < MIN_RUNS:
                fail(f"{name}: {fig['circles']} points, want >= {MIN_RUNS}")
            if charts[f"probe-{name}-memory"]["circles"] < 2:
                fail(f"{name}: no memory context points: {charts}")
            print(f"{name}: " + ", ".join(f"{k.rsplit('-', 1)[1]} {v['circles']} points"
                                          for k, v in charts.items()))
        for chart_id, n in boots.items():
            if dom.boots_charts.get(chart_id) != n:
                fail(f"boots chart {chart_id}: {dom.boots_charts.get(chart_id)} lines, want {n} "
                     f"(one per boot): {dom.boots_charts}")
        print(f"boots charts: {dom.boots_charts}")
        bad = console_errors(dom_err)
        if bad:
            fail("console errors:\n" + "\n".join(bad))

        # The page through Chromium: a screenshot.
        shot = os.path.join(work, "status.png")
        _, shot_err = chromium(work, f"--screenshot={shot}", "--window-size=1280,2000",
                               "--hide-scrollbars", url)
        if not os.path.exists(shot):
            fail(f"no screenshot written: {shot_err[-3000:]}")
        size = os.path.getsize(shot)
        width, height, rows, channels = png_pixels(shot)
        if width != 1280:
            fail(f"screenshot is {width}x{height}, want width 1280")
        colours, non_white = set(), 0
        for row in rows[::4]:
            for x in range(0, width * channels, channels * 4):
                px = row[x:x + 3]
                colours.add(px)
                if px[0] < 200 or px[1] < 200 or px[2] < 200:
                    non_white += 1
        sampled = (height // 4 + 1) * (width // 4)
        if len(colours) < 16 or non_white < sampled // 100:
            fail(f"screenshot looks blank: {len(colours)} colours, "
                 f"{non_white}/{sampled} non-white samples")
        bad = console_errors(shot_err)
        if bad:
            fail("console errors:\n" + "\n".join(bad))
        print(f"screenshot {width}x{height}, {size} bytes, {len(colours)} colours sampled, "
              f"{100 * non_white / sampled:.1f}% non-white")
        if os.environ.get("IODRIFT_STATUS_SCREENSHOT"):
            shutil.copyfile(shot, os.environ["IODRIFT_STATUS_SCREENSHOT"])
            print(f"copied to {os.environ['IODRIFT_STATUS_SCREENSHOT']}")
    print("ok")
