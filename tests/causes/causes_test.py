#!/usr/bin/env python3
"""The cause zoo: real slowdowns with a known cause, and the verdict iodrift gives each run.

For every case (cases.py) a real iodriftd runs a small probe set on its own loop device, FUSE
file or sshfs mount; once every probe has its baseline the cause is induced and the next
IODRIFT_CAUSES_RUNS (default 3) runs of each probe are read one by one from /api/v1/probes (the
probe's "verdict" after each run), then the cause is removed. Printed: a confusion matrix
(case x verdict; "no slowdown" = undetermined on a run at >= 90 % of baseline) and the evidence of
every run (ratio, verdict line, time parts) as JSON lines.

Fails when any run names a wrong cause (a cause other than the induced one; for healthy runs,
any cause), and when a case's induced slowdown lasted (a run and the 2 before it of its probe
below 90 % of baseline) but more than half of those lasting runs were undetermined ("UNNAMED").
A cause named in fewer than 9 of 10 runs is reported in the matrix ("below 9/10"). A case this
machine cannot produce says skipped with its figures; the test is skipped (77) only when every
case was. kernel.task_delayacct is left as found (stock mode); IODRIFT_CAUSES_DELAYACCT=1
switches delay accounting on for the run and restores it. IODRIFT_CAUSES_CASES=a,b runs the
named cases only; IODRIFT_CAUSES_EVIDENCE=FILE also writes the per-run evidence there.

Needs root, losetup, mkfs.ext4 (faultfs, sshfs/sshd for their cases); else exit 77.
"""
import contextlib
import json
import os
import signal
import sys

import zoo
from cases import CASES
from iodrift_test import delayacct
from iodrift_test.devices import Scratch, need_root
from iodrift_test.skip import fail, skip

need_root("mkfs.ext4", "losetup")


@contextlib.contextmanager
def delayacct_mode():
    """Yields how the run sees delay accounting, as printed: "off (as found: ...)", "on (as
    found)", "on (IODRIFT_CAUSES_DELAYACCT=1)" or "off (why it could not be switched on)"."""
    if os.environ.get("IODRIFT_CAUSES_DELAYACCT", "0") != "1":
        try:
            with open(delayacct.SYSCTL) as f:
                found = f.read().strip()
        except OSError as e:
            found = e.strerror
        yield "on (as found)" if found == "1" else f"off (as found: task_delayacct {found})"
        return
    with delayacct.enabled() as no_delayacct:
        yield f"off ({no_delayacct})" if no_delayacct else "on (IODRIFT_CAUSES_DELAYACCT=1)"


def main():
    # CTest's timeout (SIGTERM) unwinds like an exception: every case's cleanup runs.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(f"signal {signum}"))
    wanted = [c for c in os.environ.get("IODRIFT_CAUSES_CASES", "").split(",") if c]
    unknown = [w for w in wanted if w not in {c.name for c in CASES}]
    if unknown:
        fail(f"IODRIFT_CAUSES_CASES names unknown case(s) {unknown}; cases: "
             f"{', '.join(c.name for c in CASES)}")
    outcomes = []
    evidence_path = os.environ.get("IODRIFT_CAUSES_EVIDENCE")
    # Stock mode by default: kernel.task_delayacct is left as found (the kernel's default, and
    # Debian's, is 0), so the verdicts are those of a machine nobody tuned. With
    # IODRIFT_CAUSES_DELAYACCT=1 delay accounting is switched on for the run (and restored after),
    # as docs/reading-drift.md tells an operator who wants the full off-CPU split.
    with delayacct_mode() as mode:
        print(f"delay accounting: {mode}")
        for case in CASES:
            if wanted and case.name not in wanted:
                continue
            print(f"== {case.name}: inducing {case.expected or 'nothing'}, {zoo.RUNS} runs", flush=True)
            with Scratch("causes-" + case.name.replace("_", "-")) as s:
                o = zoo.run_case(case, s)
            outcomes.append(o)
            if o.skipped:
                print(f"   skipped: {o.skipped}")
            elif o.note:
                print(f"   {o.note}")
            for r in o.runs:
                ratio = f"{r.ratio:.2f}" if r.ratio is not None else "-"
                print(f"   {r.probe}: ratio {ratio}: {r.text}")
            if evidence_path:
                with open(evidence_path, "a") as f:
                    for r in o.runs:
                        f.write(json.dumps({"case": case.name, "expected": case.expected,
                                            "probe": r.probe, "verdict": r.verdict,
                                            "run": r.evidence}) + "\n")
    print()
    print(zoo.matrix(outcomes))
    wrong = [(o.case.name, r.probe, r.text) for o in outcomes if not o.skipped for r in o.wrong()]
    unnamed = [(o.case.name, len(o.lasting()), r.probe, r.text) for o in outcomes
               for r in o.unnamed()]
    if wrong or unnamed:
        fail("\n".join(
            (["runs named a wrong cause:"] if wrong else [])
            + [f"  {c} / {p}: {t}" for c, p, t in wrong]
            + (["cases whose induced slowdown lasted left most lasting runs undetermined:"]
               if unnamed else [])
            + [f"  {c} / {p} (of {n} lasting runs): {t}" for c, n, p, t in unnamed]))
    if outcomes and all(o.skipped for o in outcomes):
        skip("every case was skipped: " + "; ".join(f"{o.case.name}: {o.skipped}"
                                                      for o in outcomes))
    print("ok")


main()
