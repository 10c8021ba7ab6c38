"""Re-points a Python test written against the old helper modules (tests/e2e/harness.py,
tests/reliability/rel.py, tests/security/sec_util.py, tests/dbus/dbus_harness.py,
tests/dbus/wire.py, tests/fuse/faultutil.py, tests/fuse/faultfs.py) to iodrift_test, in place, keeping continuation
lines aligned to their (moved) brackets. For merging branches that still use them; delete this
file once none do.

    python3 tests/lib/migrate_old_helpers.py tests/security/some_new_test.py ...

It expects the usual spellings: `import harness`, `import rel` / `from rel import fu, harness`,
`import faultutil as fu` / `from faultutil import harness`, `import dbus_harness as dh` /
`from dbus_harness import harness`, `import wire`, `import faultfs`, `from sec_util import ...`,
`from harness import ...`. It prints what it could not map; run pyflakes3 on the result."""
import io
import re
import sys
import tokenize

NAMED = {  # old qualified name -> (module, replacement)
    "harness.fail": ("skip", "fail"), "harness.skip": ("skip", "skip"),
    "harness.SKIP": ("skip", "SKIP"), "harness.Daemon": ("daemon", "Daemon"),
    "harness.binary": ("daemon", "binary"),
    "harness.parse_metrics": ("prom", "prom.parse_metrics"),
    "fu.write_config": ("config", "write_temp_config"), "fu.parse": ("prom", "prom.parse"),
    "fu.value": ("prom", "prom.value"), "fu.runs": ("prom", "prom.runs"),
    "fu.scrape": ("daemon", "scrape"), "fu.wait_for": ("wait", "wait_for"),
    "fu.threads": ("fuse", "fuse.threads"), "fu.leader_state": ("fuse", "fuse.leader_state"),
    "fu.once_json": ("daemon", "once_json"),
    "rel.need_root": ("devices", "need_root"), "rel.sh": ("devices", "sh"),
    "rel.Scratch": ("devices", "Scratch"), "rel.sha256_file": ("devices", "sha256_file"),
    "rel.tree_digest": ("devices", "tree_digest"), "rel.diff_trees": ("devices", "diff_trees"),
    "rel.write_config": ("config", "write_config"),
    "dh.need_tools": ("skip", "need_tools"), "dh.ctl_binary": ("daemon", "ctl_binary"),
    "dh.write_config": ("dbus", "dbus.write_two_probe_config"),
    "dh.NAME": ("dbus", "NAME"), "dh.PATH": ("dbus", "PATH"), "dh.IFACE": ("dbus", "IFACE"),
    "rel.harness.": (None, "harness."), "rel.fu.": (None, "fu."),
    "dh.": ("dbus", "dbus."), "faultfs.": ("fuse", "fuse."), "wire.": ("dbus_wire", "dbus_wire."),
}
ORDER = sorted(NAMED, key=lambda k: -len(k))
PAT = re.compile(r"(?<![\w.])(" + "|".join(re.escape(k) + (r"\b" if not k.endswith(".") else "")
                                           for k in ORDER) + ")")

FROM_IMPORT = {  # `from sec_util|harness import NAME` -> module
    "fail": "skip", "skip": "skip", "SKIP": "skip", "need": "skip", "binary": "daemon",
    "Daemon": "daemon", "ConfDaemon": "daemon", "parse_metrics": "prom", "make_cert": "web",
    "bcrypt_hash": "web", "curl": "web",
}


def migrate(path):
    src = open(path).read()
    extra = {}
    out = []
    for line in src.split("\n"):
        m = re.match(r"^from (sec_util|harness) import ([\w, ]+?)\s*(#.*)?$", line)
        if not m:
            out.append(line)
            continue
        for name in (n.strip() for n in m.group(2).split(",")):
            if name not in FROM_IMPORT:
                print(f"{path}: cannot map {m.group(1)}.{name}", file=sys.stderr)
                continue
            extra.setdefault(FROM_IMPORT[name], set()).add(name)
    src = "\n".join(out)
    return src, extra


