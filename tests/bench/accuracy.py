#!/usr/bin/env python3
"""Helper of accuracy_vs_reference.sh (python3 stdlib only).

  accuracy.py wait-runs URL N TIMEOUT   poll URL (/metrics) once a second until the probe runs
                                        (sum of iodrift_probe_runs_total) reach N; prints runs=K;
                                        exit 1 on timeout
  accuracy.py report RAW_DIR            parse the raw outputs of every round, print the table of
                                        medians and ratios, the cost of the default schedule and
                                        key=value lines

RAW_DIR layout (written by the script): setup.txt; r1/, r2/, … with one file per step (loop.json,
loop.hdparm_T, loop.fio_direct, …, misc.json, bonnie.csv, memcpy.txt); cost/ with once1.json,
once2.json, oneoff.txt, samples.txt, wait.txt.
"""
import json
import os
import re
import statistics
import sys
import time
import urllib.request

MIB = 1024.0 * 1024.0
LOW, HIGH = 0.9, 1.1
DEFAULT_INTERVAL_S = 300  # embedded default: every probe every 5 min


# ------------------------------------------------------------------------------------------------
# Parsers. Each takes the text of one raw file and returns a float or None.

def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def load_json(text):
    if not text:
        return None
    start = text.find("{")  # fio may print notes before its JSON
    if start < 0:
        return None
    try:
        return json.loads(text[start:])
    except ValueError:
        return None


def iodrift_probe(text, name):
    j = load_json(text)
    if not j:
        return None
    for p in j.get("probes", []):
        if p.get("name") == name and p.get("result", "ok" if p.get("success") else "") == "ok":
            return p
    return None


def io_throughput(name):
    def get(text):
        p = iodrift_probe(text, name)
        v = p and p.get("throughput_bytes_per_second")
        return v / MIB if v else None
    return get


def io_ops(name, op):
    def get(text):
        p = iodrift_probe(text, name)
        return p and (p.get("ops_per_second") or {}).get(op)
    return get


def io_latency_us(name, which):
    def get(text):
        p = iodrift_probe(text, name)
        v = p and (p.get("latency_seconds") or {}).get(which)
        return v * 1e6 if v is not None else None
    return get


def io_extra_mib(name, key):
    def get(text):
        p = iodrift_probe(text, name)
        v = p and (p.get("extra") or {}).get(key)
        return v / MIB if v else None
    return get


def io_extra(name, key):
    def get(text):
        p = iodrift_probe(text, name)
        return p and (p.get("extra") or {}).get(key)
    return get


def hdparm(kind):
    pattern = re.compile(r"Timing %s reads:\s+([\d.]+) MB in\s+([\d.]+) seconds =\s+([\d.]+) MB/sec"
                         % ("cached" if kind == "cached" else "buffered disk"))

    def get(text):
        m = pattern.search(text or "")
        return float(m.group(3)) if m else None  # hdparm's MB are MiB (2 MiB = TIMING_BUF_MB)
    return get


def fio_read(field):
    def get(text):
        j = load_json(text)
        try:
            r = j["jobs"][0]["read"]
            if field == "bw":
                return r["bw_bytes"] / MIB
            if field == "iops":
                return r["iops"]
            return r["clat_ns"]["percentile"][field] / 1000.0
        except (TypeError, KeyError, IndexError):
            return None
    return get


def ioping_iops(text):
    # -B: requests, Σ time (ns), iops, bytes/s, min, avg, max, mdev (ns), total requests, total ns
    for line in (text or "").splitlines():
        f = line.split()
        if len(f) >= 8 and all(re.fullmatch(r"[\d.]+", x) for x in f[:8]):
            return float(f[2])
    return None


def bonnie(field):
    index = {"seq_create": 26, "seq_stat": 28, "seq_delete": 30,
             "rand_create": 32, "rand_stat": 34, "rand_delete": 36}[field]

    def get(text):
        lines = [l for l in (text or "").splitlines() if l.count(",") > 30]
        if not lines:
            return None
        f = lines[-1].split(",")
        try:
            return float(f[index])
        except (IndexError, ValueError):
            return None  # "+++++": the phase took under 0.5 s, bonnie++ prints no rate
    get.bonnie_field = field
    return get


