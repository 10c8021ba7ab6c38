#!/usr/bin/env python3
"""The dashboards against Grafana's published schema.

Installs the pinned `@grafana/schema` and `typescript` (tests/dashboards/schema/package.json and
package-lock.json, `npm ci` from the npm registry) into a work directory (argument 1, default a
temporary one; CTest passes one under the build tree so the install is reused), generates one
TypeScript file per dashboard with schema/gen_schema_check.mjs (the dashboard JSON assigned to the
schema's `Dashboard` type, each panel to its panel plugin's `Options`/`FieldConfig`, enums as
unions of their values, Prometheus queries as the data source's query type) and runs
`tsc --noEmit`. Every tsc error is a finding; the test fails on any and prints them by dashboard.

Exit 77 (CTest: skipped) when node or npm is not installed or the npm registry cannot be reached;
a failure instead under IODRIFT_CI_GUARANTEED=1 (CI: tools/dev.sh installs node and npm, and the
registry is reachable there).
Usage: python3 tests/dashboards/schema_check.py [WORKDIR] [DASHBOARD.json ...]
"""
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from iodrift_test.skip import skip_guaranteed

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
SCHEMA_DIR = os.path.join(HERE, "schema")


def same_file(a, b):
    try:
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def main(argv):
    work = argv[1] if len(argv) > 1 else tempfile.mkdtemp(prefix="iodrift-schema-check-")
    dashboards = argv[2:] or sorted(glob.glob(os.path.join(REPO, "dashboards", "*.json")))
    for tool in ("node", "npm"):
        if not shutil.which(tool):
            skip_guaranteed("%s not installed (the schema check needs node and npm)" % tool)
    os.makedirs(work, exist_ok=True)
    # (Re)install when the pinned versions changed since the last run in this work dir.
    fresh = all(same_file(os.path.join(SCHEMA_DIR, f), os.path.join(work, f))
                for f in ("package.json", "package-lock.json"))
    tsc = os.path.join(work, "node_modules", ".bin", "tsc")
    if not (fresh and os.access(tsc, os.X_OK)):
        for f in ("package.json", "package-lock.json", "tsconfig.json"):
            shutil.copy(os.path.join(SCHEMA_DIR, f), os.path.join(work, f))
        res = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
                             cwd=work, capture_output=True, text=True, timeout=600)
        if res.returncode != 0:
            out = (res.stdout + res.stderr).strip()
            if re.search(r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|network", out):
                skip_guaranteed("npm registry not reachable: " + out.splitlines()[-1])
            print(out[-3000:])
            print("FAILED: npm ci in %s" % work)
            return 1
    shutil.copy(os.path.join(SCHEMA_DIR, "tsconfig.json"), os.path.join(work, "tsconfig.json"))
    gen = os.path.join(work, "gen")
    shutil.rmtree(gen, ignore_errors=True)
    subprocess.run(["node", os.path.join(SCHEMA_DIR, "gen_schema_check.mjs"), gen, *dashboards],
                   check=True)
    res = subprocess.run([tsc, "-p", os.path.join(work, "tsconfig.json"), "--pretty", "false"],
                         cwd=work, capture_output=True, text=True, timeout=600)
    out = res.stdout + res.stderr
    findings = collections.defaultdict(list)
    for line in out.splitlines():
        m = re.match(r"^gen/(\S+?)\.ts\((\d+),\d+\): error (TS\d+: .*)", line)
        if m:
            findings[m.group(1)].append("line %s: %s" % (m.group(2), m.group(3)[:400]))
    with open(os.path.join(work, "node_modules", "@grafana", "schema", "package.json")) as f:
        version = re.search(r'"version":\s*"([^"]+)"', f.read()).group(1)
    total = sum(len(v) for v in findings.values())
    for stem in sorted(findings):
        print("%s.json: %d finding(s)" % (stem.replace("_", "-"), len(findings[stem])))
        for f in findings[stem]:
            print("  " + f)
    if res.returncode != 0 and total == 0:
        print(out[-3000:])
        print("FAILED: tsc exited %d without findings in the generated files" % res.returncode)
        return 1
    if total:
        print("FAILED: %d finding(s) against @grafana/schema %s (generated files in %s)"
              % (total, version, gen))
        return 1
    print("ok: %d dashboard(s) match @grafana/schema %s (tsc --noEmit clean)"
          % (len(dashboards), version))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
