#!/usr/bin/env python3
"""The dashboards and rules against a real Prometheus scraping a real iodriftd.

Needs root (losetup, mkfs.ext4, mount), /usr/bin/prometheus and /usr/bin/promtool (Debian package
`prometheus`); exits 77 (CTest: skipped) otherwise.

Set-up: an ext4 file system on a 96 MiB loop device, and iodriftd (--dbus none, 127.0.0.1:0) with
one probe of every kind on it - cached, buffered, direct and random on a file, metadata on a
directory, plus memory - and a buffered probe with `members: true` on a loop device that a built
sysfs tree (`sys_root`, mirroring /sys otherwise) makes an array of two loop devices, every 2 s with small sizes, so that baselines (5 clean runs), ratios and
rank correlations (8 runs) exist within the test. Prometheus scrapes it every second and evaluates
the recording and alert rules of dashboards/prometheus every second (the day-scale group too).

Checks (all failures are collected and printed together, each expression with its panel title):
  * `promtool check config` and `promtool check rules --lint=all` are clean on the generated files,
    and `promtool check metrics` on the daemon's scrape with every probe family in it;
  * every metric the dashboards and rules read (recording-rule outputs `iodrift:...` excepted) is in
    the daemon's own /metrics output: a renamed metric fails here;
  * the target is up, every rule group is loaded and every rule evaluates with health "ok";
  * every PromQL expression of every panel target, annotation and variable query of both
    dashboards (variables substituted: multi-value ones `.+`, the instance the real target) parses
    and returns at least one series, polled until a deadline (recording rules need a few rounds).
    The few expressions that are empty on a healthy machine in a short test are listed in
    RELAXED with the reason; for those the test runs the same expression with its "problem"
    filter relaxed instead, which must return data (so the metric, labels and joins are still
    proven), and fails when the filter it relaxes is no longer in the expression.
  * "Active iodrift alerts": a test-only rule file adds an alert named Iodrift... that always
    fires (`for` 0), so both dashboards' ALERTS queries must show it.

Stdlib only. Run as root:
  PYTHONPATH=tests/lib IODRIFTD=build/iodriftd python3 tests/dashboards/live_daemon_test.py
"""
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

from iodrift_test.daemon import Daemon
from iodrift_test.devices import Scratch, need_root
from iodrift_test.skip import fail, skip_guaranteed
from iodrift_test.sysfs import build_array_tree

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
DEADLINE_SECONDS = 120  # from Prometheus ready until every check passes
PROBE_INTERVAL = "2s"

# Expressions that cannot return data on a healthy machine within a short test: (panel title,
# regex of the "problem" filter in its expression, replacement that keeps every series, reason).
RELAXED = [
    ("Probes with failed runs (last hour)", r" > 0\)$", " >= 0)",
     "lists probes with failed runs; every run succeeds here"),
    ("Failed-run share (top 10 probes)", r" > 0\)$", " >= 0)",
     "lists probes with failed runs; every run succeeds here"),
    ("Stale probes (no run for 3 intervals)", r" > on \(", " <= on (",
     "lists probes that have not run for 3 intervals; needs a hung probe"),
    ("Top slab growth (24 h)", r" > 0\)$", " >= -Inf)",
     "lists machines whose Slab grew; it may shrink during a short test"),
    ("Top slab caches by growth (24 h)", r" > 0\)$", " >= -Inf)",
     "lists slab caches that grew; all may shrink during a short test"),
    ("Reboots", r"< 1800", ">= 0",
     "marks boots: uptime below 30 min; the test machine booted earlier (checked below)"),
    ("Hosts by cause", r'cause!="undetermined"', 'cause=~".+"',
     "lists machines whose probes' verdicts name a cause; nothing is slowed here"),
]
# Panels whose targets partition the machines by uptime: one machine is in exactly one band, so
# exactly one of the targets returns data (which one depends on the test machine's uptime).
PARTITIONS = {"Throughput vs uptime: mean worst ratio by uptime band"}
# Metrics the rules read as one of several alternatives: a kernel exports only some of them.
ALTERNATIVES = [
    {"iodrift_vmstat_allocstall_dma", "iodrift_vmstat_allocstall_dma32",
     "iodrift_vmstat_allocstall_normal", "iodrift_vmstat_allocstall_movable",
     "iodrift_vmstat_allocstall_device"},
    # Baselines of random/metadata probes: ops/s per op (bytes/s in older daemons).
    {"iodrift_probe_baseline_bytes_per_second", "iodrift_probe_baseline_ops_per_second"},
]

