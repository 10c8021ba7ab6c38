#!/usr/bin/env python3
"""A fleet on a real distributed store.

N iodriftd instances (default 20) on 127.0.0.1:0, each with its own --proc-root (a copy of
tests/fixtures/proc/local-6.18 with its own uptime, free memory, slab size and free-page spread, so
every machine looks different) and its own state dir, running a few real light probes (cached,
buffered and direct on a 2 MiB file in its state dir, 1 MiB per run) every 2 s (the memory probe
is left out: its CPU-bound copy loops take seconds on a loaded 2-core CI machine, times 20). A real
`prometheus` scrapes all of them with the shipped recording and alert rules
(dashboards/prometheus/*.rules.yml, every group evaluated every 2 s, scrapes every 2 s) and the
example config examples/fleet/prometheus.yml (intervals, targets and URL substituted), which
remote_writes the iodrift:* series and ALERTS to a real VictoriaMetrics (Debian package
`victoria-metrics`, single node).

Checks, polled until a deadline (no fixed sleeps), after `promtool check config --lint=all` of the
generated config:
  * every target is up and every rule evaluates with health "ok" on the site Prometheus;
  * every expression of dashboards/iodrift-fleet.json (panels, variables, annotation; variables
    substituted) is answered by VictoriaMetrics' Prometheus API (/api/v1/query) without error and
    with data; expressions that list problems are run with their problem filter relaxed (RELAXED);
  * the per-machine expressions (topk/bottomk unwrapped) have had a series from every one of the
    N instances (over the polling rounds: a starved scrape can drop a machine for a round), and
    label_values(..., instance) has listed all N and label_values(..., job) is ["iodrift"];
  * a test-only alert that always fires on every machine (IodriftFleetTestAlwaysFiring) reaches
    the central store as ALERTS: the "Active iodrift alerts" table lists all N instances;
  * VictoriaMetrics holds no raw series (the example forwards only iodrift:* and ALERTS), and
    Prometheus reports no failed remote-write samples.

Figures printed at the end (docs/fleet.md "A fleet: Prometheus per site, VictoriaMetrics central"):
series per host at the site and centrally, samples/s ingested by VictoriaMetrics
(vm_rows_inserted_total over a window of FLEET_SECONDS), recording/alert rule evaluation time
(/api/v1/rules evaluationTime), remote-write bytes per sample, VictoriaMetrics bytes per stored
sample after a forced flush and merge, and the extrapolation to 10,000 hosts.

Bench mode: FLEET_N=100 FLEET_SECONDS=120 FLEET_INTERVAL=2 FLEET_PROBE_INTERVAL=10
FLEET_DEADLINE=600 (scrape/evaluation interval, probe interval and deadline in s; FLEET_KEEP=1
keeps the temporary directory with every log), or
tests/bench/fleet_bench.sh.
Skips (77) without /usr/bin/prometheus or /usr/bin/victoria-metrics. Needs $IODRIFTD. Every
process runs in its own process group, killed on the way out (also on failure or SIGTERM).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from iodrift_test.daemon import binary
from iodrift_test.net import free_port, wait_ready
from iodrift_test.skip import fail, skip_guaranteed

REPO = os.environ.get("IODRIFT_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "dashboards"))
import lint_dashboards as lint  # noqa: E402

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
VICTORIA = shutil.which("victoria-metrics") or "/usr/bin/victoria-metrics"
N = int(os.environ.get("FLEET_N", "20"))
SECONDS = float(os.environ.get("FLEET_SECONDS", "10"))  # ingest-rate window
INTERVAL = int(os.environ.get("FLEET_INTERVAL", "2"))  # scrape and rule evaluation interval, s
PROBE_INTERVAL = int(os.environ.get("FLEET_PROBE_INTERVAL", "2"))  # s between runs of each probe
DEADLINE = float(os.environ.get("FLEET_DEADLINE", "150"))  # s from VictoriaMetrics ready to data
FIXTURE = os.path.join(REPO, "tests", "fixtures", "proc", "local-6.18")
RULES_DIR = os.path.join(REPO, "dashboards", "prometheus")
EXAMPLE = os.path.join(REPO, "examples", "fleet", "prometheus.yml")
DASHBOARD = os.path.join(REPO, "dashboards", "iodrift-fleet.json")
HOSTS = 10000  # the extrapolation's fleet
PROD_INTERVAL = 15  # s, evaluation interval of examples/fleet/prometheus.yml

# Panels that list problems (empty on a healthy fleet): (title, regex of the problem filter,
# replacement keeping every series). Each regex must still match, or the test fails.
RELAXED = [
    ("Probes with failed runs (last hour)", r" > 0\)$", " >= 0)"),
    ("Failed-run share (top 10 probes)", r" > 0\)$", " >= 0)"),
    ("Stale probes (no run for 3 intervals)", r" > on \(", " <= on ("),
    ("Top slab growth (24 h)", r" > 0\)$", " >= -Inf)"),
    ("Top slab caches by growth (24 h)", r" > 0\)$", " >= -Inf)"),
    ("Reboots", r" < 1800$", " >= 0"),
    ("Hosts by cause", r'cause!="undetermined"', 'cause=~".+"'),
    ("Sibling outliers (robust z-score below -3)", r" < -3\)$", " >= -Inf)"),
]
# Expressions that aggregate the instances away (avg over an uptime band: one band per machine;
# the share of siblings drifted: one series per probe and sibling group).
AGGREGATED = {"Throughput vs uptime: mean worst ratio by uptime band", "Share of siblings drifted"}
# A test-only rule file: an alert that always fires on every machine, so that ALERTS travel to the
# central store and the dashboard's "Active iodrift alerts" table has a row per machine.
TEST_ALERT_RULES = """\
groups:
  - name: iodrift-fleet-test
    rules:
      - alert: IodriftFleetTestAlwaysFiring
        expr: iodrift_build_info
        labels:
          severity: none
        annotations:
          summary: "Always firing (tests/fleet/fleet_test.py)"
