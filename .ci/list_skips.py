#!/usr/bin/env python3
"""Lists every test a ctest run skipped, with its reason, from ctest's JUnit report
(`ctest --output-junit FILE`): `skipped: NAME: REASON`, then a count.

A script test says why in its output (`SKIPPED: reason`, exit 77; the installed tests print
`skip: reason`); a GoogleTest prints `file:line: Skipped`, the message, then `[  SKIPPED ]`.
CI has no skip budget, so this list is how a skip is seen at all; skips on what CI guarantees
already fail the test (IODRIFT_CI_GUARANTEED=1, docs/testing.md "Skips").

Usage: list_skips.py JUNIT.xml [...]. Exit 0 (a listing, not a verdict); 2 when a report cannot
be read.
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


def skipped_tests(path):
    """[(name, reason)] of the skipped test cases in one JUnit report."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        skipped = case.find("skipped")
        if skipped is None:
            continue
        out.append((case.get("name"),
                    skip_reason(case.findtext("system-out"), skipped.get("message") or "no reason")))
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    total = 0
    for path in argv[1:]:
        try:
            skips = skipped_tests(path)
        except (OSError, ET.ParseError) as e:
            print(f"list_skips: cannot read {path}: {e}", file=sys.stderr)
            return 2
        for name, reason in sorted(skips):
            print(f"skipped: {name}: {reason}")
        total += len(skips)
    print(f"=== ci: {total} test(s) skipped ===")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