# promtool's style findings on families named after kernel fields (as in
# tests/e2e/promtool_check_metrics_test.py).
KERNEL_NAMED = re.compile(r"^iodrift_(meminfo|vmstat)_\w+ metric names should (be written in "
                          r"'snake_case' not 'camelCase'|not contain abbreviated units)$")

TEST_ALERT_RULES = """\
# Test only: an alert that always fires, so that the dashboards' ALERTS panels have a row.
groups:
  - name: iodrift-live-test
    rules:
      - alert: IodriftLiveTestAlwaysFiring
        expr: iodrift_build_info
        labels:
          severity: none
        annotations:
          summary: "Always firing (tests/dashboards/live_daemon_test.py)"
"""


def preflight():
    need_root("mkfs.ext4")
    for path in (PROMETHEUS, PROMTOOL):
        if not os.access(path, os.X_OK):
            skip_guaranteed(f"{path} not installed (Debian package 'prometheus')")


preflight()
import prometheus_smoke as smoke  # noqa: E402  (imports lint_dashboards)


def exported_names(text):
    """(family names (# TYPE) | sample names, sample names (_bucket, ...)) in exposition text."""
    families, samples = set(), set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            families.add(line.split()[2])
        elif line and not line.startswith("#"):
            samples.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return families | samples, samples


def write_probe_config(path, file_target, dir_target, array_target=None, sys_root=None):
    probes = [("live-cached", "cached", file_target, "size: 8MiB"),
              # `readers:` curves feed the parallel-readers panels.
              ("live-buffered", "buffered", file_target, "size: 8MiB\n    readers: [1, 2]"),
              ("live-direct", "direct", file_target, "size: 8MiB"),
              ("live-random", "random", file_target, "requests: 32\n    readers: [1, 2]"),
              ("live-metadata", "metadata", dir_target, "files: 16"),
              ("live-memory", "memory", None, "size: 16MiB")]
    if array_target:
        # `members: true` on a loop device that the sys_root tree makes an array of two loop
        # devices feeds the Array / member ratio panel.
        probes.append(("live-array", "buffered", array_target, "size: 4MiB\n    members: true"))
    with open(path, "w") as f:
        f.write("log_level: info\n")
        if sys_root:
            f.write(f"sys_root: {sys_root}\n")
        f.write("probes:\n")
        for name, kind, target, amount in probes:
            f.write(f"  - name: {name}\n    kind: {kind}\n    interval: {PROBE_INTERVAL}\n"
                    f"    timeout: 20s\n    {amount}\n")
            if target:
                f.write(f"    target: {target}\n")
    return probes


def promtool(*args):
    res = subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60)
    return res.returncode, (res.stdout + res.stderr).strip()


