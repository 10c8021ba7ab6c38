#!/usr/bin/env python3
"""The docs set holds together: README.md is a short front page that links every docs/*.md, every
relative link in README.md and docs/*.md reaches an existing file (and heading anchor), every
alert's runbook_url names an existing heading, and no product doc names an internal work item
(an issue number, an "item N" of one).

Product docs: README.md, docs/*.md, systemd/README.md, dashboards/README.md, tests/bench/README.md,
tests/lib/README.md, the man pages (systemd/*.8, systemd/*.1), config/iodrift.yaml, the dashboards
and rule files (dashboards/*.json, dashboards/prometheus/**/*.yml) and examples/*/*.yml.
Fails naming every problem. Usage: docs_lint_test.py SOURCE_DIR
"""
import glob
import os
import re
import sys

src = sys.argv[1]
MAX_README_LINES = 300
RUNBOOK_PREFIX = "https://github.com/iodrift/iodrift/blob/main/"
problems = []


def read(rel):
    with open(os.path.join(src, rel), encoding="utf-8") as f:
        return f.read()


def outside_code(text):
    """The lines of a Markdown text outside fenced code blocks, inline code spans blanked."""
    lines, fence = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
            lines.append("")
            continue
        lines.append("" if fence else re.sub(r"`[^`]*`", "``", line))
    return lines


# Anchors are computed from the raw heading text (code spans included), as GitHub does.
def raw_anchors(rel):
    seen, result, fence = {}, set(), False
    for line in read(rel).split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        m = None if fence else re.match(r"^#{1,6} +(.*?) *#*$", line)
        if not m:
            continue
        a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(a, 0)
        seen[a] = n + 1
        result.add(a if n == 0 else f"{a}-{n}")
    return result


docs = sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md")))
if len(docs) < 5:
    print(f"FAIL: found only {docs} under docs/; the docs set moved?")
    sys.exit(1)
doc_set = ["README.md"] + docs

# 1. README.md is a front page.
readme = read("README.md")
n_lines = readme.count("\n")
if n_lines >= MAX_README_LINES:
    problems.append(f"README.md has {n_lines} lines; the front page stays under {MAX_README_LINES} "
                    "(move reference text into docs/)")

# 2. Every docs file is linked from README.md.
readme_targets = set()
for line in outside_code(readme):
    for target in re.findall(r"\]\(([^)\s]+)\)", line):
        readme_targets.add(target.split("#", 1)[0])
for doc in docs:
    if doc not in readme_targets:
        problems.append(f"README.md does not link {doc}")

# 3. Every relative link reaches a file, and its anchor a heading of that file.
anchor_cache = {}
checked = 0
for rel in doc_set:
    base = os.path.dirname(rel)
    for lineno, line in enumerate(outside_code(read(rel)), 1):
        for target in re.findall(r"\]\(([^)\s]+)(?: \"[^\"]*\")?\)", line):
            if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(base, path)) if path else rel
            checked += 1
            if dest.startswith(".."):
                problems.append(f"{rel}:{lineno}: link {target!r} leaves the repository")
                continue
            if not os.path.exists(os.path.join(src, dest)):
                problems.append(f"{rel}:{lineno}: link {target!r}: {dest} does not exist")
                continue
            if anchor and dest.endswith(".md"):
                if dest not in anchor_cache:
                    anchor_cache[dest] = raw_anchors(dest)
                if anchor not in anchor_cache[dest]:
                    problems.append(f"{rel}:{lineno}: link {target!r}: {dest} has no heading "
                                    f"with anchor #{anchor}")

# 4. Every alert's runbook_url names a heading of a docs file.
runbooks = 0
for rules in glob.glob(os.path.join(src, "dashboards", "prometheus", "*.rules.yml")):
    for url in re.findall(r"runbook_url:\s*\"?([^\"\s]+)", read(os.path.relpath(rules, src))):
        runbooks += 1
        if not url.startswith(RUNBOOK_PREFIX) or "#" not in url:
            problems.append(f"{os.path.relpath(rules, src)}: runbook_url {url!r} is not "
                            f"{RUNBOOK_PREFIX}FILE#ANCHOR")
            continue
        path, anchor = url[len(RUNBOOK_PREFIX):].split("#", 1)
        if not os.path.exists(os.path.join(src, path)):
            problems.append(f"{os.path.relpath(rules, src)}: runbook_url {url!r}: {path} does not exist")
        elif anchor not in raw_anchors(path):
            problems.append(f"{os.path.relpath(rules, src)}: runbook_url {url!r}: no heading "
                            f"#{anchor} in {path}")
if runbooks == 0:
    problems.append("no runbook_url found in dashboards/prometheus/*.rules.yml; the extraction broke")

# 5. No internal work items in product docs.
product = doc_set + ["systemd/README.md", "dashboards/README.md", "tests/bench/README.md",
                     "tests/lib/README.md", "config/iodrift.yaml"]
for pattern in ("systemd/*.8", "systemd/*.1", "dashboards/*.json", "dashboards/prometheus/*.yml",
                "dashboards/prometheus/tests/*.yml", "examples/*/*.yml"):
    product += sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, pattern)))
work_item = re.compile(r"\b(issues? \d+|item \d+|issue's|engineer\w*)\b", re.I)
for rel in product:
    for lineno, line in enumerate(read(rel).split("\n"), 1):
        m = work_item.search(line)
        if m:
            problems.append(f"{rel}:{lineno}: names an internal work item ({m.group(0)!r}): "
                            f"{line.strip()[:100]}")

for p in problems:
    print("FAIL:", p)
if problems:
    sys.exit(1)
print(f"ok: README.md {n_lines} lines, {len(docs)} docs files linked, {checked} relative links "
      f"and {runbooks} runbook URLs resolve, no work items in {len(product)} product files")