"""

try:
    import ctypes
    _LIBC = ctypes.CDLL("libc.so.6", use_errno=True)
except OSError:
    _LIBC = None


def _child_setup():
    os.setpgrp()  # own process group: killed as a whole on the way out
    if _LIBC is not None:
        _LIBC.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG: die with the test


class Procs:
    """Processes started in their own process groups; `stop()` kills every group."""

    def __init__(self):
        self.procs = []

    def start(self, args, log_path):
        log = open(log_path, "w")
        p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             preexec_fn=_child_setup)
        log.close()
        self.procs.append((p, log_path))
        return p

    def stop(self):
        for p, _ in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        end = time.monotonic() + 10
        for p, _ in self.procs:
            try:
                p.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()


def tail(path, chars=3000):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-chars:]
    except OSError as e:
        return str(e)


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def api(base, path, **params):
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        try:
            return json.load(e)
        except ValueError:
            return {"status": "error", "error": "HTTP %d" % e.code}


def query(base, expr):
    res = api(base, "/api/v1/query", query=expr)
    if res.get("status") != "success":
        return None, res.get("error", str(res))
    return res["data"]["result"], None


def server_ready(url, procs, what):
    """Fails with the servers' logs unless `url` answers within 60 s (net.wait_ready)."""
    why = wait_ready(url, [p for p, _ in procs.procs], timeout=60)
    if why:
        fail("%s not ready: %s\n%s" % (what, why, "\n".join(tail(log) for _, log in procs.procs)))


def wait_until(what, check, deadline, procs, step=0.5):
    """Polls check() (returns None when satisfied, else a description) until `deadline`."""
    last = None
    while time.monotonic() < deadline:
        for p, log in procs.procs:
            if p.poll() is not None:
                fail("%s exited with %s while waiting for %s:\n%s" % (p.args[0], p.returncode, what,
                                                                      tail(log)))
        last = check()
        if last is None:
            return
        time.sleep(step)
    fail("timed out waiting for %s: %s" % (what, last))


