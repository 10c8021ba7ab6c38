#!/usr/bin/env python3
"""The scheduled daemon runs one probe of each kind on a directory and exports them.

Checks the probe families of docs/metrics.md with their labels, that the figures agree with
each other (throughput ≈ bytes / time; histogram count = ops), that the context equals a plausible
meminfo snapshot, that `promtool check metrics` still parses the output, and that `--once --json`
gives all six kinds with the contract's fields.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

from iodrift_test import prom
from iodrift_test.daemon import Daemon, binary
from iodrift_test.skip import fail


KINDS = ["cached", "buffered", "direct", "random", "metadata", "memory"]
work = tempfile.mkdtemp(prefix="iodrift-probes-", dir="/var/tmp")
target = os.path.join(work, "target")
os.makedirs(target)
config = os.path.join(work, "iodrift.yaml")
with open(config, "w") as f:
    f.write(f"state_dir: {work}/state\nprobes:\n")
    for kind in KINDS:
        f.write(f"  - name: t-{kind}\n    kind: {kind}\n    interval: 1h\n    timeout: 20s\n")
        if kind != "memory":
            f.write(f"    target: {target}\n")
        if kind in ("cached", "buffered", "direct"):
            f.write("    size: 16MiB\n")
        if kind in ("buffered", "direct"):
            # The size bounds the read, not the clock (a busy machine needs more than the
            # default 250 ms for 16 MiB, and the bytes are what this test checks).
            f.write("    time_budget: 15s\n")

try:
    # --once --json: every kind succeeds and has the contract's fields.
    res = subprocess.run([binary(), "--once", "--json", "--config", config],
                         capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        fail(f"--once --json exited {res.returncode}: {res.stdout[-3000:]}{res.stderr[-2000:]}")
    doc = json.loads(res.stdout)
    for key in ("boot_id", "uptime_seconds", "probes"):
        if key not in doc:
            fail(f"--once --json lacks {key}")
    by_kind = {p["kind"]: p for p in doc["probes"]}
    if sorted(by_kind) != sorted(KINDS):
        fail(f"kinds in JSON: {sorted(by_kind)}")
    for kind, p in by_kind.items():
        for key in ("name", "target", "success", "error", "duration_seconds", "bytes",
                    "throughput_bytes_per_second", "ops_per_second", "latency_seconds",
                    "cpu_seconds", "suspect", "context"):
            if key not in p:
                fail(f"{kind}: JSON lacks {key}")
        if not p["success"]:
            fail(f"{kind} failed: {p['error']}")
        # getrusage(RUSAGE_THREAD) is tick-sampled: runs of a few ms (random, metadata) may read 0.
        if p["cpu_seconds"]["user"] + p["cpu_seconds"]["system"] <= 0 and kind in ("cached", "buffered", "memory"):
            fail(f"{kind}: no CPU time recorded")
        for field in ("MemFree", "MemAvailable", "Buffers", "Cached", "Dirty", "Writeback", "Slab",
                      "SReclaimable", "SUnreclaim"):
            if field not in p["context"]:
                fail(f"{kind}: context lacks {field}")
    for kind in ("buffered", "direct"):
        p = by_kind[kind]
        if p["bytes"] != 16 << 20:
            fail(f"{kind}: read {p['bytes']} bytes, budget is 16 MiB")
        if p["throughput_bytes_per_second"] is None or p["throughput_bytes_per_second"] <= 0:
            fail(f"{kind}: no throughput")
    for kind in ("random", "metadata"):
        if not by_kind[kind]["ops_per_second"] or by_kind[kind]["latency_seconds"]["p50"] is None:
            fail(f"{kind}: no ops/s or latency")
        if by_kind[kind]["throughput_bytes_per_second"] is not None and kind == "metadata":
            fail("metadata: throughput should be null")

    # The scheduled daemon: wait until every probe ran once, then check the families.
    with Daemon("--config", config) as d:
        deadline = time.monotonic() + 90
        while True:
            status, _, body = d.get()
            metrics = prom.parse_metrics(body)
            ran = {s.split('probe="')[1].split('"')[0] for s, v in metrics.items()
                   if s.startswith("iodrift_probe_runs_total{") and v > 0}
            if len(ran) == len(KINDS):
                break
            if time.monotonic() > deadline:
                fail(f"after 90 s only {sorted(ran)} ran:\n{d.stderr()[-3000:]}")
            time.sleep(0.5)

    def series(name, **labels):
        want = [f'{k}="{v}"' for k, v in labels.items()]
        return {s: v for s, v in metrics.items()
                if s.split("{")[0] == name and all(w in s for w in want)}

    for kind in KINDS:
        probe = f"t-{kind}"
        tgt = "" if kind == "memory" else target
        base = f'kind="{kind}",probe="{probe}",target="{tgt}"'
        if metrics.get(f"iodrift_probe_success{{{base}}}") != 1:
            fail(f"{probe}: iodrift_probe_success is not 1")
        if list(series("iodrift_probe_runs_total", probe=probe, result="ok").values()) != [1]:
            fail(f"{probe}: runs_total ok != 1: {series('iodrift_probe_runs_total', probe=probe)}")
        for name in ("iodrift_probe_duration_seconds", "iodrift_probe_last_run_timestamp_seconds",
                     "iodrift_probe_read_bytes_total", "iodrift_probe_bytes",
                     "iodrift_probe_supported"):
            if f"{name}{{{base}}}" not in metrics:
                fail(f"{probe}: {name} missing")
        if not series("iodrift_probe_context_bytes", probe=probe, field="MemFree"):
            fail(f"{probe}: no context MemFree")
        if not series("iodrift_probe_cpu_seconds", probe=probe, mode="system"):
            fail(f"{probe}: no cpu_seconds")
        if not series("iodrift_probe_suspect", probe=probe, reason="low_free_memory"):
            fail(f"{probe}: no suspect series")
        if not series("iodrift_probe_target_info", probe=probe):
            fail(f"{probe}: no target_info")
        if time.time() - metrics[f"iodrift_probe_last_run_timestamp_seconds{{{base}}}"] > 300:
            fail(f"{probe}: last run timestamp is not recent")
    for kind in ("cached", "buffered", "direct", "memory"):
        tp = series("iodrift_probe_throughput_bytes_per_second", probe=f"t-{kind}")
        if not tp or list(tp.values())[0] <= 0:
            fail(f"t-{kind}: no throughput")
    b = f'kind="buffered",probe="t-buffered",target="{target}"'
    implied = metrics[f"iodrift_probe_bytes{{{b}}}"] / metrics[f"iodrift_probe_duration_seconds{{{b}}}"]
    if metrics[f"iodrift_probe_throughput_bytes_per_second{{{b}}}"] < implied * 0.9:
        fail("buffered throughput is below bytes/duration of the whole run")
    for kind, op in (("random", "read"), ("metadata", "create")):
        if not series("iodrift_probe_ops_per_second", probe=f"t-{kind}", op=op):
            fail(f"t-{kind}: no ops_per_second op={op}")
        count = series("iodrift_probe_latency_seconds_count", probe=f"t-{kind}")
        inf = series("iodrift_probe_latency_seconds_bucket", probe=f"t-{kind}", le="+Inf")
        if not count or list(count.values())[0] <= 0 or list(count.values()) != list(inf.values()):
            fail(f"t-{kind}: histogram count {count} vs +Inf bucket {inf}")
    tax = series("iodrift_page_cache_tax_ratio", target=target)
    if not tax or not -50 < list(tax.values())[0] < 1:
        fail(f"page cache tax ratio missing or absurd: {tax}")

    promtool = shutil.which("promtool")
    if promtool:
        res = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True,
                             text=True)
        bad = [l for l in (res.stdout + res.stderr).splitlines()
               if l and not l.startswith(("iodrift_meminfo_", "iodrift_vmstat_"))]
        if bad:
            fail("promtool check metrics:\n" + "\n".join(bad[:30]))
    # Nothing outside the probe directory changed: only iodrift's own files are in it.
    leftovers = sorted(os.listdir(target))
    if leftovers != ["iodrift-meta", "iodrift-probe.dat"] or os.listdir(os.path.join(target, "iodrift-meta")):
        fail(f"probe directory holds {leftovers}")
    print(f"ok: {len(KINDS)} kinds via --once --json and the scheduled daemon")
finally:
    shutil.rmtree(work, ignore_errors=True)
