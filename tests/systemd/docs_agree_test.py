#!/usr/bin/env python3
"""Help, man pages and the docs agree.

Extracted from the code and the binaries' --help:
  - HTTP endpoints: every server_.Route("PATH", ...) in daemon/*.cpp;
  - iodriftd options: every --flag in `iodriftd --help`;
  - iodriftctl commands and options: the "Commands:" and "Options:" parts of `iodriftctl --help`,
    and each command's --json when its own help offers it;
  - exit statuses: the numbers of the "Exit status" lines of both --help texts.
Each must appear in iodriftd.8 / iodriftctl.1 (roff escapes undone) and in the docs set (README.md
and docs/*.md); the endpoints also in `iodriftd --help`. Fails naming every missing item.
Usage: docs_agree_test.py SOURCE_DIR IODRIFTD IODRIFTCTL
"""
import glob
import os
import re
import subprocess
import sys

src, iodriftd, iodriftctl = sys.argv[1:4]
problems = []


def run(*args):
    res = subprocess.run(args, capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        print(f"FAIL: {' '.join(args)} exited {res.returncode}: {res.stderr}")
        sys.exit(1)
    return res.stdout


def roff_text(path):
    with open(path) as f:
        text = f.read()
    text = text.replace("\\-", "-").replace("\\fB", "").replace("\\fR", "").replace("\\fI", "")
    text = re.sub(r"^\.(B|I|BR|RB|BI|IB|IR|RI|TP|br)\b ?", "", text, flags=re.M)
    return text.replace('"', "")


def section(text, title):
    m = re.search(rf"^{title}:?\n(.*?)(?:\n\n|\Z)", text, flags=re.M | re.S)
    return m.group(1) if m else ""


def need(item, where, text, name):
    if item not in text:
        problems.append(f"{name} lacks {item!r} ({where})")


DOCS = "the docs (README.md, docs/*.md)"
readme = ""
for path in [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md"))):
    with open(path) as f:
        readme += f.read() + "\n"
man8 = roff_text(os.path.join(src, "systemd/iodriftd.8"))
man1 = roff_text(os.path.join(src, "systemd/iodriftctl.1"))
d_help = run(iodriftd, "--help")
c_help = run(iodriftctl, "--help")

# Endpoints from the code.
endpoints = set()
for path in glob.glob(os.path.join(src, "daemon", "*.cpp")):
    with open(path) as f:
        endpoints.update(re.findall(r'\.Route\(\s*"([^"]+)"', f.read()))
if len(endpoints) < 2:
    print(f"FAIL: found only {sorted(endpoints)} routes in daemon/*.cpp; the extraction broke")
    sys.exit(1)
for ep in sorted(endpoints):
    need(ep, "endpoint in the code", re.sub(r"\s+", " ", d_help), "iodriftd --help")
    # In the man page an endpoint is a tagged paragraph of its own.
    if not re.search(rf"^{re.escape(ep)}\s*$", man8, flags=re.M):
        problems.append(f"iodriftd.8 lacks endpoint {ep!r} (ENDPOINTS)")
    need(f"`{ep}", "endpoint in the code", readme, DOCS)

# iodriftd options.
for flag in sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", d_help))):
    need(flag, "iodriftd --help", man8, "iodriftd.8")
    need(flag, "iodriftd --help", readme, DOCS)

# iodriftctl commands and options.
commands = re.findall(r"^  ([a-z]+)\b", section(c_help, "Commands"), flags=re.M)
if len(commands) < 5:
    print(f"FAIL: found only {commands} commands in iodriftctl --help")
    sys.exit(1)
for cmd in commands:
    if not re.search(rf"^{cmd}\b", man1, flags=re.M):
        problems.append(f"iodriftctl.1 lacks command {cmd!r}")
    # Docs: `iodriftctl CMD` in the text or CMD as a line of its iodriftctl synopsis block.
    if not re.search(rf"(iodriftctl {cmd}\b|^ +{cmd}\b)", readme, flags=re.M):
        problems.append(f"{DOCS} lack iodriftctl command {cmd!r}")
    sub_help = run(iodriftctl, cmd, "--help")
    if "--json" in sub_help.split("\n")[0]:
        if not re.search(rf"^{cmd} .*--json", man1, flags=re.M):
            problems.append(f"iodriftctl.1 lacks '{cmd} --json'")
        if not re.search(rf"\b{cmd}( NAME)? \[?--json", readme):
            problems.append(f"{DOCS} lack '{cmd} [--json]'")
for flag in sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", section(c_help, "Options")))):
    need(flag, "iodriftctl --help", man1, "iodriftctl.1")

# Exit statuses.
for name, help_text, man in (("iodriftd", d_help, man8), ("iodriftctl", c_help, man1)):
    status = re.search(r"Exit status:?\s*\n?(.*?)(?:\n\n|\Z)", help_text, flags=re.S)
    codes = set(re.findall(r"\b(\d+)\b", status.group(1) if status else ""))
    if not codes:
        problems.append(f"{name} --help states no exit status")
    exit_man = man.split("SH EXIT STATUS", 1)[-1].split(".SH", 1)[0]
    for code in sorted(codes):
        if not re.search(rf"^{code}\s*$", exit_man, flags=re.M):
            problems.append(f"{name} man page lacks exit status {code} under EXIT STATUS")

for p in problems:
    print("FAIL:", p)
if problems:
    sys.exit(1)
print(f"ok: {len(endpoints)} endpoints, {len(commands)} iodriftctl commands agree")