# --------------------------------------------------------------------------------------------------
# The machines.

def make_proc_root(directory, i):
    """A copy of the local-6.18 fixture made distinct: uptime spread over the dashboard's bands
    (< 1 d, 1-7 d, 7-30 d, > 30 d), MemFree/MemAvailable 30-95 % of MemTotal, Slab and the
    free-page spread varied."""
    shutil.copytree(FIXTURE, directory)
    uptime = [600, 3 * 86400, 10 * 86400, 40 * 86400][i % 4] + 37 * i
    with open(os.path.join(directory, "uptime"), "w") as f:
        f.write("%.2f %.2f\n" % (uptime, uptime * 1.7))
    path = os.path.join(directory, "meminfo")
    with open(path) as f:
        lines = f.read().splitlines()
    total = int(re.search(r"^MemTotal:\s+(\d+)", "\n".join(lines), re.M).group(1))
    share = 0.30 + 0.65 * (i % 13) / 12

    def setkb(line, value):
        name = line.split(":")[0]
        return "%-16s%8d kB" % (name + ":", value)

    out = []
    for line in lines:
        if line.startswith(("MemFree:", "MemAvailable:")):
            line = setkb(line, int(total * share))
        elif line.startswith(("Slab:", "SUnreclaim:")):
            line = setkb(line, int(line.split()[1]) + 1024 * i)
        out.append(line)
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    path = os.path.join(directory, "buddyinfo")
    with open(path) as f:
        text = f.read()
    # Shift small-order counts so the fragmentation figure differs per machine.
    text = re.sub(r"(Normal\s+)(\d+)", lambda m: m.group(1) + str(int(m.group(2)) + 500 * i), text)
    with open(path, "w") as f:
        f.write(text)


def write_daemon_config(path, state_dir):
    probes = [("fleet-cached", "cached", "1MiB"), ("fleet-buffered", "buffered", "1MiB"),
              ("fleet-direct", "direct", "1MiB")]
    with open(path, "w") as f:
        f.write("log_level: info\nprobes:\n")
        for name, kind, size in probes:
            f.write("  - name: %s\n    kind: %s\n    interval: %ds\n    timeout: 20s\n"
                    "    size: %s\n" % (name, kind, PROBE_INTERVAL, size))
            f.write("    target: %s\n" % os.path.join(state_dir, "data"))


_SERVING = re.compile(r"serving metrics on https?://[^ ]*:(\d+)/metrics")


def start_fleet(tmp, procs):
    machines = []  # (log, process)
    for i in range(N):
        d = os.path.join(tmp, "host-%03d" % i)
        os.makedirs(os.path.join(d, "state"))
        # A regular-file target written here (page cache, no fsync): a directory target would make
        # every daemon create and fdatasync its own probe file, minutes on a busy CI disk.
        with open(os.path.join(d, "state", "data"), "wb") as f:
            f.write(os.urandom(2 << 20))
            f.flush()
            os.fsync(f.fileno())  # dirty pages ignore fadvise: the buffered probe would skip
        make_proc_root(os.path.join(d, "proc"), i)
        write_daemon_config(os.path.join(d, "iodrift.yaml"), os.path.join(d, "state"))
        log = os.path.join(d, "iodriftd.log")
        p = procs.start([binary(), "--config", os.path.join(d, "iodrift.yaml"),
                         "--listen", "127.0.0.1:0", "--dbus", "none",
                         "--state-dir", os.path.join(d, "state"),
                         "--proc-root", os.path.join(d, "proc")], log)
        machines.append((log, p))
    targets = []
    deadline = time.monotonic() + 60
    for log, p in machines:
        while True:
            if p.poll() is not None:
                fail("iodriftd exited with %s:\n%s" % (p.returncode, tail(log)))
            m = _SERVING.search(tail(log, 100000))
            if m:
                targets.append("127.0.0.1:%s" % m.group(1))
                break
            if time.monotonic() > deadline:
                fail("iodriftd did not report its port in 60 s:\n%s" % tail(log))
            time.sleep(0.05)
    return targets


