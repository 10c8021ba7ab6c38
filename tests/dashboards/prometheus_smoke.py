#!/usr/bin/env python3
"""Smoke test of the dashboards and rules against a real Prometheus server.

Starts the Debian `prometheus` binary on loopback (temporary data dir, 1 s scrape and evaluation
intervals) with the rule files and a copy of dashboards/prometheus/prometheus.yml, pointed at
either
  * four fake exporters serving synthetic iodrift metrics shaped as docs/metrics.md describes (default:
    machines with 10 minutes, 3, 10 and 40 days of uptime; on the first one probe fails and one is
    stale, the last one has regressed), or
  * a running iodriftd (`--target HOST:PORT`, repeatable), the lead's end-to-end setup.
Then, through the HTTP API:
  * every target is up;
  * every metric the dashboards and rules read is exported by the targets (a renamed metric fails
    here, not silently in a dashboard);
  * every rule is loaded and evaluates with health "ok" (promtool cannot see runtime errors such as
    duplicate label sets or many-to-many matches; a real evaluation does);
  * every expression of every dashboard panel, annotation and variable query (variables
    substituted) runs without error and returns at least one series. With --target, expressions
    that are empty on a healthy machine (EMPTY_WHEN_HEALTHY) only warn.

Exit status: 0 pass, 1 failure, 77 prometheus not installed. Python standard library only.
"""

import argparse
import glob
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import lint_dashboards as lint  # noqa: E402
from iodrift_test.net import free_port, serve_metrics, wait_ready  # noqa: E402

SKIP = 77
REPO = lint.REPO
RULES_DIR = os.path.join(REPO, "dashboards", "prometheus")

# Panels whose queries list problems and are therefore empty on a healthy machine.
EMPTY_WHEN_HEALTHY = {
    "Active iodrift alerts", "Stale probes (no run for 3 intervals)", "Probes with failed runs (last hour)",
    "Failed-run share (top 10 probes)", "Top slab growth (24 h)", "Top slab caches by growth (24 h)",
    "What moves with the throughput (rank correlation)", "Reboots",
}

# Panels that compare a machine with its siblings: the sibling rules record nothing for groups of
# fewer than 5 machines (iodrift-siblings in iodrift-recording.rules.yml), so they are empty with
# this test's 4 machines and the live test's one; tests/fleet/fleet_test.py (20 machines) and
# tests/fleet/siblings_test.py (50) check them.
NEEDS_SIBLINGS = {"Sibling outliers (robust z-score below -3)", "Share of siblings drifted"}


# Metrics the rules read only as one of several alternatives, or that appear late: missing ones warn.
OPTIONAL_METRICS = {
    # Per-zone direct-reclaim counters: which zones exist depends on the kernel and the machine
    # (allocstall_device is new in 6.x, DMA is absent on many arm64 machines).
    "iodrift_vmstat_allocstall_dma", "iodrift_vmstat_allocstall_dma32",
    "iodrift_vmstat_allocstall_movable", "iodrift_vmstat_allocstall_device",
    # Suppressed by the daemon until its window holds enough runs.
    "iodrift_probe_correlation",
}


# --------------------------------------------------------------------------------------------------
# Fake exporters.

PROBES = [  # name, kind, target
    ("sda-cached", "cached", "/dev/sda"), ("sda-buffered", "buffered", "/dev/sda"),
    ("sda-direct", "direct", "/dev/sda"), ("sda-random", "random", "/dev/sda"),
    ("state-metadata", "metadata", "/var/lib/iodrift"), ("memory", "memory", "none"),
]
LATENCY_BOUNDS = [25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3,
                  100e-3, 250e-3, 500e-3, 1.0, 2.5]


