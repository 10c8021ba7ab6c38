#!/usr/bin/env python3
"""On the live /proc, every family is present and values equal /proc at that moment.

Fields that do not move between two reads (MemTotal, HugePages_Total, boot time, boot id, the
number of buddyinfo zones) must be equal exactly; moving ones must be within a small tolerance.
"""
import os
import re

from iodrift_test import prom
from iodrift_test.daemon import Daemon
from iodrift_test.skip import fail


source = os.environ["IODRIFT_SOURCE_DIR"]
config = os.path.join(source, "tests/e2e/no-probes.yaml")


def meminfo():
    out = {}
    for line in open("/proc/meminfo"):
        name, rest = line.split(":", 1)
        parts = rest.split()
        out[name] = int(parts[0]) * (1024 if len(parts) > 1 else 1)
    return out


with Daemon("--config", config) as d:
    before = meminfo()
    status, _, body = d.get()
    after = meminfo()
metrics = prom.parse_metrics(body)

# Every family of the contract that this kernel can provide.
required = ["iodrift_meminfo_MemTotal_bytes", "iodrift_meminfo_Active_file_bytes",
            "iodrift_meminfo_HugePages_Total", "iodrift_vmstat_pgfault", "iodrift_boot_time_seconds",
            "iodrift_uptime_seconds", "iodrift_collector_success", "iodrift_build_info",
            "iodrift_buddyinfo_free_blocks", "iodrift_pressure_waiting_seconds_total",
            "iodrift_dentries", "process_cpu_seconds_total", "process_resident_memory_bytes",
            "process_open_fds", "process_max_fds", "process_start_time_seconds"]
if os.geteuid() == 0:
    required += ["iodrift_slabinfo_bytes", "iodrift_slabinfo_total_bytes"]
names = {s.split("{")[0] for s in metrics}
missing = [r for r in required if r not in names]
if missing:
    fail(f"missing families: {missing}")

# Every meminfo field is exported.
for field in after:
    name = re.sub(r"[^A-Za-z0-9_]", "_", field).rstrip("_") if field.endswith(")") else \
        re.sub(r"[^A-Za-z0-9_]", "_", field)
    suffix = "_bytes" if field not in ("HugePages_Total", "HugePages_Free", "HugePages_Rsvd",
                                       "HugePages_Surp") else ""
    if f"iodrift_meminfo_{name}{suffix}" not in metrics:
        fail(f"meminfo field {field} not exported as iodrift_meminfo_{name}{suffix}")

if metrics["iodrift_meminfo_MemTotal_bytes"] != after["MemTotal"]:
    fail("MemTotal differs from /proc/meminfo")
free = metrics["iodrift_meminfo_MemFree_bytes"]
lo, hi = sorted([before["MemFree"], after["MemFree"]])
if not lo - (64 << 20) <= free <= hi + (64 << 20):
    fail(f"MemFree {free} not near /proc/meminfo {before['MemFree']}..{after['MemFree']}")

btime = next(int(l.split()[1]) for l in open("/proc/stat") if l.startswith("btime "))
if metrics["iodrift_boot_time_seconds"] != btime:
    fail("boot time differs from /proc/stat btime")
boot_id = open("/proc/sys/kernel/random/boot_id").read().strip()
if f'iodrift_boot_info{{boot_id="{boot_id}"}}' not in metrics:
    fail("boot id differs")
uptime = float(open("/proc/uptime").read().split()[0])
if abs(metrics["iodrift_uptime_seconds"] - uptime) > 30:
    fail("uptime not within 30 s of /proc/uptime")

zones = [l for l in open("/proc/buddyinfo") if l.startswith("Node")]
orders = len(zones[0].split()) - 4
series = [s for s in metrics if s.startswith("iodrift_buddyinfo_free_blocks{")]
if len(series) != len(zones) * orders:
    fail(f"buddyinfo: {len(series)} series for {len(zones)} zones x {orders} orders")

for collector in ["meminfo", "vmstat", "buddyinfo", "boot", "dentries", "pressure"]:
    if metrics.get(f'iodrift_collector_success{{collector="{collector}"}}') != 1:
        fail(f"collector {collector} not successful on the live /proc")
print(f"ok: {len(metrics)} series, values match /proc")
