#!/usr/bin/env python3
"""The repository stands alone and speaks about the product (CTest `lint.leftovers`).

Every tracked text file (source, tests, docs, build files):
  * names no path outside the repository: no sibling folder (`../` + `shared`) and no absolute
    development path (`/` + `work/`): a clone from a forge has neither;
  * carries no issue-number reference (`issue 17`, `issue #7`, a bare `#13`): say what the thing
    is instead (an upstream reference such as `systemd/systemd#9503` or `PR #1319` is fine);
  * has no words about how the work was organised rather than about the product (`this session`,
    `the brief`, `filed by`, ...).
And every commit after BASE (the last commit before this lint existed; older history is what it
is) has a subject of at most 72 characters. Without that history (a shallow clone, a source
tarball) that one check is skipped, saying why; the file checks still run.

Usage: leftovers_test.py SOURCE_DIR [--base COMMIT]. Exit 0 clean, 1 findings, 77 only when not
even the file list can be read (not a git checkout).
"""
import argparse
import os
import re
import subprocess
import sys

# The tip of main's history when this lint arrived; some older subjects run longer than 72.
BASE = "71c28e257509"
MAX_SUBJECT = 72
SELF = os.path.relpath(os.path.abspath(__file__), os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))

# Built from pieces so that this file does not match itself.
OUTSIDE_PATHS = re.compile(re.escape("../" + "shared") + r"|(?<![\w.])" + re.escape("/" + "work/"))
# A bare `#13` counts; CSS and chart colours (`color:#444`, `"#555555"`) and upstream references
# (`owner/repo#9503`, `PR #1319`, ctest's `Test #15:`) do not.
ISSUE_REFS = re.compile(r"(?i)\bissues?\s+#?\d+|(?<![\w/&#:\"'])(?<!PR )(?<!Test )#\d+\b")
# "Round" and "session" are also product words (a collector round, a diagnose session), so only
# the phrases that speak of the work itself.
PROCESS_WORDS = re.compile(
    r"(?i)\b(?:(?:in|during) (?:this|that|an earlier|the previous|a later) session"
    r"|(?:earlier|previous) sessions?|hostile round|(?:earlier|previous) rounds? of (?:work|review)"
    r"|filed by|the brief|the integrator|turn \d+)\b")
CHECKS = (("path outside the repository", OUTSIDE_PATHS),
          ("issue-number reference", ISSUE_REFS),
          ("words about how the work was organised", PROCESS_WORDS))


def git(source, *args):
    return subprocess.run(["git", "-C", source, *args], capture_output=True, text=True)


def file_findings(source, files):
    findings = []
    for rel in files:
        if rel == SELF:
            continue
        try:
            with open(os.path.join(source, rel), "rb") as f:
                data = f.read()
        except OSError:
            continue  # listed but absent (a sparse or partial checkout)
        if b"\0" in data:
            continue  # binary
        text = data.decode("utf-8", errors="replace")
        for lineno, line in enumerate(text.splitlines(), 1):
            for what, rx in CHECKS:
                m = rx.search(line)
                if m:
                    findings.append(f"{rel}:{lineno}: {what} ({m.group(0)!r}): {line.strip()[:120]}")
    return findings


def subject_findings(source, base):
    """(findings, None) or (None, why the check cannot run here)."""
    if git(source, "rev-parse", "--verify", "--quiet", base + "^{commit}").returncode != 0:
        shallow = git(source, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
        return None, (f"commit {base} is not in this clone"
                      + (" (a shallow clone)" if shallow else "") + ": subjects not checked")
    log = git(source, "log", "--format=%h %s", f"{base}..HEAD")
    if log.returncode != 0:
        return None, "git log failed: " + log.stderr.strip()
    findings = []
    for line in log.stdout.splitlines():
        sha, _, subject = line.partition(" ")
        if len(subject) > MAX_SUBJECT:
            findings.append(f"commit {sha}: subject is {len(subject)} characters "
                            f"(at most {MAX_SUBJECT}): {subject}")
    return findings, None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source")
    ap.add_argument("--base", default=BASE)
    args = ap.parse_args(argv)
    listed = git(args.source, "ls-files", "-z")
    if listed.returncode != 0:
        print("SKIPPED: not a git checkout, no list of tracked files: " + listed.stderr.strip())
        return 77
    files = [f for f in listed.stdout.split("\0") if f]
    findings = file_findings(args.source, files)
    subjects, why_not = subject_findings(args.source, args.base)
    if subjects is None:
        print("note: " + why_not)
    else:
        findings += subjects
    for f in findings:
        print("error: " + f)
    if findings:
        print(f"leftovers: {len(findings)} finding(s) in {len(files)} tracked files")
        return 1
    checked = f"{len(files)} tracked files" + ("" if subjects is None else
                                                f", commit subjects since {args.base}")
    print(f"leftovers: clean: {checked}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