def exposition(uptime, started, machine):
    """Metrics of one fake machine at this moment; counters grow with wall time."""
    now = time.time()
    t = now - started
    lines = []

    def m(name, value, **labels):
        lab = ",".join('%s="%s"' % (k, v) for k, v in labels.items())
        lines.append("%s%s %s" % (name, "{%s}" % lab if lab else "", repr(float(value))))

    up = uptime + t
    m("iodrift_build_info", 1, version="0.1.0", revision="smoke")
    m("iodrift_boot_time_seconds", math.floor(now - up))
    m("iodrift_uptime_seconds", up)
    m("iodrift_boot_info", 1, boot_id="0b2c6f3e-%04d" % machine)
    m("process_start_time_seconds", started - 3600)
    gib = 1 << 30
    mem = {"MemTotal": 8 * gib, "MemFree": 1 * gib, "MemAvailable": 5 * gib, "Buffers": 50 << 20,
           "Cached": 3 * gib, "Dirty": 10 << 20, "Writeback": 1 << 20, "Slab": (400 << 20) + t * 1000,
           "SReclaimable": 300 << 20, "SUnreclaim": 100 << 20, "Active_file": gib}
    for field, value in mem.items():
        m("iodrift_meminfo_%s_bytes" % field, value)
    m("iodrift_meminfo_HugePages_Total", 0)
    for field, per_s in {"pgscan_kswapd": 1000, "pgscan_direct": 50, "pgsteal_kswapd": 900,
                         "pgsteal_direct": 40, "allocstall_normal": 2, "allocstall_movable": 1,
                         "allocstall_dma32": 0, "compact_stall": 0.5}.items():
        m("iodrift_vmstat_%s" % field, math.floor(per_s * t))
    for slab, size in {"dentry": 200 << 20, "inode_cache": 80 << 20, "buffer_head": 20 << 20}.items():
        m("iodrift_slabinfo_bytes", size + t * 500, slab=slab)
        m("iodrift_slabinfo_objects", size // 192, slab=slab)
    m("iodrift_slabinfo_total_bytes", 400 << 20)
    for resource in ("cpu", "io", "memory", "irq"):
        m("iodrift_pressure_waiting_seconds_total", 0.02 * t, resource=resource)
        m("iodrift_pressure_stalled_seconds_total", 0.01 * t, resource=resource)
    for zone, counts in {"DMA32": [4, 1, 2, 2, 2, 2, 1, 4, 4, 2, 752],
                         "Normal": [447, 1421, 1018, 732, 461, 296, 209, 119, 75, 62, 320]}.items():
        for order, count in enumerate(counts):
            m("iodrift_buddyinfo_free_blocks", count, node="0", zone=zone, order=str(order))
    for collector in ("meminfo", "vmstat", "slabinfo", "pressure", "buddyinfo"):
        m("iodrift_collector_success", 1, collector=collector)
        m("iodrift_collector_duration_seconds", 0.001, collector=collector)
    for state, value in {"total": 90000, "unused": 60000, "negative": 20000}.items():
        m("iodrift_dentries", value, state=state)

    for name, kind, target in PROBES:
        p = {"probe": name, "kind": kind, "target": target}
        failing = name == "sda-random" and machine == 0
        stale = name == "state-metadata" and machine == 0
        m("iodrift_probe_success", 0 if failing else 1, **p)
        m("iodrift_probe_supported", 1, **p)
        m("iodrift_probe_duration_seconds", 0.25, **p)
        m("iodrift_probe_last_run_timestamp_seconds", now - (7200 if stale else 5), **p)
        m("iodrift_probe_interval_seconds", 600, **p)
        for result in ("ok", "error", "timeout", "skipped"):
            rate = {"ok": 0 if failing else 1, "error": 1 if failing else 0}.get(result, 0)
            m("iodrift_probe_runs_total", math.floor(rate * t), result=result, **p)
        m("iodrift_probe_read_bytes_total", math.floor(t) * (64 << 20), **p)
        m("iodrift_probe_bytes", 64 << 20, **p)
        m("iodrift_probe_cpu_seconds", 0.01, mode="user", **p)
        m("iodrift_probe_cpu_seconds", 0.2, mode="system", **p)
        if kind in ("cached", "buffered", "direct", "memory"):
            m("iodrift_probe_throughput_bytes_per_second", 800e6 * (0.5 if machine == 3 else 1), **p)
            m("iodrift_probe_baseline_bytes_per_second", 800e6, **p)
        else:
            ops = ["read"] if kind == "random" else ["create", "stat", "delete"]
            for op in ops:
                m("iodrift_probe_ops_per_second", 5000, op=op, **p)
                m("iodrift_probe_baseline_ops_per_second", 5000, op=op, **p)  # ops/s, per op
            cumulative = 0
            for i, bound in enumerate(LATENCY_BOUNDS):
                cumulative += math.floor(t * (4 if 4 <= i <= 8 else 0))
                m("iodrift_probe_latency_seconds_bucket", cumulative, le=repr(bound), **p)
            m("iodrift_probe_latency_seconds_bucket", cumulative, le="+Inf", **p)
            m("iodrift_probe_latency_seconds_count", cumulative, **p)
            m("iodrift_probe_latency_seconds_sum", cumulative * 0.001, **p)
            m("iodrift_probe_latency_last_seconds", 0.0004, quantile="0.5", **p)
            m("iodrift_probe_latency_last_seconds", 0.004, quantile="0.99", **p)
        m("iodrift_probe_baseline_ratio", 0.5 if machine == 3 else 0.97, **p)
        for reason in ("low_free_memory", "cache_not_dropped", "io_pressure"):
            m("iodrift_probe_suspect", 1 if (machine == 3 and reason == "low_free_memory") else 0,
              reason=reason, **p)
        for field in ("MemFree", "MemAvailable", "Buffers", "Cached", "Dirty", "Writeback", "Slab",
                      "SReclaimable", "SUnreclaim"):
            m("iodrift_probe_context_bytes", mem[field], field=field, **p)
        for feature, rho in {"uptime": -0.8, "slab_unreclaimable": -0.6, "free_memory": 0.4}.items():
            m("iodrift_probe_correlation", rho, feature=feature, **p)
        # The verdict (one series per probe with a baseline): the regressed machine's probes name a
        # cause, the others are not slower than their baseline.
        m("iodrift_probe_verdict", 1, cause="memory_reclaim" if machine == 3 else "undetermined", **p)
        m("iodrift_probe_target_info", 1, fstype="block", scheduler="mq-deadline", read_ahead_kb="128",
          rotational="0", **p)
    # Parallel readers: sda-buffered and sda-random with `readers: [1, 2]`.
    for n in (1, 2):
        eff = 1.0 if n == 1 else 0.8
        b = {"probe": "sda-buffered", "kind": "buffered", "target": "/dev/sda", "readers": str(n)}
        m("iodrift_probe_readers_throughput_bytes_per_second", 800e6 * n * eff, **b)
        m("iodrift_probe_readers_scaling_efficiency", eff, **b)
        r = {"probe": "sda-random", "kind": "random", "target": "/dev/sda", "readers": str(n)}
        m("iodrift_probe_readers_ops_per_second", 5000 * n * eff, op="read", **r)
        m("iodrift_probe_readers_scaling_efficiency", eff, **r)
        for stat, f in (("min", 0.9), ("max", 1.1)):
            m("iodrift_probe_reader_throughput_bytes_per_second", 800e6 * eff * f, stat=stat, **b)
            m("iodrift_probe_reader_ops_per_second", 5000 * eff * f, op="read", stat=stat, **r)
    # An md array probe with `members: true`: each member's figure and the array/member
    # ratio (three-disk RAID5: ~2 per member; on the regressed machine sdc is the slow disk).
    a = {"probe": "md0-buffered", "kind": "buffered", "target": "/dev/md0"}
    for member in ("sda", "sdb", "sdc"):
        slow = machine == 3 and member == "sdc"
        m("iodrift_probe_member_throughput_bytes_per_second", (200e6 if slow else 400e6), member=member, **a)
        m("iodrift_probe_array_member_ratio", 4.0 if slow else 2.0, member=member, **a)
    m("iodrift_page_cache_tax_ratio", 0.2, target="/dev/sda")
    return "\n".join(lines) + "\n"


def start_fake_exporters(uptimes):
    servers = []
    started = time.time()
    for machine, uptime in enumerate(uptimes):
        servers.append(serve_metrics(
            lambda up=uptime, idx=machine: exposition(up, started, idx).encode()))
    return servers, ["127.0.0.1:%d" % s.server_address[1] for s in servers]


# --------------------------------------------------------------------------------------------------
# Prometheus.

def write_config(tmp, targets):
    """A copy of the example prometheus.yml with test intervals and targets, plus the rule files
    (the day-scale group evaluated every second so it has data)."""
    with open(os.path.join(RULES_DIR, "prometheus.yml"), encoding="utf-8") as f:
        cfg = f.read()
    cfg = re.sub(r"scrape_interval: \S+", "scrape_interval: 1s", cfg)
    cfg = re.sub(r"evaluation_interval: \S+", "evaluation_interval: 1s", cfg)
    cfg = re.sub(r"scrape_timeout: \S+", "scrape_timeout: 1s", cfg)
    cfg, n = re.subn(r"( +)- 127\.0\.0\.1:9723[^\n]*",
                     lambda m: "\n".join("%s- %s" % (m.group(1), t) for t in targets), cfg)
    if n != 1:
        raise RuntimeError("prometheus.yml: the target line '- 127.0.0.1:9723' was not found")
    with open(os.path.join(tmp, "prometheus.yml"), "w", encoding="utf-8") as f:
        f.write(cfg)
    for path in glob.glob(os.path.join(RULES_DIR, "*.rules.yml")):
        with open(path, encoding="utf-8") as f:
            rules = re.sub(r"interval: 5m", "interval: 1s", f.read())
        with open(os.path.join(tmp, os.path.basename(path)), "w", encoding="utf-8") as f:
            f.write(rules)


def api(base, path, **params):
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)