def check_live(base, instance, daemon_samples, failures, notes):
    """One round of the Prometheus checks; appends to `failures` (empty: all passed)."""
    active = smoke.api(base, "/api/v1/targets")["data"]["activeTargets"]
    if len(active) != 1 or active[0]["health"] != "up":
        failures.append("target not up: %s" % [(t["scrapeUrl"], t["health"], t.get("lastError"))
                                                for t in active])
    up = smoke.api(base, "/api/v1/query", query='up{instance="%s"}' % instance)
    if [r["value"][1] for r in up["data"]["result"]] != ["1"]:
        failures.append("up{instance=%s} is %s, want 1" % (instance, up["data"]["result"]))

    groups = smoke.api(base, "/api/v1/rules")["data"]["groups"]
    names = {g["name"] for g in groups}
    for want in ("iodrift-probe", "iodrift-memory", "iodrift-fleet-slow", "iodrift-alerts",
                 "iodrift-live-test"):
        if want not in names:
            failures.append("rule group %s not loaded (loaded: %s)" % (want, sorted(names)))
    for g in groups:
        for r in g["rules"]:
            if r.get("health") != "ok":
                failures.append("rule %s (group %s): health %s %s" % (
                    r["name"], g["name"], r.get("health"), r.get("lastError", "")))

    ingested = set(smoke.api(base, "/api/v1/label/__name__/values")["data"])
    missing_in_prom = sorted(n for n in daemon_samples if n.startswith("iodrift_") and n not in ingested)
    if missing_in_prom:
        failures.append("exported by the daemon but not ingested yet: %s" % missing_in_prom[:5])

    relaxed = {title: (pattern, repl, reason) for title, pattern, repl, reason in RELAXED}
    partitions = {}
    for where, title, expr in smoke.dashboard_queries(instance):
        res = smoke.api(base, "/api/v1/query", query=expr)
        if res.get("status") != "success":
            failures.append("%s: %s\n      expr: %s" % (where, res.get("error"), expr))
            continue
        has_data = bool(res["data"]["result"])
        if title in PARTITIONS:
            partitions.setdefault(title, []).append((where, has_data))
            continue
        if has_data or title in smoke.NEEDS_SIBLINGS:  # groups of 5 machines or more only
            continue
        if title in relaxed:
            pattern, repl, reason = relaxed[title]
            loose, n = re.subn(pattern, repl, expr)
            if n != 1:
                failures.append("%s: RELAXED pattern %r not in the expression (update the test)\n"
                                "      expr: %s" % (where, pattern, expr))
                continue
            res = smoke.api(base, "/api/v1/query", query=loose)
            if res.get("status") == "success" and res["data"]["result"]:
                notes.add("%s: empty as expected (%s); relaxed form returns data" % (where, reason))
                continue
            failures.append("%s: no data, not even relaxed\n      expr: %s" % (where, loose))
            continue
        failures.append("%s: no data\n      expr: %s" % (where, expr))
    for title, rows in partitions.items():
        with_data = [where for where, has in rows if has]
        if len(with_data) != 1:
            failures.append("%r: %d of its %d uptime bands return data, want exactly 1: %s" % (
                title, len(with_data), len(rows), with_data))