# --------------------------------------------------------------------------------------------------
# Prometheus and VictoriaMetrics.

def write_prometheus_config(tmp, targets, vm_base):
    with open(EXAMPLE) as f:
        cfg = f.read()
    subs = [(r"scrape_interval: \S+", "scrape_interval: %ds" % INTERVAL),
            (r"evaluation_interval: \S+", "evaluation_interval: %ds" % INTERVAL),
            (r"scrape_timeout: \S+", "scrape_timeout: %ds" % INTERVAL),
            (r"batch_send_deadline: \S+", "batch_send_deadline: 1s"),
            (r"url: http://victoria-metrics\.example\.net:8428", "url: " + vm_base)]
    for pattern, repl in subs:
        cfg, n = re.subn(pattern, repl, cfg)
        if n != 1:
            fail("%s: %r matched %d times, expected once" % (EXAMPLE, pattern, n))
    cfg, n = re.subn(r"(\n( +)- iodrift-alerts\.rules\.yml\n)",
                     lambda m: m.group(1) + m.group(2) + "- iodrift-fleet-test.rules.yml\n", cfg)
    if n != 1:
        fail("%s: the rule_files line '- iodrift-alerts.rules.yml' was not found" % EXAMPLE)
    with open(os.path.join(tmp, "iodrift-fleet-test.rules.yml"), "w") as f:
        f.write(TEST_ALERT_RULES)
    cfg, n = re.subn(r"(?:( +)- host-\d+\.site-a\.example\.net:9723\n)+",
                     lambda m: "".join("%s- %s\n" % (m.group(1), t) for t in targets), cfg)
    if n != 1:
        fail("%s: the example target lines were not found" % EXAMPLE)
    with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
        f.write(cfg)
    for name in ("iodrift-recording.rules.yml", "iodrift-alerts.rules.yml"):
        with open(os.path.join(RULES_DIR, name)) as f:
            rules = re.sub(r"interval: 5m", "interval: %ds" % INTERVAL, f.read())
        with open(os.path.join(tmp, name), "w") as f:
            f.write(rules)


def vm_metrics(vm_base):
    """A server's own /metrics (VictoriaMetrics, Prometheus) as {series: value}."""
    out = {}
    for line in http_get(vm_base + "/metrics").splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            try:
                out[series] = float(value)
            except ValueError:
                pass
    return out


def vm_sum(metrics, name, **labels):
    total = 0.0
    for series, value in metrics.items():
        if series == name or series.startswith(name + "{"):
            if all('%s="%s"' % (k, v) in series for k, v in labels.items()):
                total += value
    return total


# --------------------------------------------------------------------------------------------------
# The fleet dashboard's expressions.

def dashboard_exprs():
    """[(where, title, expr)] of dashboards/iodrift-fleet.json, multi-value variables as `.+`."""
    with open(DASHBOARD) as f:
        d = json.load(f)
    values = {"__rate_interval": "1m", "__interval": "1m", "__range": "1h", "__range_s": "3600",
              "__interval_ms": "60000", "__range_ms": "3600000"}
    for v in d["templating"]["list"]:
        values[v["name"]] = ".+"

    def subst(expr):
        return re.sub(r"\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)",
                      lambda m: values.get(m.group(1) or m.group(2), "x"), expr)

    out = []
    for v in d["templating"]["list"]:
        inner = lint.variable_query_expr(v.get("query")) if v.get("type") == "query" else None
        if inner:
            out.append(("variable " + v["name"], v["name"], subst(inner)))
    for a in d["annotations"]["list"]:
        if not a.get("builtIn"):
            out.append(("annotation " + a["name"], a["name"], subst(lint.annotation_expr(a))))
    for p in lint.Linter.walk_panels(d["panels"]):
        for t in p.get("targets") or []:
            out.append(("panel %r target %s" % (p["title"], t["refId"]), p["title"],
                        subst(t["expr"])))
    relaxed = []
    for where, title, expr in out:
        for r_title, pattern, repl in RELAXED:
            if title == r_title:
                expr, n = re.subn(pattern, repl, expr)
                if n != 1:
                    fail("%s: the problem filter %r is no longer in %r (update RELAXED)"
                         % (where, pattern, expr))
        relaxed.append((where, title, expr))
    return relaxed