def _migrate_rest(path, src, from_named):
    # two passes: rel.harness.X -> harness.X, then the rest
    for _ in range(2):
        lines = src.split("\n")
        subs = {}
        used = set()
        new_lines = []
        for r, line in enumerate(lines):
            out, pos, deltas = "", 0, []
            for m in PAT.finditer(line):
                old = m.group(1)
                mod, new = NAMED[old]
                if mod is None and _ == 1:
                    continue
                if mod is not None and _ == 0:
                    continue
                out += line[pos:m.start()] + new
                deltas.append((m.start(), len(new) - len(old)))
                pos = m.end()
                used.add((mod, new))
            new_lines.append(out + line[pos:])
            subs[r] = deltas
        # bracket alignment from the original text
        shift = [0] * len(lines)
        stack = []
        toks = tokenize.generate_tokens(io.StringIO(src).readline)
        first_on_row = {}
        for t in toks:
            r, c = t.start[0] - 1, t.start[1]
            if r not in first_on_row and t.type not in (tokenize.NL, tokenize.NEWLINE,
                                                        tokenize.COMMENT, tokenize.INDENT,
                                                        tokenize.DEDENT):
                first_on_row[r] = (c, list(stack))
            if t.type == tokenize.OP and t.string in "([{":
                stack.append((r, c))
            elif t.type == tokenize.OP and t.string in ")]}":
                stack.pop()
        for r in sorted(first_on_row):
            c, st = first_on_row[r]
            if not st:
                continue
            r0, c0 = st[-1]
            if r0 == r or c != c0 + 1:
                continue
            newc0 = c0 + shift[r0] + sum(d for col, d in subs[r0] if col < c0)
            shift[r] = newc0 - c0
        for r in range(len(lines)):
            if shift[r] and new_lines[r].strip():
                ind = len(new_lines[r]) - len(new_lines[r].lstrip())
                new_lines[r] = " " * (ind + shift[r]) + new_lines[r].lstrip()
        src = "\n".join(new_lines)
        if _ == 1:
            used_final = used

    out = []
    for line in src.split("\n"):
        s = line.strip()
        if s.startswith("sys.path.insert("):
            continue
        if re.match(r"^(import (harness|rel|faultutil as fu|dbus_harness as dh|wire|faultfs)\b|"
                    r"from (rel|faultutil|dbus_harness) import (fu, )?harness\b)", s):
            continue
        out.append(line)
    src = "\n".join(out)
    left = re.findall(r"(?<![\w.])(harness|rel|fu|dh|faultfs|wire)\.\w+", src)
    if left:
        print(f"{path}: left over: {sorted(set(left))}", file=sys.stderr)
    modules, named = set(), {m: set(n) for m, n in from_named.items()}
    for mod, new in used_final:
        if "." in new:
            modules.add(new.split(".")[0])
        else:
            named.setdefault(mod, set()).add(new)
    imports = [f"from iodrift_test import {', '.join(sorted(modules))}"] if modules else []
    imports += [f"from iodrift_test.{m} import {', '.join(sorted(n))}"
                for m, n in sorted(named.items())]
    lines = src.split("\n")
    last = max(i for i, l in enumerate(lines) if re.match(r"^(import |from \S+ import )", l))
    lines[last + 1:last + 1] = ([""] + imports) if imports else []
    src = "\n".join(lines)
    src = re.sub(r"\n\n\n+(from iodrift_test)", r"\n\n\1", src)
    if not re.search(r"(?<![\w.])sys\.", src):
        src = src.replace("import sys\n", "", 1)
    src = re.sub(r"\n{4,}", "\n\n\n", src)
    open(path, "w").write(src)


for path in sys.argv[1:]:
    src, from_named = migrate(path)
    _migrate_rest(path, src, from_named)