def main():
    started = time.monotonic()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # a CTest timeout: run the cleanup below
    scratch = Scratch("live-dash")
    work = scratch.dir
    prom = None
    failures = []
    try:
        mnt = scratch.mount(scratch.loop(96 << 20, "fs"), "mnt")
        data = os.path.join(mnt, "data.bin")
        with open(data, "wb") as f:
            f.write(os.urandom(24 << 20))
            os.fsync(f.fileno())
        probe_dir = os.path.join(mnt, "probes")
        os.makedirs(probe_dir)
        # An "md array" for the members panel: a loop device whose slaves are two other loop
        # devices in a sysfs tree that mirrors the real /sys otherwise (tests/e2e/array_members).
        array = scratch.loop(16 << 20, "array", fill_random=True, mkfs=False)
        members = sorted(os.path.basename(scratch.loop(16 << 20, m, fill_random=True, mkfs=False))
                         for m in ("member1", "member2"))
        sys_root = build_array_tree(scratch.path("sys"), array, members, mirror="/sys")
        config = os.path.join(work, "iodrift.yaml")
        probes = write_probe_config(config, data, probe_dir, array, sys_root)

        with Daemon("--config", config) as daemon:
            instance = "127.0.0.1:%d" % daemon.port
            prom_dir = os.path.join(work, "prometheus")
            os.makedirs(prom_dir)
            smoke.write_config(prom_dir, [instance])
            cfg_path = os.path.join(prom_dir, "prometheus.yml")
            with open(os.path.join(prom_dir, "iodrift-live-test.rules.yml"), "w") as f:
                f.write(TEST_ALERT_RULES)
            with open(cfg_path) as f:
                cfg = f.read()
            cfg, n = re.subn(r"(?m)^rule_files:\n", "rule_files:\n  - iodrift-live-test.rules.yml\n", cfg)
            if n != 1:
                fail("prometheus.yml: no `rule_files:` line to extend")
            with open(cfg_path, "w") as f:
                f.write(cfg)

            # promtool on exactly what this Prometheus runs.
            rc, out = promtool("check", "config", "--lint=all", cfg_path)
            if rc != 0:
                failures.append("promtool check config %s:\n%s" % (cfg_path, out))
            rule_files = sorted(os.path.join(prom_dir, p) for p in os.listdir(prom_dir)
                                if p.endswith(".rules.yml"))
            rc, out = promtool("check", "rules", "--lint=all", "--lint-fatal", *rule_files)
            if rc != 0:
                failures.append("promtool check rules:\n%s" % out)

            port = smoke.free_port()
            base = "http://127.0.0.1:%d" % port
            log_path = os.path.join(prom_dir, "prometheus.log")
            log = open(log_path, "w")
            prom = subprocess.Popen(
                [PROMETHEUS, "--config.file=" + cfg_path,
                 "--storage.tsdb.path=" + os.path.join(prom_dir, "data"),
                 "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT, preexec_fn=smoke._die_with_parent)
            why = smoke.wait_ready(base + "/-/ready", [prom], 30)
            if why:
                with open(log_path) as f:
                    fail("prometheus did not become ready:\n" + f.read()[-3000:])
            ready = time.monotonic()

            # Every metric the dashboards and rules read is exported by the daemon. Poll: the
            # probe families appear after the first runs, correlations after 8.
            used = smoke.used_metric_names()
            deadline = ready + DEADLINE_SECONDS
            while True:
                round_failures, notes = [], set()
                with urllib.request.urlopen(daemon.url("/metrics"), timeout=10) as r:
                    exposition = r.read().decode()
                daemon_names, daemon_samples = exported_names(exposition)
                missing = used - daemon_names
                for group in ALTERNATIVES:
                    if group & daemon_names:
                        missing -= group
                for name in sorted(missing):
                    round_failures.append("metric %s is read by the dashboards or rules but iodriftd "
                                          "does not export it" % name)
                check_live(base, instance, daemon_samples, round_failures, notes)
                if not round_failures or time.monotonic() > deadline:
                    break
                time.sleep(3)
            failures += round_failures
            # The scrape with every probe family in it passes promtool's lint (the e2e test of
            # that runs without probes), apart from the kernel-named families docs/metrics.md fixes.
            res = subprocess.run([PROMTOOL, "check", "metrics"], input=exposition,
                                 capture_output=True, text=True, timeout=60)
            findings = [l for l in (res.stdout + res.stderr).splitlines()
                        if l.strip() and not KERNEL_NAMED.match(l)]
            if findings or res.returncode not in (0, 3):
                failures.append("promtool check metrics on the daemon's scrape (exit %d):\n%s"
                                % (res.returncode, "\n".join(findings[:20])))
            for note in sorted(notes):
                print("note: " + note)
            with open("/proc/uptime") as f:
                if float(f.read().split()[0]) < 1800:
                    print("note: machine booted < 30 min ago: the Reboots annotation has real data")
            print("checked %d dashboard expressions, %d probes; checks ended after %.0f s of "
                  "Prometheus (test so far %.0f s)" % (len(smoke.dashboard_queries(instance)),
                                                       len(probes), time.monotonic() - ready,
                                                       time.monotonic() - started))
            if daemon.proc.poll() is not None:
                failures.append("iodriftd exited: %s" % daemon.stderr()[-2000:])
    finally:
        if prom is not None:
            prom.terminate()
            try:
                prom.wait(timeout=10)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait()
        scratch.close()
    for f in failures:
        print("error: " + f)
    if failures:
        fail("%d problem(s) with the dashboards and rules against a live iodriftd"
             % len(failures))
    print("ok: promtool clean, target up, rules healthy, every dashboard expression returns data "
          "(%.0f s)" % (time.monotonic() - started))


if __name__ == "__main__":
    main()