def bonnie_censored(field):
    get = bonnie(field)
    index = {"seq_create": 26, "seq_stat": 28, "seq_delete": 30,
             "rand_create": 32, "rand_stat": 34, "rand_delete": 36}[field]

    def censored(text):
        if not text or get(text) is not None:
            return False
        lines = [l for l in text.splitlines() if l.count(",") > 30]
        f = lines[-1].split(",") if lines else []
        return len(f) > index and "+++++" in f[index]
    return censored


def memcpy(key):
    def get(text):
        m = re.search(r"^%s=([\d.]+)$" % key, text or "", re.M)
        return float(m.group(1)) / MIB if m else None
    return get


# ------------------------------------------------------------------------------------------------
# The figures. (key, label, unit, iodrift file, getter, reference file, getter, why-outside)

FIGURES = [
    ("loop.cached", "loop  cached    vs hdparm -T", "MiB/s",
     "loop.json", io_throughput("loop-cached"), "loop.hdparm_T", hdparm("cached"),
     "same copy path; hdparm -T: mean over 2 s, probe: median of 5 x 50 ms windows. With the "
     "CPUs oversubscribed both measure the CPU share they got as much as the copy"),
    ("loop.cached_mean", "loop  cached mean vs hdparm -T", "MiB/s",
     "loop.json", io_extra_mib("loop-cached", "throughput_mean_bytes_per_second"), "loop.hdparm_T",
     hdparm("cached"),
     "hdparm -T's own definition (all bytes / all time; 2 MiB read()s of the device from the "
     "buffer cache) over 5 x 50 ms instead of 2 s; CPU-share differences between the moments "
     "remain"),
    ("loop.cached_nice10", "loop  cached at nice 10 vs hdparm -T", "MiB/s",
     "nice10.json", io_throughput("loop-cached-default-nice"), "loop.hdparm_T", hdparm("cached"),
     "as deployed: probe threads at nice 10 (the daemon's default) compete with nice-0 work for "
     "a busy CPU; a CPU-bound figure then also measures CPU contention"),
    ("loop.buffered_hdparm", "loop  buffered  vs hdparm -t", "MiB/s",
     "loop.json", io_throughput("loop-buffered"), "loop.hdparm_t", hdparm("buffered"),
     "amount read: hdparm -t reads for 3 s (about 0.5 GiB here) in 2 MiB read()s, the probe "
     "64 MiB; past the first tens of MiB each new page-cache page comes from long-free memory, "
     "so hdparm gives the sustained rate (fio reading 640 MiB matches hdparm, 64 MiB the probe)"),
    ("loop.buffered_fio", "loop  buffered  vs fio read 1M buffered", "MiB/s",
     "loop.json", io_throughput("loop-buffered"), "loop.fio_buffered", fio_read("bw"),
     "same method, region and size; a buffered read follows the state of free memory "
     "(docs/probes.md, \"Why buffered next to direct\") at its moment, so single pairs scatter around 1 in both directions"),
    ("loop.direct", "loop  direct    vs fio read 1M direct", "MiB/s",
     "loop.json", io_throughput("loop-direct"), "loop.fio_direct", fio_read("bw"),
     "same method, region and size; a loop device on a CPU-starved VM runs at the speed its "
     "kworker gets scheduled, so single pairs scatter around 1 in both directions"),
    ("loop.rand_iops", "loop  random    vs fio randread IOPS", "IOPS",
     "loop.json", io_ops("loop-random-default", "read"), "loop.fio_rand", fio_read("iops"),
     "default probe (1000 requests or 1 s) vs 1000 requests (probe: N / Σ latency, fio: 1000 / wall time); on a CPU-starved VM the "
     "loop device's latency is its kworker's wake-up delay, 0.06-4 ms from minute to minute"),
    ("loop.rand_p50", "loop  random    vs fio randread p50", "µs",
     "loop.json", io_latency_us("loop-random-default", "p50"), "loop.fio_rand", fio_read("50.000000"),
     "same method; on a CPU-starved VM the loop device's median latency itself moves between "
     "60 µs and 4 ms from one minute to the next (both tools, see the pairs)"),
    ("loop.rand_p99", "loop  random    vs fio randread p99", "µs",
     "loop.json", io_latency_us("loop-random-default", "p99"), "loop.fio_rand", fio_read("99.000000"),
     "default probe; p99 of 1000 requests = the 10th-slowest (fewer when the 1 s limit cuts the run), set by multi-ms outliers of the "
     "loop device"),
    ("loop.rand_ioping", "loop  random64  vs ioping -D -c 65 IOPS", "IOPS",
     "loop.json", io_ops("loop-random", "read"), "loop.ioping", ioping_iops,
     "same definition (64 measured requests / Σ latency); with a few multi-ms outliers among 64 "
     "requests the mean, and so IOPS, moves 10x from run to run for both tools"),
    ("file.buffered_fio", "file  buffered  vs fio read 1M buffered", "MiB/s",
     "file.json", io_throughput("file-buffered"), "file.fio_buffered", fio_read("bw"),
     "same method, region and size; a buffered read follows the state of free memory "
     "(docs/probes.md, \"Why buffered next to direct\") at its moment, so single pairs scatter around 1 in both directions"),
    ("file.direct", "file  direct    vs fio read 1M direct", "MiB/s",
     "file.json", io_throughput("file-direct"), "file.fio_direct", fio_read("bw"),
     "same method, region and size; other work on the shared disk moves single pairs"),
    ("file.rand_iops", "file  random    vs fio randread IOPS", "IOPS",
     "file.json", io_ops("file-random-default", "read"), "file.fio_rand", fio_read("iops"),
     "default probe (1000 requests or 1 s) vs 1000 requests (probe: N / Σ latency, fio: 1000 / wall time); a few ms-scale outliers "
     "(other work on the shared disk) move the mean"),
    ("file.rand_p50", "file  random    vs fio randread p50", "µs",
     "file.json", io_latency_us("file-random-default", "p50"), "file.fio_rand", fio_read("50.000000"),
     "same method; fio's percentiles are its histogram bins, otherwise the same definition"),
    ("file.rand_p99", "file  random    vs fio randread p99", "µs",
     "file.json", io_latency_us("file-random-default", "p99"), "file.fio_rand", fio_read("99.000000"),
     "default probe; p99 of 1000 requests = the 10th-slowest (fewer when the 1 s limit cuts the run), set by outliers from other work on "
     "the shared disk"),
    ("file.rand_ioping", "file  random64  vs ioping -D -c 65 IOPS", "IOPS",
     "file.json", io_ops("file-random", "read"), "file.ioping", ioping_iops,
     "same definition (64 measured requests / Σ latency); one ms-scale outlier among 64 "
     "requests moves the mean, and so IOPS, several-fold"),
    ("meta.create64", "ext4  metadata  64 files vs bonnie++ -n", "files/s",
     "misc.json", io_ops("meta-64", "create"), "bonnie.csv", bonnie("seq_create"),
     "different experiment: 64 creates in a one-block, warm directory (5-20 µs each) against "
     "16384 creates into a new directory that grows to 16k entries (about 300 µs each)"),
    ("meta.create16k", "ext4  metadata  same count vs bonnie++ -n", "files/s",
     "misc.json", io_ops("meta-16k", "create"), "bonnie.csv", bonnie("seq_create"),
     "same count, but the probe reuses its directory: re-creating 16k names where 16k were just "
     "deleted costs more CPU per create than bonnie++'s new directory (fresh dir 1.2-14x faster)"),
    ("meta.stat16k", "ext4  meta stat wall vs bonnie++ rand stat", "files/s",
     "misc.json", io_extra("meta-16k", "stat_wall_ops_per_second"), "bonnie.csv",
     bonnie("rand_stat"),
     "same order (shuffled names), count and definition (files / phase wall time); a stat of a "
     "cached inode takes 2-5 µs, so a preemption or two in either run moves the rate"),
    ("meta.delete16k", "ext4  meta delete wall vs bonnie++ rand del", "files/s",
     "misc.json", io_extra("meta-16k", "delete_wall_ops_per_second"), "bonnie.csv",
     bonnie("rand_delete"),
     "same order (shuffled names), count, sync behaviour (neither fsyncs) and definition "
     "(files / phase wall time); on a CPU-starved VM both runs mostly wait for a CPU (bonnie++ "
     "reports 4-10 % CPU for the phase), so the share each got decides the pair"),
    ("meta.delete16k_sum", "ext4  meta delete N/Σlat vs bonnie rand del", "files/s",
     "misc.json", io_ops("meta-16k", "delete"), "bonnie.csv", bonnie("rand_delete"),
     "the probe's headline ops/s is N / Σ per-unlink latency: it leaves out the gaps between "
     "calls (and a preemption that falls there), bonnie++ divides by the phase's wall time"),
    ("meta.delete16k_seq", "ext4  meta delete wall vs bonnie++ seq del", "files/s",
     "misc.json", io_extra("meta-16k", "delete_wall_ops_per_second"), "bonnie.csv",
     bonnie("seq_delete"),
     "different experiment: bonnie++'s sequential delete walks the directory with readdir() "
     "and unlinks in hash order, its time including the getdents calls; the probe unlinks "
     "known names in shuffled order, like bonnie++'s random delete (rows above)"),
    ("mem.hot", "mem   hot copy 2 MiB vs memcpy loop", "MiB/s",
     "misc.json", io_extra_mib("memory", "hot_copy_bytes_per_second"), "memcpy.txt",
     memcpy("hot_bytes_per_second"),
     "same method and memcpy; 50 ms windows on oversubscribed CPUs measure the CPU share too"),
    ("mem.hot_nice10", "mem   hot copy at nice 10 vs memcpy loop", "MiB/s",
     "nice10.json", io_extra_mib("memory-default-nice", "hot_copy_bytes_per_second"), "memcpy.txt",
     memcpy("hot_bytes_per_second"),
     "as deployed: probe threads at nice 10 (the daemon's default) compete with nice-0 work for "
     "a busy CPU"),
    ("mem.stream", "mem   stream copy vs memcpy loop", "MiB/s",
     "misc.json", io_extra_mib("memory", "stream_copy_bytes_per_second"), "memcpy.txt",
     memcpy("stream_bytes_per_second"),
     "same method, buffer size and memcpy; one 512 MiB pass on oversubscribed CPUs"),
    ("mem.alloc", "mem   first touch vs memcpy loop", "MiB/s",
     "misc.json", io_extra_mib("memory", "page_alloc_bytes_per_second"), "memcpy.txt",
     memcpy("page_alloc_bytes_per_second"),
     "same method; first-touch speed follows how long the freed memory sat idle (free page "
     "reporting) and the CPU share"),
]

