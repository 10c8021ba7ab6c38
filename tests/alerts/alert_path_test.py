#!/usr/bin/env python3
"""The alert path end to end, with real parts.

iodriftd -> Prometheus (the shipped rules) -> Alertmanager, and a real slowdown of a real device:

  1. a 64 MiB loop device (`losetup --direct-io=on`, random data, image in tmpfs) and iodriftd (--dbus none,
     127.0.0.1:0) with a `buffered` and a `direct` probe on it (every 2 s, 8 MiB); the daemon is
     moved into a block cgroup of its own (cgroup v1 blkio, or v2 with the io controller);
  2. a real `prometheus` (Debian package `prometheus`; scrape and evaluation every 1 s) with a
     copy of dashboards/prometheus/*.rules.yml and a real `prometheus-alertmanager` (Debian package
     of that name) on loopback, Prometheus sending to it;
  3. once both probes have a baseline (5 clean runs), Prometheus has their ratios and the
     regression alert has been quiet for QUIET s, the daemon's reads of the loop device are
     throttled to THROTTLE_BPS (v1 `blkio.throttle.read_bps_device` / v2 `io.max rbps=` on the loop device's MAJ:MIN, for
     the daemon's cgroup only: the loop device is what the daemon reads);
  4. asserted: IodriftThroughputRegression is RECEIVED by Alertmanager (GET /api/v2/alerts) for
     both probes within FIRE_DEADLINE s, with labels probe/kind/target and the annotations ratio
     (< 0.7 and not below the probe's current ratio: the window's best), cause (a cause
     name from the daemon's iodrift_probe_verdict), runbook_url (a docs/dashboards-alerts.md anchor that
     exists) and dashboard_uid (a dashboard of dashboards/);
  5. the throttle is lifted; asserted: the alert resolves at Prometheus and leaves Alertmanager's
     active alerts within RESOLVE_DEADLINE s.

The test copy of the rules differs from the shipped file ONLY in IodriftThroughputRegression's
durations (SHORTENED below; each substitution must match the expected number of times or the test
fails, so a change of the shipped rule is noticed): window 1h -> 20s (T2), uptime guard 3600 s -> 20 s (T4),
`for` 15m -> 5s (T5). Thresholds (T1 0.7, T3 >= 3 runs) are the shipped ones. Evaluation: the
copy of prometheus.yml scrapes and evaluates every 1 s (prometheus_smoke.write_config, which also
evaluates the day-scale recording group every 1 s instead of 5m), `--rules.alert.resend-delay=1s`.

The timeline (seconds from the throttle) is printed on one line starting with `timeline:`.

Needs root (losetup, cgroups), /usr/bin/prometheus, /usr/bin/promtool and
/usr/bin/prometheus-alertmanager; exits 77 (CTest: skipped) with the reason otherwise.
Stdlib only. Run as root: IODRIFTD=build/iodriftd python3 tests/alerts/alert_path_test.py
"""
import glob
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
import urllib.request

from iodrift_test.daemon import Daemon
from iodrift_test.prom import parse_metrics
from iodrift_test.skip import fail, skip, skip_guaranteed

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
ALERT = "IodriftThroughputRegression"
PROBES = [("alert-buffered", "buffered"), ("alert-direct", "direct")]
THROTTLE_BPS = 512 << 10        # 512 KiB/s: a run reads one 1 MiB chunk in ~2 s, far below any
                                # baseline seen (>= 4 MB/s on a loop device at load 16)
BASELINE_DEADLINE = 180         # s from daemon start until both baselines exist
QUIET = 25                      # s without the alert before the throttle (> the 20 s test window)
QUIET_DEADLINE = 240
FIRE_DEADLINE = 150             # s from the throttle until Alertmanager has both alerts
RESOLVE_DEADLINE = 120          # s from lifting the throttle until both are gone from it
THRESHOLD = 0.7                 # T1 in iodrift-alerts.rules.yml

# (regex, replacement, what) applied to the test copy of iodrift-alerts.rules.yml, inside the
# IodriftThroughputRegression rule only; each must match exactly `count` times.
SHORTENED = [
    (r"\[1h\]", "[20s]", 4, "T2 window 1h -> 20s (also the fleet-shift suppression's)"),
    (r"iodrift_uptime_seconds > 3600", "iodrift_uptime_seconds > 20", 1, "T4 uptime 3600 s -> 20 s"),
    (r"for: 15m", "for: 5s", 1, "T5 for 15m -> 5s"),
]


