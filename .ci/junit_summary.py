#!/usr/bin/env python3
"""Sums up a ctest run from its JUnit report (`ctest --output-junit FILE`): every skipped test
with its reason (`skipped: NAME: REASON`, then a count), then every failed test with the end of
its output (`=== ci: failed: NAME (the end of its output) ===`, its last 30 non-empty lines,
then a count).

A script test says why in its output (`SKIPPED: reason`, exit 77; the installed tests print
`skip: reason`); a GoogleTest prints `file:line: Skipped`, the message, then `[  SKIPPED ]`.
CI has no skip budget, so this list is how a skip is seen at all; skips on what CI guarantees
already fail the test (IODRIFT_CI_GUARANTEED=1, docs/testing.md "Skips"). The failure tails come
last, so that a CI log cut to its start and end still shows why each failed test failed, even
when ctest's --output-on-failure output of a long test was cut from the middle.

Usage: junit_summary.py JUNIT.xml [...]. Exit 0 (a listing, not a verdict); 2 when a report
cannot be read.
"""
import sys
import xml.etree.ElementTree as ET


def skip_reason(output, fallback):
    """The reason a skipped test gave, or `fallback` when it printed none."""
    lines = [line.rstrip() for line in (output or "").splitlines()]
    for i, line in enumerate(lines):
        if line.endswith(": Skipped") or line == "Skipped":
            message = []
            for follow in lines[i + 1:]:
                if follow.startswith("[  SKIPPED ]"):
                    break
                if follow.strip():
                    message.append(follow.strip())
            if message:
                return " ".join(message)
    for prefix in ("SKIPPED: ", "skip: ", "SKIPPED ", "skipped: "):
        for line in reversed(lines):
            if line.startswith(prefix):
                return line[len(prefix):].strip()
    text = [line.strip() for line in lines if line.strip()]
    return text[-1] if text else fallback


def case_name(case):
    """ctest's name (its classname is the same), or GoogleTest's Suite.Name (classname Suite)."""
    name, suite = case.get("name") or "", case.get("classname") or ""
    return name if not suite or name.startswith(suite) else f"{suite}.{name}"


def skipped_tests(path):
    """[(name, reason)] of the skipped test cases in one JUnit report."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        skipped = case.find("skipped")
        if skipped is None:
            continue
        out.append((case_name(case),
                    skip_reason(case.findtext("system-out"),
                                " ".join((skipped.get("message") or "no reason").split()))))
    return out


TAIL_LINES = 30
TAIL_LINE_CHARS = 400


def failed_tests(path):
    """[(name, last lines of output)] of the failed test cases in one JUnit report."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("failure") is None and case.find("error") is None:
            continue
        # ctest puts the test's output in system-out; GoogleTest's own XML report puts each
        # failed assertion's text in its <failure> elements.
        text = case.findtext("system-out") or "\n".join(
            (f.text or f.get("message") or "") for f in case.iter("failure"))
        lines = [line.rstrip()[:TAIL_LINE_CHARS] for line in text.splitlines() if line.strip()]
        out.append((case_name(case), lines[-TAIL_LINES:]))
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    skips, failures = [], []
    for path in argv[1:]:
        try:
            skips += skipped_tests(path)
            failures += failed_tests(path)
        except (OSError, ET.ParseError) as e:
            print(f"junit_summary: cannot read {path}: {e}", file=sys.stderr)
            return 2
    for name, reason in sorted(skips):
        print(f"skipped: {name}: {reason}")
    print(f"=== ci: {len(skips)} test(s) skipped ===")
    for name, tail in sorted(failures):
        print(f"=== ci: failed: {name} (the end of its output) ===")
        for line in tail:
            print(f"  {line}")
    if failures:
        print(f"=== ci: {len(failures)} test(s) failed ===")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