_TOPK = re.compile(r"^(?:topk|bottomk)\(\d+,\s*(.*)\)$", re.S)


def per_machine_expr(expr):
    """The expression whose result has one series per machine: topk/bottomk(k, X) → X."""
    m = _TOPK.match(expr)
    return m.group(1) if m else expr


def check_central(vm_base, targets, seen):
    """One round of the VictoriaMetrics checks; returns the list of failures. `seen` maps each
    check to the instances it has answered with so far: on a loaded machine a scrape can time out
    and a machine's series go stale for a round, so each check must have shown every instance,
    not all of them in the same round."""
    failures = []
    want = set(targets)

    def instances(key, got):
        seen.setdefault(key, set()).update(got)
        return seen[key]

    # label_values() variables: VictoriaMetrics' /api/v1/label/<name>/values with match[].
    selector = "iodrift:uptime_seconds:max"
    res = api(vm_base, "/api/v1/label/instance/values", **{"match[]": selector})
    got = instances("label_values instance", res.get("data") or [])
    if got != want:
        failures.append("label_values(%s, instance): %d of %d instances (missing %s)"
                        % (selector, len(got & want), len(want), sorted(want - got)[:5]))
    res = api(vm_base, "/api/v1/label/job/values", **{"match[]": selector})
    if res.get("data") != ["iodrift"]:
        failures.append("label_values(%s, job) = %s, want ['iodrift']"
                        % (selector, res.get("data")))
    for where, title, expr in dashboard_exprs():
        result, err = query(vm_base, expr)
        if err:
            failures.append("%s: error %s\n      expr: %s" % (where, err, expr))
            continue
        if result:
            seen.setdefault(where, set())
        if where not in seen:
            failures.append("%s: no data yet\n      expr: %s" % (where, expr))
            continue
        if title in AGGREGATED:
            continue
        machine_expr = per_machine_expr(expr)
        result, err = query(vm_base, machine_expr)
        if err:
            failures.append("%s: error %s\n      expr: %s" % (where, err, machine_expr))
            continue
        got = instances(where, {r["metric"].get("instance") for r in result})
        if got != want:
            failures.append("%s: %d of %d instances so far (missing %s, extra %s)\n      expr: %s"
                            % (where, len(got & want), len(want), sorted(want - got)[:5],
                               sorted(got - want)[:5], machine_expr))
    return failures


def check_site(prom_base, n):
    failures = []
    active = api(prom_base, "/api/v1/targets")["data"]["activeTargets"]
    down = [(t["scrapeUrl"], t.get("lastError")) for t in active if t["health"] != "up"]
    if len(active) != n or down:
        failures.append("%d targets active (want %d), not up: %s" % (len(active), n, down[:3]))
    for g in api(prom_base, "/api/v1/rules")["data"]["groups"]:
        for r in g["rules"]:
            if r.get("health") != "ok":
                failures.append("rule %s (%s): health %s %s" % (
                    r["name"], g["name"], r.get("health"), r.get("lastError", "")))
    return failures


# --------------------------------------------------------------------------------------------------
# Figures.

def scalar(base, expr):
    result, err = query(base, expr)
    if err or not result:
        fail("query %s: %s" % (expr, err or "no data"))
    return float(result[0]["value"][1])


def slow_rule_intervals():
    """{recorded name: group interval in s} of the shipped recording-rule groups that set their own
    `interval:` (the day-scale group), read from the shipped file."""
    out, interval = {}, None
    with open(os.path.join(RULES_DIR, "iodrift-recording.rules.yml")) as f:
        for line in f:
            if re.match(r"\s*- name:", line):
                interval = None
            m = re.match(r"\s*interval: (\d+)([smh])\s*$", line)
            if m:
                interval = int(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]
            m = re.match(r"\s*- record: (\S+)", line)
            if m and interval:
                out[m.group(1)] = interval
    if not out:
        fail("no recording-rule group with its own interval in the shipped file")
    return out