# --------------------------------------------------------------------------------------------------
# Dashboard expressions.

def dashboard_queries(instance):
    """[(where, panel title, expr)] with variables substituted for a real query: a multi-value
    variable selects everything (".+", Grafana's "All"), a single-value one `instance`."""
    out = []
    for path in sorted(glob.glob(os.path.join(REPO, "dashboards", "*.json"))):
        base = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        values = {"__rate_interval": "1m", "__interval": "1m", "__range": "1h", "__range_s": "3600",
                  "__interval_ms": "60000", "__range_ms": "3600000"}
        for v in d["templating"]["list"]:
            values[v["name"]] = ".+" if v.get("multi") or v.get("includeAll") else instance

        def subst(expr, values=values):
            return re.sub(r"\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)",
                          lambda m: values.get(m.group(1) or m.group(2), "x"), expr)

        for v in d["templating"]["list"]:
            inner = lint.variable_query_expr(v.get("query")) if v.get("type") == "query" else None
            if inner:
                out.append(("%s: variable %s" % (base, v["name"]), v["name"], subst(inner)))
        for a in d["annotations"]["list"]:
            if not a.get("builtIn"):
                out.append(("%s: annotation %s" % (base, a["name"]), a["name"], subst(lint.annotation_expr(a))))
        for p in lint.Linter.walk_panels(d["panels"]):
            for t in p.get("targets") or []:
                out.append(("%s: panel %r target %s" % (base, p["title"], t["refId"]), p["title"],
                            subst(t["expr"])))
    return out


