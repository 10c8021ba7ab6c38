#!/usr/bin/env python3
"""Sibling outliers and fleet-wide shifts on a real Prometheus with 50 machines.

A small HTTP server (127.0.0.1:0) exposes iodrift_probe_baseline_ratio for 50 simulated machines
of one hardware class (`instance="host-NN:9723", hwclass="r650"`, one probe `sda-buffered`) in one
scrape; the real `prometheus` (Debian package) scrapes it with honor_labels, so each series keeps
its machine's instance label, and evaluates the shipped rule files
(dashboards/prometheus/*.rules.yml). Only the test's copies change: scrape and evaluation every
second, and every `for:`/`keep_firing_for:` of N minutes becomes N/10 seconds (at least 1 s):
30m -> 3s, 15m -> 1s.

  Phase 1: machines 7, 23 and 41 fall to half the group's ratio. Polled until
           IodriftSiblingOutlier fires for exactly those three; at no poll may it fire for another
           machine, and IodriftFleetShift must not be pending or firing.
  Phase 2: all 50 fall to half their figure together. Polled until IodriftFleetShift fires once
           (for the group) and no IodriftSiblingOutlier is pending or firing.

Polls the Prometheus API (/api/v1/alerts) for conditions, no fixed sleeps. Skips (77) without
/usr/bin/prometheus. About 15 s.
"""
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

import fleet_test as fleet  # Procs, api, server_ready, wait_until, tail, PROMETHEUS
from iodrift_test.net import free_port, serve_metrics
from iodrift_test.skip import fail, skip_guaranteed

N = 50
OUTLIERS = (7, 23, 41)
HWCLASS = "r650"
DEADLINE = 60  # s per phase


def instance(i):
    return "host-%02d:9723" % i


class Fleet:
    """The simulated machines' ratios; served as one exposition with an instance label each."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ratios = [0.90 + 0.002 * i for i in range(N)]

    def set(self, ratios):
        with self.lock:
            self.ratios = list(ratios)

    def exposition(self):
        with self.lock:
            ratios = list(self.ratios)
        lines = ["# TYPE iodrift_probe_baseline_ratio gauge"]
        for i, r in enumerate(ratios):
            lines.append('iodrift_probe_baseline_ratio{instance="%s",hwclass="%s",probe="sda-buffered",'
                         'kind="buffered",target="/dev/sda"} %g' % (instance(i), HWCLASS, r))
        return ("\n".join(lines) + "\n").encode()


def scaled_rules(tmp):
    """Copies of the shipped rule files with every for/keep_firing_for of N minutes as N/10 s."""
    names = []
    for name in sorted(os.listdir(fleet.RULES_DIR)):
        if not name.endswith(".rules.yml"):
            continue
        with open(os.path.join(fleet.RULES_DIR, name)) as f:
            text = f.read()
        text = re.sub(r"\b(for|keep_firing_for): (\d+)m\b",
                      lambda m: "%s: %ds" % (m.group(1), max(1, int(m.group(2)) // 10)), text)
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text)
        names.append(name)
    return names


def write_config(tmp, port):
    rules = "".join("  - %s\n" % n for n in scaled_rules(tmp))
    with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "rule_files:\n%s"
                "scrape_configs:\n  - job_name: iodrift\n    honor_labels: true\n"
                "    scrape_timeout: 1s\n    static_configs:\n"
                "      - targets: ['127.0.0.1:%d']\n" % (rules, port))


def alerts(base):
    """{alertname: {state: [labels]}} of the alerts Prometheus holds now."""
    res = fleet.api(base, "/api/v1/alerts")
    if res.get("status") != "success":
        fail("/api/v1/alerts: %s" % res)
    out = {}
    for a in res["data"]["alerts"]:
        out.setdefault(a["labels"]["alertname"], {}).setdefault(a["state"], []).append(a["labels"])
    return out


def main():
    if not os.access(fleet.PROMETHEUS, os.X_OK):
        skip_guaranteed("%s not installed (Debian package 'prometheus')" % fleet.PROMETHEUS)
    tmp = tempfile.mkdtemp(prefix="iodrift-siblings-")
    procs = fleet.Procs()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # run the clean-up below
    start = time.monotonic()
    machines = Fleet()
    srv = serve_metrics(machines.exposition)
    try:
        write_config(tmp, srv.server_address[1])
        port = free_port()
        base = "http://127.0.0.1:%d" % port
        procs.start([fleet.PROMETHEUS, "--config.file=" + os.path.join(tmp, "prometheus.yml"),
                     "--storage.tsdb.path=" + os.path.join(tmp, "data"),
                     "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
                    os.path.join(tmp, "prometheus.log"))
        fleet.server_ready(base + "/-/ready", procs, "Prometheus")

        def group_seen():
            res, err = fleet.query(base, 'iodrift:probe_baseline_ratio:sibling_count'
                                   '{sibling_group="%s"} == %d' % (HWCLASS, N))
            return None if res else "sibling count %s" % (err or "not %d yet" % N)
        fleet.wait_until("the group of %d siblings" % N, group_seen,
                         time.monotonic() + DEADLINE, procs)

        # Phase 1: three machines drift.
        machines.set([0.5 if i in OUTLIERS else 0.90 + 0.002 * i for i in range(N)])
        want = {instance(i) for i in OUTLIERS}

        def three_outliers():
            a = alerts(base)
            firing = {x["instance"] for x in a.get("IodriftSiblingOutlier", {}).get("firing", [])}
            if firing - want:
                fail("IodriftSiblingOutlier fires for machines that did not drift: %s"
                     % sorted(firing - want))
            if a.get("IodriftFleetShift"):
                fail("IodriftFleetShift with 3 of %d machines drifted: %s"
                     % (N, a["IodriftFleetShift"]))
            return None if firing == want else "firing for %s" % sorted(firing)
        fleet.wait_until("IodriftSiblingOutlier for exactly %s" % sorted(want), three_outliers,
                         time.monotonic() + DEADLINE, procs)
        print("siblings: phase 1: IodriftSiblingOutlier fires for exactly %s, no fleet alert "
              "(%.0f s after start)" % (sorted(want), time.monotonic() - start))

        # Phase 2: the whole group shifts.
        machines.set([(0.90 + 0.002 * i) / 2 for i in range(N)])

        def fleet_shift():
            a = alerts(base)
            shift = a.get("IodriftFleetShift", {}).get("firing", [])
            outliers = a.get("IodriftSiblingOutlier", {})
            if len(shift) > 1:
                fail("more than one IodriftFleetShift: %s" % shift)
            if shift and not outliers:
                if shift[0].get("sibling_group") != HWCLASS or "instance" in shift[0]:
                    fail("IodriftFleetShift labels: %s" % shift[0])
                return None
            return "fleet alert %s, outlier alerts %s" % (shift, outliers)
        fleet.wait_until("one IodriftFleetShift and no IodriftSiblingOutlier", fleet_shift,
                         time.monotonic() + DEADLINE, procs)
        print("siblings: phase 2: one IodriftFleetShift, no IodriftSiblingOutlier "
              "(%.0f s after start)" % (time.monotonic() - start))
    except BaseException:
        print("--- prometheus.log ---\n%s" % fleet.tail(os.path.join(tmp, "prometheus.log")))
        raise
    finally:
        procs.stop()
        srv.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    print("siblings: passed in %.0f s" % (time.monotonic() - start))


if __name__ == "__main__":
    main()