def measure(prom_base, vm_base, targets):
    fig = {"hosts": N, "interval_s": INTERVAL}
    fig["site_series_per_host"] = scalar(prom_base, 'avg(scrape_samples_scraped{job="iodrift"})')
    fig["site_recorded_series"] = scalar(prom_base, 'count({__name__=~"iodrift:.+"})')
    fig["central_series"] = scalar(vm_base, 'count({__name__=~".+"})')
    fig["central_series_per_host"] = scalar(
        vm_base, 'avg(count by (instance) ({__name__=~"iodrift:.+", instance!=""}))')
    by_name, _ = query(vm_base, 'count by (__name__) ({__name__=~".+", instance="%s"})'
                       % targets[0])
    fig["central_series_by_name"] = {r["metric"]["__name__"]: int(r["value"][1])
                                     for r in by_name or []}
    raw, _ = query(vm_base, 'count({__name__=~"iodrift_.+"})')
    if raw:
        fail("VictoriaMetrics holds raw iodrift_* series: the example forwards only iodrift:* "
             "and ALERTS: %s" % raw)

    # Ingest rate over the window, from VictoriaMetrics' own counter; meanwhile the rule groups'
    # evaluation time on the site Prometheus (/api/v1/rules evaluationTime, sampled every second).
    m0, t0 = vm_metrics(vm_base), time.monotonic()
    samples = []  # total evaluation time of all groups, one value per sample
    fig["rule_groups"] = {}
    while time.monotonic() - t0 < SECONDS:
        groups = api(prom_base, "/api/v1/rules")["data"]["groups"]
        samples.append(sum(g["evaluationTime"] for g in groups))
        for g in groups:
            fig["rule_groups"].setdefault(g["name"], []).append(g["evaluationTime"])
        time.sleep(1)  # a measurement window, not a wait for a condition
    m1, t1 = vm_metrics(vm_base), time.monotonic()
    rows = vm_sum(m1, "vm_rows_inserted_total", type="promremotewrite") - \
        vm_sum(m0, "vm_rows_inserted_total", type="promremotewrite")
    fig["ingest_samples_per_s"] = rows / (t1 - t0)
    fig["ingest_per_host_per_s"] = fig["ingest_samples_per_s"] / N
    cpu = vm_sum(m1, "process_cpu_seconds_total") - vm_sum(m0, "process_cpu_seconds_total")
    fig["vm_cpu_us_per_sample"] = cpu / rows * 1e6 if rows else 0
    fig["vm_rss_bytes"] = vm_sum(m1, "process_resident_memory_bytes")
    fig["rule_groups"] = {k: sum(v) / len(v) for k, v in fig["rule_groups"].items()}
    fig["rule_eval_avg_s"] = sum(samples) / len(samples)
    fig["rule_eval_max_s"] = max(samples)

    # Remote write (Prometheus' own /metrics): samples sent, failed, bytes on the wire.
    pm = vm_metrics(prom_base)
    sent = vm_sum(pm, "prometheus_remote_storage_samples_total")
    failed = vm_sum(pm, "prometheus_remote_storage_samples_failed_total")
    wire = vm_sum(pm, "prometheus_remote_storage_bytes_total")
    if failed:
        fail("Prometheus failed to remote-write %d samples" % failed)
    if not sent:
        fail("Prometheus reports no remote-written samples "
             "(prometheus_remote_storage_samples_total)")
    fig["wire_bytes_per_sample"] = wire / sent

    # Storage: flush and merge so the on-disk figures hold every sample.
    for path in ("/internal/force_flush", "/internal/force_merge"):
        try:
            http_get(vm_base + path, timeout=60)
        except OSError as e:
            print("note: %s: %s" % (path, e))
    m2 = vm_metrics(vm_base)
    size = vm_sum(m2, "vm_data_size_bytes", type="storage/small") + \
        vm_sum(m2, "vm_data_size_bytes", type="storage/big")
    stored = vm_sum(m2, "vm_rows", type="storage/small") + vm_sum(m2, "vm_rows", type="storage/big")
    fig["stored_rows"] = stored
    fig["bytes_per_sample"] = size / stored if stored else 0
    fig["index_bytes"] = vm_sum(m2, "vm_data_size_bytes", type="indexdb")

    # 10,000 hosts at the example's 15 s evaluation interval; the day-scale group keeps its own
    # interval (5m in the shipped file, FLEET_INTERVAL in this test).
    slow = slow_rule_intervals()
    per_host_prod = sum(count / slow.get(name, PROD_INTERVAL)
                        for name, count in fig["central_series_by_name"].items()
                        if name != "ALERTS")  # the test's always-firing alert: none when healthy
    fig["x_samples_per_host_per_s"] = per_host_prod
    fig["x_series"] = fig["central_series_per_host"] * HOSTS
    fig["x_ingest_per_s"] = per_host_prod * HOSTS
    fig["x_samples_per_day"] = fig["x_ingest_per_s"] * 86400
    fig["x_bytes_per_day"] = fig["x_samples_per_day"] * fig["bytes_per_sample"]
    fig["x_vm_cores"] = fig["x_ingest_per_s"] * fig["vm_cpu_us_per_sample"] / 1e6
    fig["x_rule_eval_s_per_1000_hosts"] = fig["rule_eval_avg_s"] / N * 1000
    return fig


