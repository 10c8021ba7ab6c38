#!/usr/bin/env python3
"""The real binary on a captured proc root, scraped over HTTP, diffed against a recorded file.

Set UPDATE_GOLDEN=1 to rewrite tests/golden/fixture_metrics.txt (then read the diff).
Volatile series (process_*, durations, build revision, and the balloon state, which comes from
the live /sys rather than the proc root) are dropped before the comparison.
"""
import os
import re
import sys

from iodrift_test.daemon import Daemon
from iodrift_test.skip import fail


source = os.environ["IODRIFT_SOURCE_DIR"]
fixture = os.path.join(source, "tests/fixtures/proc/local-6.18")
golden = os.path.join(source, "tests/golden/fixture_metrics.txt")
config = os.path.join(source, "tests/e2e/no-probes.yaml")

_VOLATILE = r"(process_|iodrift_collector_duration_seconds|iodrift_build_info|iodrift_balloon_)"
VOLATILE = re.compile(rf"^{_VOLATILE}|^# (HELP|TYPE) {_VOLATILE}")

with Daemon("--config", config, "--proc-root", fixture) as d:
    status, headers, body = d.get()
    if status != 200:
        fail(f"/metrics answered {status}")
    # The same body once more, gzipped: must decode to identical text.
    status_gz, headers_gz, body_gz = d.get(gzip_ok=True)
    if headers_gz.get("Content-Encoding") != "gzip":
        fail(f"no gzip with Accept-Encoding: gzip; headers {headers_gz}")
    stable = "\n".join(l for l in body.splitlines() if not VOLATILE.match(l)) + "\n"
    stable_gz = "\n".join(l for l in body_gz.splitlines() if not VOLATILE.match(l)) + "\n"
    if stable != stable_gz:
        fail("gzip and plain bodies differ")

if os.environ.get("UPDATE_GOLDEN") == "1":
    with open(golden, "w") as f:
        f.write(stable)
    print(f"rewrote {golden}")
    sys.exit(0)

with open(golden) as f:
    expected = f.read()
if stable != expected:
    import difflib
    diff = "".join(difflib.unified_diff(expected.splitlines(True), stable.splitlines(True),
                                        "golden", "actual", n=1))
    fail("output differs from tests/golden/fixture_metrics.txt "
         "(UPDATE_GOLDEN=1 rewrites it):\n" + diff[:6000])
print(f"ok: {len(stable.splitlines())} lines match the golden file")
