#!/usr/bin/env python3
"""Resident memory of iodriftd (and node_exporter) after N scrapes.

Not a timed test. Starts each configuration on loopback, waits for the probes' first cycle when
it has probes, scrapes /metrics N times (default 1000, alternating plain and gzip, one
keep-alive connection), and prints VmRSS, its anonymous and file-backed parts, VmHWM, Pss and
Private (smaps_rollup) and the thread count. Configurations:

  no-probes        iodriftd --config tests/e2e/no-probes.yaml
  default          iodriftd (the embedded default: 6 probes, on a temp state dir)
  node_exporter    prometheus-node-exporter with meminfo, vmstat, slabinfo, pressure, buddyinfo
                   (as bench_vs_node_exporter.sh)

  IODRIFT_BENCH=1 python3 tests/bench/daemon_rss.py [--iodriftd build/bin/iodriftd]
      [--scrapes 1000] [--only no-probes,default,node_exporter]
"""
import argparse
import http.client
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77
MIB = 1 << 20


def status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            parts = rest.split()
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                out[key] = int(parts[0]) * 1024
            elif key == "Threads":
                out[key] = int(parts[0])
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("Pss", "Private_Clean", "Private_Dirty"):
                    out[key] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    out["Private"] = out.pop("Private_Clean", 0) + out.pop("Private_Dirty", 0)
    return out


def scrape(conn, gzip):
    conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"} if gzip else {})
    r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        raise SystemExit(f"scrape answered {r.status}")
    return body


def probe_runs(conn):
    text = scrape(conn, False).decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("iodrift_probe_runs_total{"))


def measure(name, cmd, port_of, scrapes, wait_runs):
    work = tempfile.mkdtemp(prefix="iodrift-rss-")
    log_path = os.path.join(work, "log")
    logf = open(log_path, "w+")
    proc = subprocess.Popen([c.replace("{work}", work) for c in cmd],
                            stdout=subprocess.DEVNULL, stderr=logf)
    try:
        port = None
        deadline = time.monotonic() + 30
        while port is None and time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"{name} exited: {open(log_path).read()[-2000:]}")
            port = port_of(open(log_path).read())
            time.sleep(0.1)
        if port is None:
            raise SystemExit(f"{name}: no port in its log")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        if wait_runs:
            deadline = time.monotonic() + 180
            while probe_runs(conn) < wait_runs:
                if time.monotonic() > deadline:
                    raise SystemExit(f"{name}: probes did not complete a cycle in 180 s")
                time.sleep(1)
        for i in range(scrapes):
            scrape(conn, gzip=bool(i % 2))
        time.sleep(0.5)
        return status(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iodriftd", default=os.environ.get("IODRIFTD",
                                                         os.path.join(ROOT, "build/bin/iodriftd")))
    ap.add_argument("--node-exporter", default="/usr/bin/prometheus-node-exporter")
    ap.add_argument("--scrapes", type=int, default=1000)
    ap.add_argument("--only", default="no-probes,default,node_exporter")
    args = ap.parse_args()
    if os.environ.get("IODRIFT_BENCH") != "1":
        print("SKIPPED: a benchmark, not a test: set IODRIFT_BENCH=1 to run it")
        return SKIP
    if not os.path.exists(args.iodriftd):
        print(f"SKIPPED: no iodriftd at {args.iodriftd}")
        return SKIP

    def iodrift_port(log):
        m = re.search(r"serving metrics on http://[^ ]*:(\d+)/metrics", log)
        return int(m.group(1)) if m else None

    base = [args.iodriftd, "--listen", "127.0.0.1:0", "--dbus", "none", "--state-dir", "{work}"]
    configs = {
        "no-probes": (base + ["--config", os.path.join(ROOT, "tests/e2e/no-probes.yaml")],
                      iodrift_port, 0),
        "default": (base, iodrift_port, 6),
    }
    if os.path.exists(args.node_exporter):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        ne_port = s.getsockname()[1]
        s.close()
        configs["node_exporter"] = (
            [args.node_exporter, "--collector.disable-defaults", "--collector.meminfo",
             "--collector.vmstat", "--collector.slabinfo", "--collector.pressure",
             "--collector.buddyinfo", f"--web.listen-address=127.0.0.1:{ne_port}"],
            lambda log: ne_port if "Listening on" in log else None, 0)
    print(f"after {args.scrapes} scrapes (alternating plain/gzip, one connection), MiB")
    cols = ["VmRSS", "RssAnon", "RssFile", "VmHWM", "Pss", "Private", "Threads"]
    print(f"{'configuration':<16}" + "".join(f"{c:>10}" for c in cols))
    for name in args.only.split(","):
        if name not in configs:
            continue
        cmd, port_of, runs = configs[name]
        st = measure(name, cmd, port_of, args.scrapes, runs)
        print(f"{name:<16}" + "".join(
            f"{st.get(c, 0):>10}" if c == "Threads" else f"{st.get(c, 0) / MIB:>10.2f}"
            for c in cols), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