def report(fig):
    print("fleet figures (N=%d instances, %d s scrape/evaluation interval):" % (N, INTERVAL))
    print("  site: series per host scraped          %8.0f" % fig["site_series_per_host"])
    print("  site: iodrift:* series recorded        %8.0f  (%.0f per host)"
          % (fig["site_recorded_series"], fig["site_recorded_series"] / N))
    print("  central: series                        %8.0f  (%.1f per host, firing ALERTS included)"
          % (fig["central_series"], fig["central_series"] / N))
    print("  central: iodrift:* series per host      %8.1f" % fig["central_series_per_host"])
    print("  central: series of one host by name     %s" % ", ".join(
        "%s %d" % kv
        for kv in sorted(fig["central_series_by_name"].items(), key=lambda kv: -kv[1])))
    print("  central: samples/s ingested            %8.1f  (%.1f per host at %d s; "
          "vm_rows_inserted_total{type=\"promremotewrite\"} over %.0f s)"
          % (fig["ingest_samples_per_s"], fig["ingest_per_host_per_s"], INTERVAL, SECONDS))
    print("  VictoriaMetrics CPU per sample ingested %7.1f us  (RSS %.0f MiB)"
          % (fig["vm_cpu_us_per_sample"], fig["vm_rss_bytes"] / 2**20))
    print("  site: rule evaluation per round        %8.4f s mean, %.4f s max  (%s)"
          % (fig["rule_eval_avg_s"], fig["rule_eval_max_s"],
             ", ".join("%s %.4f" % kv for kv in sorted(fig["rule_groups"].items()))))
    print("  remote-write bytes per sample (wire)   %8.2f" % fig["wire_bytes_per_sample"])
    print("  VictoriaMetrics bytes per stored sample%8.2f  (%.0f rows; indexdb %.0f bytes)"
          % (fig["bytes_per_sample"], fig["stored_rows"], fig["index_bytes"]))
    print("extrapolated to %d hosts at a %d s evaluation interval (day-scale group at its own "
          "interval): %.2f samples/s per host" % (HOSTS, PROD_INTERVAL,
                                                  fig["x_samples_per_host_per_s"]))
    print("  central series                         %10.0f" % fig["x_series"])
    print("  central ingest                         %10.0f samples/s" % fig["x_ingest_per_s"])
    print("  central storage                        %10.2f GB/day  (%.2f bytes/sample; %.2e "
          "samples/day)" % (fig["x_bytes_per_day"] / 1e9, fig["bytes_per_sample"],
                            fig["x_samples_per_day"]))
    print("  central CPU for ingestion              %10.2f cores (at the CPU per sample above)"
          % fig["x_vm_cores"])
    print("  site rule evaluation                   %10.4f s per round per 1000 hosts"
          % fig["x_rule_eval_s_per_1000_hosts"])
    print("FLEET_JSON " + json.dumps(fig, sort_keys=True))


