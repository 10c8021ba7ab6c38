#!/usr/bin/env python3
"""`promtool check metrics` on a live scrape and on a fixture scrape.

The exposition must parse, and promtool's lint must find nothing — except its two *style* rules
(camelCase, "abbreviated units") on families whose names are the kernel's own field names, which
docs/metrics.md fixes on purpose (`iodrift_meminfo_MemTotal_bytes`, as node_exporter's
`node_memory_MemTotal_bytes`; `iodrift_vmstat_nr_sec_page_table_pages`). Any other finding, or
those findings on any other family, fails the test.
"""
import re
import os
import shutil
import subprocess

from iodrift_test.daemon import Daemon
from iodrift_test.skip import fail, skip_guaranteed


promtool = shutil.which("promtool")
if not promtool:
    skip_guaranteed("promtool not installed (Debian package prometheus)")

source = os.environ["IODRIFT_SOURCE_DIR"]
config = os.path.join(source, "tests/e2e/no-probes.yaml")
roots = ["/proc", os.path.join(source, "tests/fixtures/proc/local-6.18")]
for root in roots:
    with Daemon("--config", config, "--proc-root", root) as d:
        status, _, body = d.get()
        if status != 200:
            fail(f"/metrics answered {status}")
    res = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True)
    findings = [l for l in (res.stdout + res.stderr).splitlines() if l.strip()]
    allowed = re.compile(r"^iodrift_(meminfo|vmstat)_\w+ metric names should (be written in "
                         r"'snake_case' not 'camelCase'|not contain abbreviated units)$")
    other = [l for l in findings if not allowed.match(l)]
    if other:
        fail(f"promtool check metrics on proc root {root}:\n" + "\n".join(other[:50]))
    if res.returncode not in (0, 3) or (res.returncode == 3 and not findings):
        fail(f"promtool exited {res.returncode}: {res.stderr[:2000]}")
    print(f"ok: promtool: {len(body.splitlines())} lines parse; {len(findings)} style findings, "
          f"all on kernel-named families")