def preflight():
    if os.geteuid() != 0:
        skip_guaranteed("needs root for losetup and the block cgroup")
    for path, pkg in ((PROMETHEUS, "prometheus"), (PROMTOOL, "prometheus"),
                      (ALERTMANAGER, "prometheus-alertmanager")):
        if not os.access(path, os.X_OK):
            skip_guaranteed(f"{path} not installed (Debian package '{pkg}')")
    if not shutil.which("losetup"):
        skip_guaranteed("losetup not installed")


preflight()
# The real-Prometheus helpers of the dashboards tests (CTest puts tests/dashboards on PYTHONPATH).
import prometheus_smoke as smoke  # noqa: E402


class BlockCgroup:
    """A cgroup of its own for the daemon, with a read-bandwidth limit on one device."""

    def __init__(self, name):
        self.path, self.v2, self.parent = None, False, None
        v1 = "/sys/fs/cgroup/blkio"
        mounts = open("/proc/mounts").read().split("\n")
        v1_mount = next((m.split()[1] for m in mounts
                         if m.split()[2:3] == ["cgroup"] and "blkio" in m.split()[3].split(",")), None)
        if v1_mount is None and os.path.exists(os.path.join(v1, "blkio.throttle.read_bps_device")):
            v1_mount = v1
        if v1_mount and os.path.exists(os.path.join(v1_mount, "blkio.throttle.read_bps_device")):
            self.parent = v1_mount
        else:
            for m in mounts:
                f = m.split()
                if len(f) > 2 and f[2] == "cgroup2":
                    try:
                        ctl = open(os.path.join(f[1], "cgroup.controllers")).read().split()
                    except OSError:
                        continue
                    if "io" in ctl:
                        self.parent, self.v2 = f[1], True
                        break
        if self.parent is None:
            skip("no block cgroup: neither a v1 blkio hierarchy with throttling nor a "
                 "cgroup2 mount with the io controller")
        if self.v2:
            try:
                with open(os.path.join(self.parent, "cgroup.subtree_control"), "w") as f:
                    f.write("+io")
            except OSError as e:
                skip(f"cannot enable the io controller in {self.parent}: {e}")
        self.path = os.path.join(self.parent, name)
        os.mkdir(self.path)

    def add(self, pid):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def limit_read_bps(self, majmin, bps):
        """bps None lifts the limit."""
        if self.v2:
            name, value = "io.max", "%s rbps=%s" % (majmin, "max" if bps is None else bps)
        else:
            name, value = "blkio.throttle.read_bps_device", "%s %d" % (majmin, bps or 0)
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def remove(self):
        if not self.path or not os.path.isdir(self.path):
            return
        try:
            pids = open(os.path.join(self.path, "cgroup.procs")).read().split()
            for pid in pids:
                with open(os.path.join(self.parent, "cgroup.procs"), "w") as f:
                    f.write(pid)
        except OSError:
            pass
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)


