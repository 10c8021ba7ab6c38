#!/usr/bin/env python3
"""/proc with missing pieces: the daemon on a copy of tests/fixtures/proc/local-6.18 without
pressure/ (a kernel without PSI) and without slabinfo (unreadable or absent).

The collectors' own unit tests (tests/collectors/proc/state_collectors_test.cpp) check that
the pressure collector fails on a missing PSI tree and that every collector fails cleanly on an
empty root; this test checks the whole daemon on a root with only some pieces missing:

  * iodrift_collector_success{collector="pressure"} and {collector="slabinfo"} are 0 on every
    scrape, meminfo, vmstat, buddyinfo and boot are 1, and their series carry the fixture's
    values (MemTotal); no iodrift_pressure_* or iodrift_slabinfo_* series are exported;
  * each failing collector is logged once over many scrapes (not once per scrape), and the log
    line says what is missing;
  * putting the files back makes both collectors succeed again on the next scrape, with one
    "recovered" line each.

Needs no root.
"""
import os
import shutil
import tempfile

from iodrift_test import prom
from iodrift_test.daemon import Daemon, scrape
from iodrift_test.skip import fail


source = os.environ["IODRIFT_SOURCE_DIR"]
fixture = os.path.join(source, "tests/fixtures/proc/local-6.18")
config = os.path.join(source, "tests/e2e/no-probes.yaml")
SCRAPES = 10

work = tempfile.mkdtemp(prefix="iodrift-partial-proc-")
try:
    root = os.path.join(work, "proc")
    shutil.copytree(fixture, root)
    shutil.rmtree(os.path.join(root, "pressure"))
    os.unlink(os.path.join(root, "slabinfo"))
    with open(os.path.join(fixture, "meminfo")) as f:
        mem_total = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))

    with Daemon("--config", config, "--proc-root", root) as d:
        for _ in range(SCRAPES):
            samples, _ = scrape(d)
            got = {c: prom.value(samples, "iodrift_collector_success", collector=c)
                   for c in ("pressure", "slabinfo", "meminfo", "vmstat", "buddyinfo", "boot")}
            want = {"pressure": 0, "slabinfo": 0, "meminfo": 1, "vmstat": 1, "buddyinfo": 1,
                    "boot": 1}
            if got != want:
                fail(f"iodrift_collector_success {got}, want {want}")
            leaked = sorted({n for n, _, _ in samples
                             if n.startswith(("iodrift_pressure_", "iodrift_slabinfo_"))})
            if leaked:
                fail(f"series from failing collectors exported: {leaked}")
            if prom.value(samples, "iodrift_meminfo_MemTotal_bytes") != mem_total:
                fail("iodrift_meminfo_MemTotal_bytes is not the fixture's MemTotal")
        log = d.stderr().splitlines()
        for collector, missing in (("pressure", "pressure"), ("slabinfo", "slabinfo")):
            lines = [line for line in log if f"collector={collector} failing" in line]
            if len(lines) != 1:
                fail(f"{len(lines)} 'collector={collector} failing' lines over "
                     f"{SCRAPES} scrapes, want exactly 1: {lines}")
            if missing not in lines[0].split("failing", 1)[1]:
                fail(f"the log line does not say what is missing: {lines[0]}")
            print(lines[0])

        # Put the pieces back: both recover on the next scrape, logged once.
        shutil.copytree(os.path.join(fixture, "pressure"), os.path.join(root, "pressure"))
        shutil.copy(os.path.join(fixture, "slabinfo"), os.path.join(root, "slabinfo"))
        for _ in range(3):
            samples, _ = scrape(d)
            for c in ("pressure", "slabinfo"):
                if prom.value(samples, "iodrift_collector_success", collector=c) != 1:
                    fail(f"{c} did not recover after its files came back")
        log = d.stderr().splitlines()
        for c in ("pressure", "slabinfo"):
            n = sum(1 for line in log if f"collector={c} recovered" in line)
            if n != 1:
                fail(f"{n} 'collector={c} recovered' lines, want 1")
        if d.stop() != 0:
            fail("iodriftd did not exit 0 on SIGTERM")
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