def used_metric_names():
    """Metric names (not recording-rule outputs, not Prometheus built-ins) that the dashboards and
    rule files read, as lint_dashboards.py --list-metrics prints them."""
    rules = sorted(glob.glob(os.path.join(RULES_DIR, "*.rules.yml")))
    recorded = set()
    for path in rules:
        recorded |= {name for kind, name, _, _ in lint.read_rule_file(path) if kind == "record"}
    linter = lint.Linter(lint.load_docs_contract(), recorded, {"meminfo": set(), "vmstat": set()})
    for path in sorted(glob.glob(os.path.join(REPO, "dashboards", "*.json"))):
        linter.lint_dashboard(path)
    for path in rules:
        linter.lint_rules(path)
    return linter.used - set(lint.BUILTIN_NAMES)


try:
    import ctypes
    _LIBC = ctypes.CDLL("libc.so.6", use_errno=True)  # loaded before fork: the child only calls it
except OSError:
    _LIBC = None


def _die_with_parent():
    """Runs in the child before exec: SIGTERM it when this script dies (e.g. a CTest timeout)."""
    if _LIBC is not None:
        _LIBC.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prometheus", default=shutil.which("prometheus"))
    ap.add_argument("--target", action="append", default=[],
                    help="scrape this iodriftd (HOST:PORT) instead of the fake exporters")
    ap.add_argument("--settle", type=float, default=8,
                    help="seconds of scraping before the first check (rates need two samples)")
    ap.add_argument("--timeout", type=float, default=40, help="seconds to wait for all checks to pass")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args(argv)
    if not args.prometheus or not os.access(args.prometheus, os.X_OK):
        print("prometheus not found (Debian package 'prometheus'); skipping", file=sys.stderr)
        return SKIP

    servers = []
    if args.target:
        targets = args.target
    else:
        servers, targets = start_fake_exporters([600, 3 * 86400, 10 * 86400, 40 * 86400])
    tmp = tempfile.mkdtemp(prefix="iodrift-prom-smoke-")
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    write_config(tmp, targets)
    log = open(os.path.join(tmp, "prometheus.log"), "w")
    proc = subprocess.Popen(
        [args.prometheus, "--config.file=" + os.path.join(tmp, "prometheus.yml"),
         "--storage.tsdb.path=" + os.path.join(tmp, "data"), "--web.listen-address=127.0.0.1:%d" % port,
         "--log.level=warn"], stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # run the cleanup below
    failures = []
    warnings = []
    try:
        why = wait_ready(base + "/-/ready", [proc], timeout=30)
        if why:
            with open(os.path.join(tmp, "prometheus.log"), encoding="utf-8") as f:
                failures.append(f"prometheus did not become ready ({why}):\n" + f.read()[-3000:])
            return report(failures, warnings)
        time.sleep(args.settle)
        deadline = time.time() + args.timeout
        while True:
            failures, warnings = check(base, targets, strict=not args.target)
            if not failures or time.time() > deadline:
                break
            time.sleep(2)
        return report(failures, warnings)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        for srv in servers:
            srv.shutdown()
        if args.keep:
            print("kept " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def check(base, targets, strict):
    failures, warnings = [], []
    active = api(base, "/api/v1/targets")["data"]["activeTargets"]
    for t in active:
        if t["health"] != "up":
            failures.append("target %s is %s: %s" % (t["scrapeUrl"], t["health"], t.get("lastError")))
    if len(active) != len(targets):
        failures.append("%d targets active, expected %d" % (len(active), len(targets)))

    groups = api(base, "/api/v1/rules")["data"]["groups"]
    files = {os.path.basename(g["file"]) for g in groups}
    expected_files = {os.path.basename(p) for p in glob.glob(os.path.join(RULES_DIR, "*.rules.yml"))}
    if files != expected_files:
        failures.append("rule files loaded: %s, expected %s" % (sorted(files), sorted(expected_files)))
    for g in groups:
        for r in g["rules"]:
            if r.get("health") != "ok":
                failures.append("rule %s (%s): health %s %s" % (r["name"], g["name"], r.get("health"),
                                                                 r.get("lastError", "")))

    # Every metric the dashboards and rules read must be in what the targets export: a renamed metric
    # breaks this test, not a dashboard.
    ingested = set(api(base, "/api/v1/label/__name__/values")["data"])
    for name in sorted(used_metric_names() - ingested):
        msg = "metric %s is used by the dashboards or rules but no target exports it" % name
        (warnings if name in OPTIONAL_METRICS else failures).append(msg)

    instance = targets[0]
    for where, title, expr in dashboard_queries(instance):
        res = api(base, "/api/v1/query", query=expr)
        if res.get("status") != "success":
            failures.append("%s: %s\n      expr: %s" % (where, res.get("error"), expr))
            continue
        if not res["data"]["result"]:
            msg = "%s: no data\n      expr: %s" % (where, expr)
            if title in NEEDS_SIBLINGS:
                continue
            if not strict and title in EMPTY_WHEN_HEALTHY:
                warnings.append(msg)
            else:
                failures.append(msg)
    return failures, warnings


def report(failures, warnings):
    for w in warnings:
        print("warning: " + w)
    for f in failures:
        print("error: " + f)
    if failures:
        print("prometheus_smoke: %d failure(s)" % len(failures))
        return 1
    print("prometheus_smoke: targets up, rules healthy, every dashboard query returns data")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