def http_json(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def write_test_rules(prom_dir):
    """Shortens IodriftThroughputRegression's durations in the test copy (see SHORTENED)."""
    path = os.path.join(prom_dir, "iodrift-alerts.rules.yml")
    with open(path) as f:
        text = f.read()
    m = re.search(r"(?ms)^      - alert: %s\n.*?(?=^      - alert: |\Z)" % ALERT, text)
    if not m:
        fail(f"{ALERT} not found in the rules copy")
    rule = m.group(0)
    for pattern, repl, count, what in SHORTENED:
        rule, n = re.subn(pattern, repl, rule)
        if n != count:
            fail(f"test copy of the rules: {what}: {pattern!r} matched {n} times, want "
                 f"{count} (the shipped rule changed: update SHORTENED)")
    with open(path, "w") as f:
        f.write(text[:m.start()] + rule + text[m.end():])
    return path


def write_alertmanager_config(path):
    with open(path, "w") as f:
        f.write("route:\n  receiver: test\n  group_by: [alertname, probe]\n"
                "  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 1h\n"
                "receivers:\n  - name: test\n")


RUNBOOKS = "docs/dashboards-alerts.md"


def runbook_anchors():
    """GitHub's anchors of the runbook file's headings (lower case, punctuation dropped, spaces -> -)."""
    anchors = set()
    with open(os.path.join(REPO, RUNBOOKS)) as f:
        for line in f:
            m = re.match(r"^#{1,6} (.*)", line)
            if m:
                a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
                anchors.add(a)
    return anchors


def dashboard_uids():
    uids = set()
    for path in glob.glob(os.path.join(REPO, "dashboards", "*.json")):
        with open(path) as f:
            uids.add(json.load(f).get("uid"))
    return uids


def print_timeline(marks):
    print("timeline: (s from throttle start) " + ", ".join(
        "%s %.1f" % (k, v) for k, v in sorted(marks.items(), key=lambda kv: kv[1])))


def start(cmd, log_path):
    log = open(log_path, "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                            preexec_fn=smoke._die_with_parent)


def stop(proc):
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def tail(path, n=3000):
    try:
        with open(path) as f:
            return f.read()[-n:]
    except OSError:
        return ""


def main():
    t_start = time.monotonic()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # a CTest timeout: run the cleanup below
    work = tempfile.mkdtemp(prefix="iodrift-alert-path-", dir="/var/tmp")
    # The device image lives in memory (tmpfs) so that the unthrottled figures are steady on a
    # busy machine (a disk-backed image read cold, then from the host's cache, moved the direct
    # probe's ratio to 8x its baseline); the throttle acts on the loop device, whatever backs it.
    img_dir = tempfile.mkdtemp(prefix="iodrift-alert-path-", dir="/dev/shm") \
        if os.path.isdir("/dev/shm") else work
    loop, cg, prom, am = None, None, None, None
    try:
        img = os.path.join(img_dir, "disk.img")
        with open(img, "wb") as f:
            for _ in range(64):
                f.write(os.urandom(1 << 20))
            os.fsync(f.fileno())
        res = subprocess.run(["losetup", "--direct-io=on", "--show", "-f", img],
                             capture_output=True, text=True)
        if res.returncode != 0:
            skip_guaranteed("losetup failed: " + res.stderr.strip())
        loop = res.stdout.strip()
        with open("/sys/block/%s/dev" % os.path.basename(loop)) as f:
            majmin = f.read().strip()
        cg = BlockCgroup("iodrift-alert-path-%d" % os.getpid())

        config = os.path.join(work, "iodrift.yaml")
        with open(config, "w") as f:
            f.write("log_level: info\nprobes:\n")
            for name, kind in PROBES:
                f.write(f"  - name: {name}\n    kind: {kind}\n    target: {loop}\n"
                        f"    interval: 2s\n    size: 8MiB\n    timeout: 20s\n")

        with Daemon("--config", config) as daemon:
            cg.add(daemon.proc.pid)
            instance = "127.0.0.1:%d" % daemon.port
            prom_dir = os.path.join(work, "prometheus")
            os.makedirs(prom_dir)
            smoke.write_config(prom_dir, [instance])
            rules_copy = write_test_rules(prom_dir)
            am_port = smoke.free_port()
            cfg_path = os.path.join(prom_dir, "prometheus.yml")
            with open(cfg_path) as f:
                cfg = f.read()
            cfg += ("\nalerting:\n  alertmanagers:\n    - static_configs:\n"
                    "        - targets: [\"127.0.0.1:%d\"]\n" % am_port)
            with open(cfg_path, "w") as f:
                f.write(cfg)
            res = subprocess.run([PROMTOOL, "check", "config", cfg_path], capture_output=True,
                                 text=True, timeout=60)
            if res.returncode != 0:
                fail("promtool check config on the test copy:\n" + res.stdout + res.stderr)
            print("test copy of the rules: %s (%s)" % (rules_copy, "; ".join(w for *_, w in SHORTENED)))

            am_dir = os.path.join(work, "alertmanager")
            os.makedirs(am_dir)
            am_cfg = os.path.join(am_dir, "alertmanager.yml")
            write_alertmanager_config(am_cfg)
            am_base = "http://127.0.0.1:%d" % am_port
            am = start([ALERTMANAGER, "--config.file=" + am_cfg,
                        "--storage.path=" + os.path.join(am_dir, "data"),
                        "--web.listen-address=127.0.0.1:%d" % am_port,
                        "--cluster.listen-address=", "--log.level=warn"],
                       os.path.join(am_dir, "alertmanager.log"))
            why = smoke.wait_ready(am_base + "/-/ready", [am], 30)
            if why:
                fail("alertmanager did not become ready:\n" +
                     tail(os.path.join(am_dir, "alertmanager.log")))

            prom_port = smoke.free_port()
            base = "http://127.0.0.1:%d" % prom_port
            prom_log = os.path.join(prom_dir, "prometheus.log")
            prom = start([PROMETHEUS, "--config.file=" + cfg_path,
                          "--storage.tsdb.path=" + os.path.join(prom_dir, "data"),
                          "--web.listen-address=127.0.0.1:%d" % prom_port,
                          "--rules.alert.resend-delay=1s", "--log.level=warn"], prom_log)
            why = smoke.wait_ready(base + "/-/ready", [prom], 30)
            if why:
                fail("prometheus did not become ready:\n" + tail(prom_log))

            names = [n for n, _ in PROBES]

            def ratios():
                r = smoke.api(base, "/api/v1/query", query='iodrift_probe_baseline_ratio{instance="%s"}'
                              % instance)
                return {s["metric"]["probe"]: float(s["value"][1]) for s in r["data"]["result"]}

            def daemon_runs():
                """{probe: (last run's end, its ratio)} from the daemon's own /metrics."""
                _, _, text = daemon.get("/metrics")
                m = parse_metrics(text)
                out = {}
                for n in names:
                    ts = [v for k, v in m.items() if k.startswith(
                        "iodrift_probe_last_run_timestamp_seconds{") and 'probe="%s"' % n in k]
                    ra = [v for k, v in m.items() if k.startswith(
                        "iodrift_probe_baseline_ratio{") and 'probe="%s"' % n in k]
                    if ts and ra:
                        out[n] = (ts[0], ra[0])
                return out

            def prom_alerts():
                r = smoke.api(base, "/api/v1/alerts")
                return {a["labels"].get("probe"): a for a in r["data"]["alerts"]
                        if a["labels"].get("alertname") == ALERT}

            def am_alerts():
                return {a["labels"].get("probe"): a for a in http_json(am_base + "/api/v2/alerts")
                        if a["labels"].get("alertname") == ALERT}

            def check_alive():
                for p, what, log in ((daemon.proc, "iodriftd", daemon.log_path),
                                     (prom, "prometheus", prom_log),
                                     (am, "alertmanager", os.path.join(am_dir, "alertmanager.log"))):
                    if p.poll() is not None:
                        fail(f"{what} exited ({p.returncode}):\n" + tail(log))

            # Baselines: both probes have a ratio at Prometheus.
            deadline = time.monotonic() + BASELINE_DEADLINE
            while True:
                check_alive()
                r = ratios()
                if all(n in r for n in names):
                    break
                if time.monotonic() > deadline:
                    _, _, text = daemon.get("/metrics")
                    fail("no baseline for both probes within %d s (ratios %s):\n%s" % (
                        BASELINE_DEADLINE, r, "\n".join(l for l in text.splitlines()
                                                        if "baseline" in l or "suspect" in l)))
                time.sleep(1)
            # Quiet before the slowdown: QUIET s in a row without the alert pending or firing at
            # Prometheus or active at Alertmanager, so that what follows is caused by the throttle.
            # (On a machine with every core busy the unthrottled figures scatter - 0.4x to 20x the
            # baseline was seen at load 16 - and a short test window can go pending by chance.)
            deadline = time.monotonic() + QUIET_DEADLINE
            quiet_since = time.monotonic()
            while time.monotonic() - quiet_since < QUIET:
                check_alive()
                if prom_alerts() or am_alerts():
                    quiet_since = time.monotonic()
                if time.monotonic() > deadline:
                    fail("%s never quiet for %d s before any slowdown (ratios %s, "
                         "Prometheus %s)" % (ALERT, QUIET, ratios(), prom_alerts()))
                time.sleep(1)
            print("baselines formed and quiet, ratios %s after %.0f s" % (
                {k: round(v, 2) for k, v in ratios().items()}, time.monotonic() - t_start))

            # The slowdown.
            cg.limit_read_bps(majmin, THROTTLE_BPS)
            t0 = time.monotonic()
            t0_wall = time.time()
            marks = {}
            deadline = t0 + FIRE_DEADLINE
            received = {}
            while len(received) < len(names):
                check_alive()
                now = time.monotonic() - t0
                r = ratios()
                for probe, (ts, ratio) in daemon_runs().items():
                    if ts > t0_wall and ratio < THRESHOLD:
                        marks.setdefault("first_slow_run:" + probe, ts - t0_wall)
                for probe, a in prom_alerts().items():
                    marks.setdefault("pending:" + probe, now)
                    if a["state"] == "firing":
                        marks.setdefault("firing:" + probe, now)
                for probe, a in am_alerts().items():
                    if probe in names and probe not in received and a["status"]["state"] == "active":
                        marks["received:" + probe] = now
                        received[probe] = a
                if time.monotonic() > deadline:
                    fail("Alertmanager did not receive %s for %s within %d s of the throttle "
                         "(ratios %s, Prometheus alerts %s, marks %s)" % (
                                     ALERT, sorted(set(names) - set(received)), FIRE_DEADLINE, r,
                                     {k: v["state"] for k, v in prom_alerts().items()}, marks))
                time.sleep(0.5)

            print_timeline(marks)
            anchors, uids = runbook_anchors(), dashboard_uids()
            failures = []
            held = ratios()
            for name, kind in PROBES:
                a = received[name]
                lab, ann = a["labels"], a["annotations"]
                for key, want in (("probe", name), ("kind", kind), ("target", loop),
                                  ("instance", instance), ("severity", "warning")):
                    if lab.get(key) != want:
                        failures.append("%s: label %s=%r, want %r" % (name, key, lab.get(key), want))
                try:
                    ratio = float(ann.get("ratio", "nan"))
                except ValueError:
                    ratio = float("nan")
                if not 0 < ratio < THRESHOLD:
                    failures.append("%s: annotation ratio=%r, want a number in (0, %.2f)"
                                    % (name, ann.get("ratio"), THRESHOLD))
                elif name in held and ratio < held[name] - 0.001:
                    # The annotation is the best ratio of the window, so never below the last one.
                    failures.append("%s: annotation ratio %.3f is below the ratio Prometheus holds "
                                    "now (%.3f): not the window's best" % (name, ratio, held[name]))
                # The daemon's verdict, looked up from iodrift_probe_verdict by the annotation.
                if not re.fullmatch(r"[a-z_]+", ann.get("cause", "")) or ann["cause"] == "unknown":
                    failures.append("%s: annotation cause=%r, want the cause of the daemon's "
                                    "iodrift_probe_verdict" % (name, ann.get("cause")))
                url = ann.get("runbook_url", "")
                m = re.match(r"^https://github\.com/iodrift/iodrift/blob/main/"
                             + re.escape(RUNBOOKS) + "#(.+)$", url)
                if not m or m.group(1) not in anchors:
                    failures.append("%s: runbook_url %r is not an anchor of %s that exists"
                                    % (name, url, RUNBOOKS))
                if ann.get("dashboard_uid") not in uids:
                    failures.append("%s: dashboard_uid %r is not a dashboard's uid (%s)"
                                    % (name, ann.get("dashboard_uid"), sorted(uids)))
                if name not in ann.get("summary", "") or loop not in ann.get("description", ""):
                    failures.append("%s: summary/description do not name the probe and target: %s"
                                    % (name, ann))
            if failures:
                for f in failures:
                    print("error: " + f)
                fail("%d problem(s) with the alert as Alertmanager received it" % len(failures))
            print("received by Alertmanager: " + json.dumps(
                {n: {"labels": received[n]["labels"], "annotations": {
                    k: received[n]["annotations"][k]
                    for k in ("ratio", "cause", "runbook_url", "dashboard_uid")}}
                 for n in names}, sort_keys=True))

            # Lift the throttle: the alert resolves.
            cg.limit_read_bps(majmin, None)
            t1 = time.monotonic()
            marks["lifted"] = t1 - t0
            deadline = t1 + RESOLVE_DEADLINE
            while True:
                check_alive()
                now = time.monotonic() - t0
                pa, aa = prom_alerts(), am_alerts()
                for n in names:
                    if n not in pa:
                        marks.setdefault("resolved_prometheus:" + n, now)
                    if n not in aa or aa[n]["status"]["state"] != "active":
                        marks.setdefault("resolved_alertmanager:" + n, now)
                if all("resolved_alertmanager:" + n in marks and "resolved_prometheus:" + n in marks
                       for n in names):
                    break
                if time.monotonic() > deadline:
                    fail("%s still active %d s after the throttle was lifted: Prometheus %s, "
                         "Alertmanager %s" % (ALERT, RESOLVE_DEADLINE,
                                              {k: v["state"] for k, v in pa.items()},
                                              sorted(aa)))
                time.sleep(0.5)
            print_timeline(marks)
    finally:
        stop(prom)
        stop(am)
        if cg is not None:
            cg.remove()
        if loop:
            subprocess.run(["losetup", "-d", loop], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(img_dir, ignore_errors=True)
    print("ok: %s received by Alertmanager for %s and resolved (%.0f s)" % (
        ALERT, ", ".join(n for n, _ in PROBES), time.monotonic() - t_start))


if __name__ == "__main__":
    main()