ORDER = ["loop.cached", "loop.cached_mean", "loop.cached_nice10", "loop.buffered_hdparm", "loop.buffered_fio",
         "loop.direct", "loop.rand_iops", "loop.rand_p50", "loop.rand_p99", "loop.rand_ioping",
         "file.buffered_fio", "file.direct", "file.rand_iops", "file.rand_p50", "file.rand_p99",
         "file.rand_ioping", "meta.create64", "meta.create16k", "meta.stat16k",
         "meta.delete16k", "meta.delete16k_sum", "meta.delete16k_seq", "mem.hot", "mem.hot_nice10",
         "mem.stream", "mem.alloc"]
FIGURES.sort(key=lambda f: ORDER.index(f[0]))


def fmt(v):
    if v is None:
        return "–"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def setup_info(raw):
    info = {}
    for line in (read(os.path.join(raw, "setup.txt")) or "").splitlines():
        k, _, v = line.partition("=")
        info[k] = v
    return info


def rounds(raw):
    out = []
    for name in os.listdir(raw):
        m = re.fullmatch(r"r(\d+)", name)
        if m and os.path.isdir(os.path.join(raw, name)):
            out.append((int(m.group(1)), os.path.join(raw, name)))
    return [d for _, d in sorted(out)]


def report_accuracy(raw, kv):
    dirs = rounds(raw)
    info = setup_info(raw)
    print(f"iodrift accuracy against the reference tools — median of {len(dirs)} pairs "
          "(each ratio is the median of the per-pair ratios iodrift / reference)")
    for k in ("host", "iodriftd", "loop", "file", "tools", "settings", "load_end"):
        if k in info:
            print(f"  {k}={info[k]}")
    print()
    head = f"{'figure':<44} {'unit':<8} {'iodrift':>9} {'reference':>10} {'ratio':>6}  {'pair ratios':<12} 0.9–1.1"
    print(head)
    print("-" * len(head))
    outside = []
    censored_notes = []
    for key, label, unit, io_file, io_get, ref_file, ref_get, why in FIGURES:
        io_vals, ref_vals, ratios = [], [], []
        pairs_txt = []
        censored = 0
        for d in dirs:
            a = io_get(read(os.path.join(d, io_file)))
            ref_text = read(os.path.join(d, ref_file))
            b = ref_get(ref_text)
            field = getattr(ref_get, "bonnie_field", None)
            if field and bonnie_censored(field)(ref_text):
                censored += 1
                pairs_txt.append(f"{fmt(a)}/+++++")
                continue
            pairs_txt.append(f"{fmt(a)}/{fmt(b)}")
            if a is None or b is None or b == 0:
                continue
            io_vals.append(a)
            ref_vals.append(b)
            ratios.append(a / b)
        if censored:
            censored_notes.append(f"  {' '.join(label.split())}: bonnie++ printed +++++ (phase under "
                                  f"0.5 s, no rate) in {censored} of {len(dirs)} runs; those pairs "
                                  "are left out")
        if not ratios:
            print(f"{label:<44} {unit:<8} {'–':>9} {'–':>10} {'–':>6}  {'':<12} no pair")
            kv.append(f"acc.{key}.pairs=" + ",".join(pairs_txt))
            continue
        io_m, ref_m, r_m = (statistics.median(x) for x in (io_vals, ref_vals, ratios))
        spread = f"{min(ratios):.2f}–{max(ratios):.2f}"
        ok = LOW <= r_m <= HIGH
        verdict = "ok" if ok else "outside"
        if not ok:
            outside.append((label, why))
        print(f"{label:<44} {unit:<8} {fmt(io_m):>9} {fmt(ref_m):>10} {r_m:>6.3f}  {spread:<12} {verdict}")
        kv.append(f"acc.{key}.iodrift={io_m:.6g}")
        kv.append(f"acc.{key}.reference={ref_m:.6g}")
        kv.append(f"acc.{key}.ratio={r_m:.4f}")
        kv.append(f"acc.{key}.n={len(ratios)}")
        kv.append(f"acc.{key}.pairs=" + ",".join(pairs_txt))
    print()
    if censored_notes:
        print("\n".join(censored_notes))
        print()
    if outside:
        print("why the ratios outside 0.9–1.1 differ (method, not necessarily error):")
        for label, why in outside:
            print(f"  {' '.join(label.split())}: {why}")
        print()

    # State of each pair: what explains buffered and first-touch figures.
    for d in dirs:
        n = os.path.basename(d)
        for f, probe in (("loop.json", "loop-buffered"), ("file.json", "file-buffered")):
            p = iodrift_probe(read(os.path.join(d, f)), probe)
            if p:
                kv.append(f"state.{n}.{probe}.sys_cpu_s_per_gib="
                          f"{p['extra'].get('system_cpu_seconds_per_gib', float('nan')):.3f}")
                kv.append(f"state.{n}.{probe}.resident_after={p['extra'].get('resident_after_fraction')}")
                if p.get("suspect"):
                    kv.append(f"state.{n}.{probe}.suspect={','.join(p['suspect'])}")
        m = re.search(r"([\d.]+) MB in\s+([\d.]+) seconds", read(os.path.join(d, "loop.hdparm_t")) or "")
        if m:
            kv.append(f"state.{n}.hdparm_t_read_mib={m.group(1)} seconds={m.group(2)}")
        for f in ("loop.json", "file.json", "misc.json"):
            j = load_json(read(os.path.join(d, f)))
            for p in (j or {}).get("probes", []):
                if p.get("result") != "ok" or p.get("suspect"):
                    kv.append(f"state.{n}.{p.get('name')}.result={p.get('result')} "
                              f"suspect={','.join(p.get('suspect') or [])} error={p.get('error')!r}")


