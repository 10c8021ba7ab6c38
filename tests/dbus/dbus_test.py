#!/usr/bin/env python3
"""org.iodrift.Monitor1 on a private session-like bus, driven by real clients.

busctl and gdbus (independent implementations) and iodriftctl: ListProbes, introspection, the
Version property, RunProbe (result fields equal one probe of `--once --json`), ProbeCompleted
seen by `iodriftctl watch`, UnknownProbe, Explain and ExplainFields (the verdict's cause as a
field, and `iodriftctl explain --json` printing it), Snapshot against /proc/meminfo, Reload with a broken
config (problems returned, old config kept, daemon alive), and RateLimited under a burst while
/metrics keeps answering.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from iodrift_test import dbus
from iodrift_test.daemon import Daemon, ctl_binary
from iodrift_test.dbus import IFACE, NAME, PATH
from iodrift_test.skip import fail, need_tools


need_tools("dbus-daemon", "busctl", "gdbus")
RESULT_KEYS = ("name", "kind", "target", "success", "error", "duration_seconds", "bytes",
               "throughput_bytes_per_second", "ops_per_second", "latency_seconds", "cpu_seconds",
               "suspect", "context")

work = tempfile.mkdtemp(prefix="iodrift-dbus-", dir="/var/tmp")
config = os.path.join(work, "iodrift.yaml")
dbus.write_two_probe_config(config, work)
watch = None
try:
    with dbus.Bus() as bus, Daemon("--config", config, "--dbus", bus.address) as d:
        addr = bus.address
        out = dbus.wait_for_service(addr, d)
        if '"mem" "memory" ""' not in out or '"rnd" "random"' not in out:
            fail(f"busctl ListProbes: {out!r}")

        res = dbus.busctl(addr, "introspect", NAME, PATH, IFACE)
        for member in ("ListProbes", "RunProbe", "Snapshot", "Explain", "ExplainFields", "Boots",
                       "Reload", "ProbeCompleted", "Version"):
            if member not in res.stdout:
                fail(f"introspection lacks {member}: {res.stdout}{res.stderr}")
        res = dbus.busctl(addr, "get-property", NAME, PATH, IFACE, "Version")
        if res.returncode != 0 or not res.stdout.startswith('s "'):
            fail(f"Version property: {res.stdout}{res.stderr}")

        # iodriftctl watch, subscribed before any on-demand run.
        watch = subprocess.Popen([ctl_binary(), "--bus", addr, "watch", "--json"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = watch.stderr.readline()
        if "watching" not in line:
            fail(f"iodriftctl watch did not start: {line!r} rc={watch.poll()}")

        # gdbus: RunProbe answers the result dictionary.
        res = dbus.gdbus_call(addr, "RunProbe", "rnd")
        if res.returncode != 0 or "'success': <true>" not in res.stdout or "'ops_per_second'" not in res.stdout:
            fail(f"gdbus RunProbe rnd: {res.stdout}{res.stderr}")

        # The signal reached watch (scheduled first runs of `mem` may come before it).
        for _ in range(5):
            line = watch.stdout.readline()
            try:
                signalled = json.loads(line)
            except ValueError:
                fail(f"watch printed {line!r}")
            if signalled.get("name") == "rnd":
                break
        if signalled.get("name") != "rnd" or signalled.get("success") is not True:
            fail(f"watch: no successful ProbeCompleted for rnd, last {line!r}")

        # busctl: RunProbe too (a{sv} answer).
        res = dbus.busctl(addr, "call", NAME, PATH, IFACE, "RunProbe", "s", "mem")
        if res.returncode != 0 or not res.stdout.startswith("a{sv}") or '"throughput_bytes_per_second"' not in res.stdout:
            fail(f"busctl RunProbe mem: {res.stdout}{res.stderr}")

        # iodriftctl run --json: the fields of one probe of `--once --json`.
        res = dbus.ctl(addr, "run", "rnd", "--json")
        if res.returncode != 0:
            fail(f"iodriftctl run rnd --json exited {res.returncode}: {res.stdout}{res.stderr}")
        result = json.loads(res.stdout)
        for key in RESULT_KEYS:
            if key not in result:
                fail(f"iodriftctl run --json lacks {key}: {res.stdout}")
        if result["kind"] != "random" or not result["ops_per_second"] or result["latency_seconds"]["p50"] is None:
            fail(f"iodriftctl run --json: {res.stdout}")
        res = dbus.ctl(addr, "run", "rnd")
        if res.returncode != 0 or "PROBE" not in res.stdout or "read/s" not in res.stdout:
            fail(f"iodriftctl run rnd: {res.stdout}{res.stderr}")

        # Unknown probe: the error name, exit 2 from iodriftctl.
        res = dbus.gdbus_call(addr, "RunProbe", "no-such-probe")
        if res.returncode == 0 or "org.iodrift.Error.UnknownProbe" not in res.stderr:
            fail(f"RunProbe of an unknown name: {res.stdout}{res.stderr}")
        res = dbus.ctl(addr, "run", "no-such-probe")
        if res.returncode != 2 or "UnknownProbe" not in res.stderr:
            fail(f"iodriftctl run unknown: rc={res.returncode} {res.stderr}")

        # Explain: rnd ran (at least) three times above; the answer comes from those results.
        # The text opens with the verdict line, then "probe NAME (KIND…" (docs/reading-drift.md
        # "Reading a slowdown").
        res = dbus.ctl(addr, "explain", "rnd")
        if (res.returncode != 0 or not res.stdout.startswith("Verdict: ")
                or not res.stdout.split("\n", 1)[-1].startswith("probe rnd (random")
                or "baseline:" not in res.stdout or "ops/s" not in res.stdout):
            fail(f"iodriftctl explain rnd: rc={res.returncode} {res.stdout}{res.stderr}")
        res = dbus.ctl(addr, "explain", "rnd", "--json")
        explained = json.loads(res.stdout)
        figures = explained.get("figures", {})
        # The runs may all be suspect on a busy machine (io_pressure) and so stay out of the
        # window and the baseline: window_runs can be 0, but the counts must be there and agree
        # with the text.
        if (explained.get("name") != "rnd" or "window_runs" not in figures
                or f"({figures['window_runs']:g} runs in the window" not in explained["text"]
                and f"over the last {figures['window_runs']:g} runs" not in explained["text"]
                or figures.get("last", 0) <= 0 or "baseline_runs_needed" not in figures
                or figures.get("baseline_runs_counted", -1) < 0
                or not re.fullmatch(r"[a-z_]+", explained.get("cause", ""))
                or explained.get("verdict") != explained["cause"]
                or explained.get("verdict_text") != explained["text"].split("\n", 1)[0]
                or not explained["verdict_text"].startswith(f"Verdict: {explained['cause']}: ")):
            fail(f"iodriftctl explain rnd --json: {res.stdout}")
        res = dbus.busctl(addr, "call", NAME, PATH, IFACE, "Explain", "s", "rnd")
        if res.returncode != 0 or not res.stdout.startswith("sa{sd}"):
            fail(f"busctl Explain rnd: {res.stdout}{res.stderr}")
        # ExplainFields: the cause is a field of the answer (a string), as is the verdict line;
        # the text and figures are Explain's.
        res = dbus.busctl(addr, "--json=short", "call", NAME, PATH, IFACE, "ExplainFields", "s",
                          "rnd")
        if res.returncode != 0:
            fail(f"busctl ExplainFields rnd: {res.stdout}{res.stderr}")
        reply = json.loads(res.stdout)
        fields = reply["data"][0] if reply.get("type") == "a{sv}" else {}
        types = {key: value.get("type") for key, value in fields.items()}
        if types != {"cause": "s", "verdict_text": "s", "text": "s", "figures": "a{sd}"}:
            fail(f"busctl ExplainFields rnd: fields and types {types}: {res.stdout}")
        cause = fields["cause"]["data"]
        if (not re.fullmatch(r"[a-z_]+", cause)
                or not fields["verdict_text"]["data"].startswith(f"Verdict: {cause}: ")
                or not fields["text"]["data"].startswith(fields["verdict_text"]["data"] + "\n")
                or "window_runs" not in fields["figures"]["data"]):
            fail(f"busctl ExplainFields rnd: {res.stdout}")
        res = dbus.gdbus_call(addr, "ExplainFields", "no-such-probe")
        if res.returncode == 0 or "UnknownProbe" not in res.stderr:
            fail(f"ExplainFields of an unknown name: {res.stdout}{res.stderr}")
        res = dbus.ctl(addr, "explain", "no-such-probe")
        if res.returncode != 2 or "UnknownProbe" not in res.stderr:
            fail(f"iodriftctl explain unknown: rc={res.returncode} {res.stderr}")

        # Snapshot: MemTotal as /proc/meminfo says, in bytes.
        with open("/proc/meminfo") as f:
            mem_total = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemTotal:"))
        res = dbus.ctl(addr, "snapshot", "--json")
        snap = json.loads(res.stdout)
        if snap.get("MemTotal") != mem_total or "uptime_seconds" not in snap:
            fail(f"snapshot MemTotal {snap.get('MemTotal')} != {mem_total}: {res.stdout}")
        res = dbus.busctl(addr, "call", NAME, PATH, IFACE, "Snapshot")
        if res.returncode != 0 or f'"MemTotal" {mem_total}' not in res.stdout:
            fail(f"busctl Snapshot: {res.stdout}{res.stderr}")
        res = dbus.ctl(addr, "list")
        if res.returncode != 0 or "PROBE" not in res.stdout or "mem" not in res.stdout:
            fail(f"iodriftctl list: {res.stdout}{res.stderr}")

        # Reload with a broken config: problems returned, running config kept.
        with open(config) as f:
            good = f.read()
        with open(config, "w") as f:
            f.write(good + "no_such_key: 1\n")
        res = dbus.ctl(addr, "reload")
        if res.returncode != 1 or "no_such_key" not in res.stderr:
            fail(f"reload of a broken config: rc={res.returncode} {res.stdout}{res.stderr}")
        res = dbus.busctl(addr, "call", NAME, PATH, IFACE, "Reload")
        if res.returncode != 0 or not res.stdout.startswith("as 1 ") or "no_such_key" not in res.stdout:
            fail(f"busctl Reload of a broken config: {res.stdout}{res.stderr}")
        out = dbus.wait_for_service(addr, d)
        if '"rnd" "random"' not in out:
            fail(f"probes after a rejected reload: {out}")
        # A good config with one probe fewer is applied.
        with open(config, "w") as f:
            f.write(good.split("  - name: rnd")[0])
        res = dbus.ctl(addr, "reload")
        if res.returncode != 0:
            fail(f"reload of a good config: rc={res.returncode} {res.stdout}{res.stderr}")
        out = dbus.wait_for_service(addr, d)
        if '"rnd"' in out or '"mem"' not in out:
            fail(f"probes after reload: {out}")
        with open(config, "w") as f:
            f.write(good)
        if dbus.ctl(addr, "reload").returncode != 0:
            fail("reload back to the first config failed")

        # Rate limits: a burst of parallel calls from separate clients hits the global bucket;
        # the refused ones say when to retry, /metrics keeps answering.
        procs = [subprocess.Popen([ctl_binary(), "--bus", addr, "run", "rnd"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(30)]
        limited = ok = 0
        for p in procs:
            stdout, stderr = p.communicate(timeout=120)
            if "org.iodrift.Error.RateLimited" in stderr and "retry in" in stderr:
                limited += 1
                if p.returncode != 1:
                    fail(f"rate-limited iodriftctl exited {p.returncode}, want 1")
            elif p.returncode == 0:
                ok += 1
            else:
                fail(f"burst call failed otherwise: rc={p.returncode} {stderr}")
        if limited == 0 or ok == 0:
            fail(f"burst of 30: {ok} ran, {limited} rate limited; want both")
        status, _, body = d.get()
        if status != 200 or "iodrift_probe" not in body:
            fail(f"/metrics after the burst: {status}")

        watch.terminate()
        watch.wait(10)
        if d.stop() != 0:
            fail("iodriftd did not exit 0 on SIGTERM")
        if "dbus: serving org.iodrift.Monitor1" not in d.stderr():
            fail("no 'dbus: serving' log line")
finally:
    if watch and watch.poll() is None:
        watch.kill()
    shutil.rmtree(work, ignore_errors=True)
print("ok")