def main():
    binary()
    for path, pkg in ((PROMETHEUS, "prometheus"), (VICTORIA, "victoria-metrics")):
        if not os.access(path, os.X_OK):
            skip_guaranteed("%s not installed (Debian package '%s')" % (path, pkg))
    tmp = tempfile.mkdtemp(prefix="iodrift-fleet-")
    procs = Procs()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # run the clean-up below
    start = time.monotonic()
    try:
        vm_port = free_port()
        vm_base = "http://127.0.0.1:%d" % vm_port
        procs.start([VICTORIA, "-httpListenAddr=127.0.0.1:%d" % vm_port,
                     "-storageDataPath=" + os.path.join(tmp, "vm"), "-retentionPeriod=1d",
                     # Show samples at once, and look back 1 min like a 15 s setup would (its
                     # default, from the 2 s sample interval, is a few seconds: on a loaded CI
                     # machine remote-write delivery lags that much and instances drop out).
                     "-search.latencyOffset=0s", "-search.maxLookback=1m", "-search.disableCache",
                     "-loggerLevel=WARN"],
                    os.path.join(tmp, "victoria-metrics.log"))
        targets = start_fleet(tmp, procs)
        server_ready(vm_base + "/health", procs, "VictoriaMetrics")

        prom_port = free_port()
        prom_base = "http://127.0.0.1:%d" % prom_port
        write_prometheus_config(tmp, targets, vm_base)
        promtool = shutil.which("promtool")
        if promtool:  # the example (as the test runs it) and the rules it names are valid
            res = subprocess.run([promtool, "check", "config", "--lint=all",
                                  os.path.join(tmp, "prometheus.yml")],
                                 capture_output=True, text=True, timeout=60)
            if res.returncode != 0:
                fail("promtool check config: %s%s" % (res.stdout, res.stderr))
        procs.start([PROMETHEUS, "--config.file=" + os.path.join(tmp, "prometheus.yml"),
                     "--storage.tsdb.path=" + os.path.join(tmp, "prometheus"),
                     "--web.listen-address=127.0.0.1:%d" % prom_port, "--log.level=warn"],
                    os.path.join(tmp, "prometheus.log"))
        server_ready(prom_base + "/-/ready", procs, "Prometheus")
        deadline = time.monotonic() + DEADLINE

        def site():
            f = check_site(prom_base, N)
            return "\n".join(f) if f else None
        wait_until("the site Prometheus: targets up, rules healthy", site, deadline, procs, 1)
        print("fleet: site Prometheus: %d targets up, rules healthy (%.0f s after start)"
              % (N, time.monotonic() - start))

        seen = {}

        def central():
            f = check_central(vm_base, targets, seen)
            return ("%d failure(s):\n  " % len(f) + "\n  ".join(f)) if f else None
        wait_until("VictoriaMetrics to answer every fleet dashboard query with all %d instances"
                   % N,
                   central, deadline, procs, 2)
        print("fleet: %d instances, every fleet dashboard query answered by VictoriaMetrics with "
              "data from all of them (%.0f s after start)" % (N, time.monotonic() - start))
        report(measure(prom_base, vm_base, targets))
    except BaseException:
        for name in ("prometheus.log", "victoria-metrics.log", "host-000/iodriftd.log"):
            print("--- %s ---\n%s" % (name, tail(os.path.join(tmp, name))))
        raise
    finally:
        procs.stop()
        if os.environ.get("FLEET_KEEP"):
            print("kept " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