def report_cost(raw, kv):
    cost = os.path.join(raw, "cost")
    once1 = load_json(read(os.path.join(cost, "once1.json")))
    once2 = load_json(read(os.path.join(cost, "once2.json")))
    runs_h = 3600.0 / DEFAULT_INTERVAL_S
    print(f"cost of the default schedule — embedded default (one probe of each kind on "
          f"<state_dir>/probe, every {DEFAULT_INTERVAL_S // 60} min = {runs_h:.0f} runs/h), "
          "figures from the second `--once --json` (the first calibrates)")
    if not once2:
        print("  no result (the --once run failed)")
        return
    head = f"{'probe':<16} {'kind':<9} {'bytes/run':>12} {'source':<11} {'CPU s/run':>10} {'MiB/h':>9} {'CPU s/h':>8}"
    print(head)
    print("-" * len(head))
    dev_bytes = cache_bytes = cpu = 0.0
    for p in once2.get("probes", []):
        c = p.get("cpu_seconds") or {}
        pc = (c.get("user") or 0) + (c.get("system") or 0)
        b = p.get("bytes") or 0
        kind = p.get("kind")
        source = {"cached": "page cache", "metadata": "–", "memory": "–"}.get(kind, "storage")
        if kind == "cached":
            cache_bytes += b
        elif kind in ("buffered", "direct", "random"):
            dev_bytes += b
        cpu += pc
        print(f"{p.get('name', ''):<16} {kind:<9} {b:>12,} {source:<11} {pc:>10.3f} "
              f"{b * runs_h / MIB:>9,.0f} {pc * runs_h:>8.2f}")
        kv.append(f"cost.{p.get('name')}.bytes={b} cost.{p.get('name')}.cpu_s={pc:.4f}")
    print("-" * len(head))
    print(f"{'total':<16} {'':<9} {dev_bytes + cache_bytes:>12,.0f} {'':<11} {cpu:>10.3f} "
          f"{(dev_bytes + cache_bytes) * runs_h / MIB:>9,.0f} {cpu * runs_h:>8.2f}")

    # The daemon itself: first scheduled cycle and idle, from /proc/PID/stat, io, schedstat.
    samples, tck, idle_s = {}, 100, None
    for line in (read(os.path.join(cost, "samples.txt")) or "").splitlines():
        if line.startswith("clk_tck="):
            d = dict(x.split("=") for x in line.split())
            tck, idle_s = int(d["clk_tck"]), float(d["idle_s"])
            continue
        f = line.split()
        if f:
            samples[f[0]] = {k: float(v) for k, v in (x.split("=") for x in f[1:])}
    wait = read(os.path.join(cost, "wait.txt")) or ""
    runs = [int(x) for x in re.findall(r"runs=(\d+)", wait)]
    idle_rate = None
    print()
    print(f"storage reads: {dev_bytes / MIB:,.1f} MiB/run = {dev_bytes * runs_h / MIB:,.0f} MiB/h "
          f"({dev_bytes * runs_h * 24 / (1 << 30):,.1f} GiB/day); page-cache copies (cached): "
          f"{cache_bytes * runs_h / (1 << 30):,.1f} GiB/h")
    print(f"probe-thread CPU (JSON cpu_seconds): {cpu:.3f} s/run = {cpu * runs_h:.1f} s/h")
    if "start" in samples and "cycle_done" in samples:
        s0, s1 = samples["start"], samples["cycle_done"]
        cyc = (s1["ticks"] - s0["ticks"]) / tck
        rb = (s1["read_bytes"] - s0["read_bytes"]) / MIB
        print(f"daemon, start-up + first scheduled cycle: {cyc:.2f} s CPU (/proc/PID/stat, "
              f"includes start-up and ~{int(s1['t'] - s0['t'])} polling scrapes), "
              f"{rb:,.1f} MiB read from storage (/proc/PID/io read_bytes)")
        kv.append(f"cost.daemon_cycle_cpu_s={cyc:.3f}")
        kv.append(f"cost.daemon_cycle_read_mib={rb:.2f}")
    if "cycle_done" in samples and "idle_done" in samples:
        s1, s2 = samples["cycle_done"], samples["idle_done"]
        dt = s2["t"] - s1["t"]
        ticks = s2["ticks"] - s1["ticks"]
        ns = s2["sched_ns"] - s1["sched_ns"]
        idle_rate = ns / 1e9 / dt if dt > 0 else None
        extra = ""
        if len(runs) >= 2 and runs[-1] > runs[0]:
            extra = f" (warning: {runs[-1] - runs[0]} probe runs fell into the window)"
        print(f"daemon idle, {dt:.0f} s, no scrapes, no probe due (beside the set-up and the first "
              f"rounds): {ticks / tck:.2f} s CPU by /proc/PID/stat "
              f"({ticks:.0f} ticks), {ns / 1e6:.1f} ms by schedstat = "
              f"{(idle_rate or 0) * 3600:.2f} s/h{extra}")
        kv.append(f"cost.idle_cpu_s_per_h={(idle_rate or 0) * 3600:.3f}")
    total = cpu * runs_h + (idle_rate or 0) * 3600
    print(f"=> default schedule: {dev_bytes * runs_h / MIB:,.0f} MiB/h read from storage, "
          f"{total:.1f} CPU s/h ({total / 36:.3f} % of one core)")
    kv.append(f"cost.storage_mib_per_h={dev_bytes * runs_h / MIB:.1f}")
    kv.append(f"cost.cpu_s_per_h={total:.2f}")
    if once1:
        b1 = sum(p.get("bytes") or 0 for p in once1.get("probes", []) if p.get("kind") != "cached")
        c1 = sum(sum((p.get("cpu_seconds") or {}).values()) for p in once1.get("probes", []))
        oneoff = read(os.path.join(cost, "oneoff.txt")) or ""
        m = re.search(r"probe_file_bytes=(\d+)", oneoff)
        written = f"{int(m.group(1)) / MIB:.0f} MiB probe file written once" if m else ""
        print(f"one-time (first run, calibration): {written}; {b1 / MIB:,.0f} MiB read, "
              f"{c1:.2f} CPU s")


def report(raw):
    kv = []
    report_accuracy(raw, kv)
    report_cost(raw, kv)
    info = setup_info(raw)
    print()
    for k in ("stopped_early", "rounds_end_seconds", "total_seconds"):
        if k in info:
            kv.append(f"bench.{k}={info[k]}")
    for line in kv:
        print(line)


def wait_runs(url, want, timeout):
    deadline = time.monotonic() + timeout
    runs = -1
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                text = r.read().decode()
            runs = int(sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines()
                           if l.startswith("iodrift_probe_runs_total{")))
        except (OSError, ValueError, IndexError):
            pass
        if runs >= want:
            print(f"runs={runs}")
            return 0
        if time.monotonic() >= deadline:
            print(f"runs={runs} (wanted {want} within {timeout} s)")
            return 1
        time.sleep(1)


def main(argv):
    if len(argv) == 5 and argv[1] == "wait-runs":
        return wait_runs(argv[2], int(argv[3]), float(argv[4]))
    if len(argv) == 3 and argv[1] == "report":
        report(argv[2])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
