#!/usr/bin/env python3
"""Lint iodrift's Grafana dashboards (and the metric names in its Prometheus rules).

What it checks, per dashboard file:
  * valid JSON with the fields Grafana needs to import it (title, panels, schemaVersion for Grafana
    9/10, templating, `id` null), the last-7-days default and refresh off;
  * `uid` set and stable: equal to the uid this script expects for that file (EXPECTED_UIDS), so a
    re-export from Grafana that invents a new uid - and breaks every link and alert annotation that
    points at /d/<uid> - fails here;
  * a `datasource` variable of type prometheus plus `instance` and `probe` variables, and every panel,
    target, query variable and annotation using `${datasource}`;
  * a unit (fieldConfig.defaults.unit) on every panel except text and row panels;
  * every metric name in every expression (panel targets, annotations, variable queries, and the
    rules files) is one docs/metrics.md defines, one a recording rule defines, or a Prometheus
    built-in (up, ALERTS, ...); label names in selectors belong to that metric, and label values of
    enumerated labels (kind, result, resource, mode, state, op) are valid; meminfo and vmstat field
    names are checked against the /proc fixtures when they are available;
  * every `$variable` an expression uses is defined;
  * with --promql (the default) every expression, variables substituted, parses: they are written
    into a temporary rules file as recording rules and `promtool check rules` judges them.

The metric families, their labels and the values of enumerated labels are read from the tables of
docs/metrics.md, the probe kinds from docs/configuration.md (--docs DIR, default <repo>/docs): the
reference operators read is the list the linter enforces.

Exit status: 0 clean, 1 problems found, 2 usage error, 77 a needed tool (promtool) is missing for
--promql-only (CTest reports that as skipped). Python standard library only.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# The uid of each dashboard file. Links (/d/<uid>), alert annotations and operators' bookmarks use
# them: change one only together with everything that points at it.
EXPECTED_UIDS = {
    "iodrift-overview.json": "iodrift-overview",
    "iodrift-fleet.json": "iodrift-fleet",
}
REQUIRED_VARIABLES = ("datasource", "job", "instance", "probe")
DATASOURCE_REF = "${datasource}"
SCHEMA_VERSIONS = range(36, 40)  # Grafana 9.0 (36) .. 10.x (39)
PANELS_WITHOUT_UNIT = ("row", "text")

# Names every Prometheus server provides, or series it writes itself.
BUILTIN_NAMES = {
    "up": None, "ALERTS": None, "ALERTS_FOR_STATE": None, "scrape_duration_seconds": None,
    "scrape_samples_scraped": None, "scrape_samples_post_metric_relabeling": None,
    "scrape_series_added": None,
}
# Labels Prometheus attaches to every scraped series.
TARGET_LABELS = {"instance", "job"}

# Label values that must be names of fields of a /proc file (checked against the fixtures).
LABEL_VALUES_FROM_FIXTURE = {("iodrift_probe_context_bytes", "field"): "meminfo"}

PROMQL_FUNCTIONS = {
    "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
    "avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh",
    "count_over_time", "day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg",
    "delta", "deriv", "exp", "floor", "histogram_count", "histogram_fraction",
    "histogram_quantile", "histogram_stddev", "histogram_stdvar", "histogram_sum",
    "holt_winters", "hour", "idelta", "increase", "irate", "label_join", "label_replace",
    "last_over_time", "ln", "log10", "log2", "mad_over_time", "max_over_time", "min_over_time",
    "minute", "month", "pi", "predict_linear", "present_over_time", "quantile_over_time", "rad",
    "rate", "resets", "round", "scalar", "sgn", "sin", "sinh", "sort", "sort_desc", "sqrt",
    "stddev_over_time", "stdvar_over_time", "sum_over_time", "tan", "tanh", "time", "timestamp",
    "vector", "year", "start", "end",
}
PROMQL_AGGREGATORS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                      "count_values", "bottomk", "topk", "quantile"}
PROMQL_LABEL_LIST_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
PROMQL_KEYWORDS = {"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"}
GRAFANA_BUILTIN_VARIABLES = {
    "__interval", "__interval_ms", "__rate_interval", "__range", "__range_s", "__range_ms",
    "__from", "__to", "__dashboard", "__org", "__user", "__name", "timeFilter", "__timeFilter",
}
# Values substituted for Grafana's variables before promtool parses an expression.
SUBSTITUTIONS = {"__interval": "5m", "__rate_interval": "5m", "__range": "1h",
                 "__interval_ms": "300000", "__range_s": "3600", "__range_ms": "3600000"}


# --------------------------------------------------------------------------------------------------
# The metric contract.

class Contract:
    """Known metric names: exact names with their label sets, name patterns, label value enums."""

    def __init__(self):
        self.exact = {}      # name -> set of labels (None: labels unknown, not checked)
        self.patterns = []   # (compiled regex, labels, fixture kind or None)
        self.enums = {}      # label -> set of allowed values
        self.source = ""

    def add(self, name, labels):
        labels = None if labels is None else set(labels)
        if name in self.exact and self.exact[name] is not None and labels is not None:
            self.exact[name] |= labels
        else:
            self.exact[name] = labels

    def add_enum(self, label, values):
        self.enums.setdefault(label, set()).update(values)


PLACEHOLDER = re.compile(r"<[A-Za-z]+>")


def _strip_parentheses(text):
    """`a` (b (c)) d -> `a`  d: asides in parentheses name examples and values, not labels."""
    while True:
        stripped = re.sub(r"\([^()]*\)", "", text)
        if stripped == text:
            return text
        text = stripped


def _table_rows(section):
    """The cells of every body row of the Markdown tables in `section`."""
    rows = []
    for line in section.splitlines():
        line = line.strip()
        if not line.startswith("|") or re.match(r"^\|[-:| ]+\|$", line):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] not in ("family",):
            rows.append(cells)
    return rows


def parse_label_cell(cell, common):
    """(labels, {label: values}) of a labels cell of docs/metrics.md: backquoted label names, each
    optionally followed by `= v1, v2; v3` (the label's values). Words in parentheses are asides.
    A cell saying "only" or "none" replaces the common labels; otherwise they are added to them."""
    text = _strip_parentheses(cell)
    if text.strip() == "none":
        return set(), {}
    labels = set() if re.search(r"\bonly\b", cell) else set(common)
    enums = {}
    parts = re.split(r"`([^`]+)`", text)  # text, label, text, label, ...
    for i in range(1, len(parts), 2):
        label, after = parts[i], parts[i + 1]
        if not re.match(r"^[a-z_][a-z0-9_]*$", label):
            continue
        labels.add(label)
        m = re.match(r"^\s*=\s*(.*)$", after)
        if m:
            values = [v.strip() for v in re.split(r"[,;]", m.group(1))]
            values = [v for v in values if re.match(r"^[a-z0-9_.]+$", v)]
            if values:
                enums.setdefault(label, set()).update(values)
    return labels, enums


def parse_metrics_doc(text, config_text=""):
    """Builds a Contract from the tables of docs/metrics.md (family | labels | meaning) and the
    probe kinds from docs/configuration.md. Raises ValueError when no family is found."""
    contract = Contract()
    kinds = re.search(r"kind:\s*\w+\s*#\s*([a-z]+(?:\s*\|\s*[a-z]+)+)", config_text)
    if kinds:
        contract.add_enum("kind", [k.strip() for k in kinds.group(1).split("|")])
    sections = re.split(r"^## ", text, flags=re.M)
    for section in sections[1:]:
        title = section.splitlines()[0]
        if title.startswith("Series next to"):
            continue  # vmstat field lists, not families
        common = {"probe", "kind", "target"} if title.startswith("Probes") else set()
        for cells in _table_rows(section):
            if len(cells) < 2:
                continue
            names = re.findall(r"`([^`]+)`", cells[0])
            labels, enums = parse_label_cell(cells[1], common)
            for label, values in enums.items():
                contract.add_enum(label, values)
            meaning = cells[2] if len(cells) > 2 else ""
            first = None
            for name in names:
                if name.startswith("…"):
                    if first is None:
                        continue
                    name = first.rsplit("_", 1)[0] + name[1:]
                elif not (name.startswith("iodrift_") or name.startswith("process_")):
                    continue
                first = first or name
                if PLACEHOLDER.search(name):
                    fixture = "meminfo" if "meminfo" in name else "vmstat" if "vmstat" in name else None
                    parts = [re.escape(part) for part in PLACEHOLDER.split(name)]
                    rx = parts[0] + "(?P<field>[A-Za-z0-9_]+)" + "[A-Za-z0-9_]+".join(parts[1:])
                    contract.patterns.append((re.compile(rx + "$"), labels, fixture))
                    continue
                contract.add(name, labels)
                if meaning.startswith("histogram"):
                    contract.add(name + "_bucket", labels | {"le"})
                if meaning.startswith("histogram") or meaning.startswith("summary"):
                    contract.add(name + "_sum", labels - {"quantile"})
                    contract.add(name + "_count", labels - {"quantile"})
    if not contract.exact:
        raise ValueError("no metric family found in its tables")
    return contract


def load_docs_contract(docs=os.path.join(REPO, "docs")):
    """The Contract of DOCS/metrics.md (and the kinds of DOCS/configuration.md when present).
    Raises OSError when metrics.md cannot be read, ValueError when it defines no family."""
    with open(os.path.join(docs, "metrics.md"), encoding="utf-8") as f:
        metrics_doc = f.read()
    config_doc = ""
    if os.path.isfile(os.path.join(docs, "configuration.md")):
        with open(os.path.join(docs, "configuration.md"), encoding="utf-8") as f:
            config_doc = f.read()
    contract = parse_metrics_doc(metrics_doc, config_doc)
    contract.source = os.path.relpath(os.path.join(docs, "metrics.md"), REPO)
    return contract


def annotation_expr(a):
    """The PromQL of a Prometheus annotation: `target.expr` (Grafana's schema)."""
    target = a.get("target")
    return target.get("expr", "") if isinstance(target, dict) else ""


def load_fixture_fields(dirs):
    """{"meminfo": {...}, "vmstat": {...}} field names found in /proc fixture trees (empty sets when
    there are none)."""
    fields = {"meminfo": set(), "vmstat": set()}
    for d in dirs:
        if not os.path.isdir(d):
            continue
        for root, _, files in os.walk(d):
            for kind in fields:
                if kind not in files:
                    continue
                with open(os.path.join(root, kind), encoding="utf-8", errors="replace") as f:
                    for line in f:
                        if kind == "meminfo":
                            name = line.split(":", 1)[0].strip()
                            name = name.replace("(", "_").replace(")", "")
                        else:
                            name = line.split(" ", 1)[0].strip()
                        if re.match(r"^[A-Za-z0-9_]+$", name):
                            fields[kind].add(name)
    return fields


# --------------------------------------------------------------------------------------------------
# Rule files (a small reader for the shapes our rule files use; promtool checks real YAML validity).

def read_rule_file(path):
    """Returns [(kind, name, expr, line)] for every `- record:`/`- alert:` with its `expr:` (plain,
    quoted, or block scalar)."""
    rules = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    current = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*-\s+(record|alert):\s*(\S+)", line)
        if m:
            current = [m.group(1), m.group(2).strip("'\""), None, i + 1]
            rules.append(current)
            i += 1
            continue
        m = re.match(r"^(\s*)(?:-\s+)?expr:\s*(.*)$", line)
        if m and current is not None:
            indent, value = len(m.group(1)), m.group(2)
            if value[:1] in ("|", ">"):
                block = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or
                                          len(lines[i]) - len(lines[i].lstrip()) > indent):
                    block.append(lines[i].strip())
                    i += 1
                current[2] = "\n".join(block).strip()
                continue
            if value.startswith('"'):
                value = json.loads(value[: value.rindex('"') + 1])
            elif value.startswith("'"):
                value = value[1: value.rindex("'")].replace("''", "'")
            else:
                value = re.split(r"\s+#", value, 1)[0]
            current[2] = value.strip()
        i += 1
    return [tuple(r) for r in rules]


# --------------------------------------------------------------------------------------------------
# PromQL scanning: enough to find metric names, selectors and variables, not a parser (promtool is).

TOKEN = re.compile(r"""
    (?P<ws>\s+) | (?P<comment>\#[^\n]*) |
    (?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`) |
    (?P<var>\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\[\[[^\]]*\]\]) |
    (?P<number>(?:0x[0-9a-fA-F]+|[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)(?:[a-zA-Z]+[0-9]*)*) |
    (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*) |
    (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=(){}\[\],@])
""", re.X)


def tokenize(expr):
    tokens, pos = [], 0
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m:
            tokens.append(("junk", expr[pos]))
            pos += 1
            continue
        kind = m.lastgroup
        if kind not in ("ws", "comment"):
            tokens.append((kind, m.group()))
        pos = m.end()
    return tokens


def unquote(s):
    if s[0] == "`":
        return s[1:-1]
    try:
        return json.loads('"' + s[1:-1].replace('\\"', '"').replace('"', '\\"') + '"')
    except ValueError:
        return s[1:-1]


def variables_in(expr):
    names = set()
    for m in re.finditer(r"\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)|\[\[([A-Za-z0-9_]+)\]\]", expr):
        names.add(next(g for g in m.groups() if g))
    return names


def scan(expr):
    """Returns (selectors, problems): selectors as (name or None, [(label, op, value)]); problems
    are unknown functions and stray tokens."""
    tokens = tokenize(expr)
    selectors, problems = [], []
    i = 0
    n = len(tokens)

    def skip_group(j, open_, close):
        depth = 0
        while j < n:
            if tokens[j][1] == open_:
                depth += 1
            elif tokens[j][1] == close:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return j

    def matchers(j):
        out = []
        j += 1  # past "{"
        while j < n and tokens[j][1] != "}":
            if tokens[j][0] == "ident" and j + 2 < n and tokens[j + 1][1] in ("=", "!=", "=~", "!~"):
                value = tokens[j + 2]
                out.append((tokens[j][1], tokens[j + 1][1],
                            unquote(value[1]) if value[0] == "string" else value[1]))
                j += 3
            else:
                j += 1
        return out, j + 1

    while i < n:
        kind, text = tokens[i]
        nxt = tokens[i + 1][1] if i + 1 < n else None
        if kind == "op" and text == "[":
            i = skip_group(i, "[", "]")
            continue
        if kind == "op" and text == "{":
            ms, i = matchers(i)
            selectors.append((None, ms))
            continue
        if kind == "junk":
            problems.append("unexpected character %r" % text)
        if kind != "ident":
            i += 1
            continue
        low = text.lower()
        if low in PROMQL_LABEL_LIST_KEYWORDS:
            i = skip_group(i + 1, "(", ")") if nxt == "(" else i + 1
            continue
        if low in PROMQL_AGGREGATORS and (nxt == "(" or (nxt or "").lower() in ("by", "without")):
            i += 1
            continue
        if low in PROMQL_KEYWORDS:
            i += 1
            continue
        if nxt == "(":
            if text not in PROMQL_FUNCTIONS:
                problems.append("unknown function %s()" % text)
            i += 1
            continue
        if nxt == "{":
            ms, j = matchers(i + 1)
            selectors.append((text, ms))
            i = j
            continue
        selectors.append((text, []))
        i += 1
    return selectors, problems


def substitute(expr):
    """Replaces Grafana variables with values promtool can parse."""
    def repl(m):
        name = next(g for g in m.groups() if g)
        return SUBSTITUTIONS.get(name, "x")
    return re.sub(r"\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)|\[\[([A-Za-z0-9_]+)\]\]",
                  repl, expr)


def variable_query_expr(query):
    """The PromQL inside a Grafana Prometheus variable query, or None when it has none."""
    if isinstance(query, dict):
        query = query.get("query", "")
    query = (query or "").strip()
    m = re.match(r"^label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)$", query, re.S)
    if m:
        return m.group(1).strip()
    if re.match(r"^label_values\(\s*[A-Za-z_][A-Za-z0-9_]*\s*\)$", query):
        return None
    m = re.match(r"^query_result\((.*)\)$", query, re.S)
    if m:
        return m.group(1).strip()
    if re.match(r"^(label_names|metrics)\(", query):
        return None
    return query or None


# --------------------------------------------------------------------------------------------------
# Checks.

class Linter:
    def __init__(self, contract, recorded, fixture_fields):
        self.contract = contract
        self.recorded = recorded  # recording rule names
        self.fields = fixture_fields
        self.problems = []
        self.notes = []
        self.exprs = []  # (where, expr) for the promtool pass
        self.used = set()  # metric names the expressions read (not recording-rule outputs)

    def problem(self, where, msg):
        self.problems.append("%s: %s" % (where, msg))

    def known_name(self, name):
        """Returns (known, labels or None when labels are not checked, reason if unknown)."""
        if name in BUILTIN_NAMES or name in self.recorded:
            return True, None, ""
        if name in self.contract.exact:
            return True, self.contract.exact[name], ""
        for rx, labels, fixture in self.contract.patterns:
            m = rx.match(name)
            if not m:
                continue
            field = m.groupdict().get("field")
            if fixture and field and self.fields.get(fixture):
                if field not in self.fields[fixture]:
                    return False, None, ("%s field %r is not in any /proc/%s fixture (kernel names are "
                                         "kept: Active(file) -> Active_file)" % (fixture, field, fixture))
            return True, labels, ""
        return False, None, "not defined in %s nor by a recording rule" % self.contract.source

    def check_expr(self, where, expr, defined_vars=None, dashboard=False):
        if not expr or not expr.strip():
            self.problem(where, "empty expression")
            return
        # Dashboards: every selector that picks machines by $instance also honours $job.
        if dashboard and re.search(r'instance=~?"\$instance"', expr):
            for sel in re.findall(r'\{[^{}]*instance=~?"\$instance"[^{}]*\}', expr):
                if 'job=~"$job"' not in sel:
                    self.problem(where, 'selector %s filters by $instance but not by job=~"$job"' % sel)
        self.exprs.append((where, expr))
        if defined_vars is not None:
            for var in sorted(variables_in(expr) - defined_vars - GRAFANA_BUILTIN_VARIABLES):
                self.problem(where, "uses undefined variable $%s" % var)
        selectors, problems = scan(expr)
        for p in problems:
            self.problem(where, p)
        for name, ms in selectors:
            if name is None:
                name_ms = [m for m in ms if m[0] == "__name__"]
                if not name_ms:
                    self.problem(where, "selector without a metric name")
                    continue
                label_, op, value = name_ms[0]
                if op == "=":
                    name = value
                elif op == "=~":
                    self.check_name_regex(where, value)
                    continue
                else:
                    continue
            known, labels, reason = self.known_name(name)
            if name not in self.recorded:
                self.used.add(name)
            if not known:
                self.problem(where, "unknown metric %s: %s" % (name, reason))
                continue
            self.check_matchers(where, name, labels, ms)

    def check_name_regex(self, where, regex):
        try:
            rx = re.compile("^(?:%s)$" % regex)
        except re.error as e:
            self.problem(where, "bad __name__ regex %r: %s" % (regex, e))
            return
        candidates = set(self.contract.exact) | set(self.recorded)
        candidates |= {"iodrift_meminfo_%s_bytes" % f for f in self.fields.get("meminfo", ())}
        candidates |= {"iodrift_vmstat_%s" % f for f in self.fields.get("vmstat", ())}
        if not any(rx.match(c) for c in candidates):
            self.problem(where, "__name__=~%r matches no known metric" % regex)

    def check_matchers(self, where, name, labels, ms):
        for label, op, value in ms:
            if label == "__name__":
                continue
            if labels is not None and label not in labels | TARGET_LABELS:
                self.problem(where, "%s has no label %r (it has: %s)"
                             % (name, label, ", ".join(sorted(labels | TARGET_LABELS))))
                continue
            if "$" in value or op in ("!=", "!~"):
                continue
            allowed = None
            source = (name, label)
            if source in LABEL_VALUES_FROM_FIXTURE and self.fields.get(LABEL_VALUES_FROM_FIXTURE[source]):
                allowed = self.fields[LABEL_VALUES_FROM_FIXTURE[source]]
            elif labels is not None and label in self.contract.enums:
                allowed = self.contract.enums[label]
            if allowed is None:
                continue
            if op == "=":
                values = [value]
            elif re.match(r"^[A-Za-z0-9_]+(\|[A-Za-z0-9_]+)*$", value):
                values = value.split("|")
            else:
                continue
            for v in values:
                if v not in allowed:
                    self.problem(where, "%s{%s%s%r}: %r is not a valid %s (valid: %s)"
                                 % (name, label, op, value, v, label, ", ".join(sorted(allowed))))

    # -- dashboards --------------------------------------------------------------------------------

    def lint_dashboard(self, path):
        base = os.path.basename(path)
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except (OSError, ValueError) as e:
            self.problem(base, "not valid JSON: %s" % e)
            return
        if not isinstance(d, dict):
            self.problem(base, "top level is not an object")
            return

        uid = d.get("uid")
        expected = EXPECTED_UIDS.get(base)
        if not uid or not isinstance(uid, str):
            self.problem(base, "uid is not set")
        elif expected and uid != expected:
            self.problem(base, "uid is %r, expected the stable %r (links and alerts use /d/%s)"
                         % (uid, expected, expected))
        elif not expected:
            self.problem(base, "no stable uid registered for this file: add it to EXPECTED_UIDS in %s"
                         % os.path.basename(__file__))
        if uid and (len(uid) > 40 or not re.match(r"^[A-Za-z0-9_-]+$", uid)):
            self.problem(base, "uid %r is not a valid Grafana uid (<= 40 of [A-Za-z0-9_-])" % uid)
        for key in ("title", "panels", "schemaVersion", "templating", "time"):
            if key not in d:
                self.problem(base, "missing %r" % key)
        if d.get("id") is not None:
            self.problem(base, "id must be null so that import does not overwrite another dashboard")
        if d.get("schemaVersion") not in SCHEMA_VERSIONS:
            self.problem(base, "schemaVersion %r is not one of Grafana 9/10 (%d-%d)"
                         % (d.get("schemaVersion"), SCHEMA_VERSIONS[0], SCHEMA_VERSIONS[-1]))
        if (d.get("time") or {}).get("from") != "now-7d":
            self.problem(base, "default time range must be the last 7 days (time.from = now-7d)")
        if d.get("refresh") not in ("", False, None):
            self.problem(base, "auto-refresh must be off by default (refresh = \"\")")

        variables = (d.get("templating") or {}).get("list") or []
        names = {v.get("name") for v in variables}
        for req in REQUIRED_VARIABLES:
            if req not in names:
                self.problem(base, "missing the %r variable" % req)
        ds_var = [v for v in variables if v.get("name") == "datasource"]
        if ds_var and (ds_var[0].get("type") != "datasource" or ds_var[0].get("query") != "prometheus"):
            self.problem(base, "variable 'datasource' must be of type datasource with query prometheus")
        for v in variables:
            where = "%s: variable %s" % (base, v.get("name"))
            if v.get("type") == "query":
                self.check_datasource(where, v.get("datasource"))
                inner = variable_query_expr(v.get("query"))
                if inner:
                    self.check_expr(where, inner, names, dashboard=v.get("name") != "job")

        for a in (d.get("annotations") or {}).get("list") or []:
            if a.get("builtIn"):
                continue
            where = "%s: annotation %s" % (base, a.get("name"))
            self.check_datasource(where, a.get("datasource"))
            if "expr" in a or "step" in a:
                self.problem(where, "query at the top level (`expr`/`step`): Grafana's schema has it "
                                    "in `target` ({\"expr\": ..., \"interval\": ..., \"refId\": \"Anno\"})")
            self.check_expr(where, annotation_expr(a), names, dashboard=True)

        ids = set()
        for panel in self.walk_panels(d.get("panels") or []):
            where = "%s: panel %s %r" % (base, panel.get("id"), panel.get("title"))
            pid = panel.get("id")
            if pid in ids:
                self.problem(where, "duplicate panel id")
            ids.add(pid)
            if "gridPos" not in panel:
                self.problem(where, "no gridPos")
            ptype = panel.get("type")
            if ptype in PANELS_WITHOUT_UNIT:
                continue
            self.check_datasource(where, panel.get("datasource"))
            unit = ((panel.get("fieldConfig") or {}).get("defaults") or {}).get("unit")
            if not unit or not isinstance(unit, str):
                self.problem(where, "no unit (fieldConfig.defaults.unit)")
            targets = panel.get("targets") or []
            if not targets:
                self.problem(where, "no targets")
            for t in targets:
                twhere = "%s target %s" % (where, t.get("refId"))
                self.check_datasource(twhere, t.get("datasource"))
                self.check_expr(twhere, t.get("expr", ""), names, dashboard=True)

    @staticmethod
    def walk_panels(panels):
        for p in panels:
            yield p
            for inner in p.get("panels") or []:
                yield inner

    def check_datasource(self, where, ds):
        uid = ds.get("uid") if isinstance(ds, dict) else ds
        if uid != DATASOURCE_REF:
            self.problem(where, "datasource is %r, must be %s" % (uid, DATASOURCE_REF))

    # -- rules --------------------------------------------------------------------------------------

    def lint_rules(self, path):
        base = os.path.relpath(path, REPO) if path.startswith(REPO) else path
        for kind, name, expr, line in read_rule_file(path):
            where = "%s:%d: %s %s" % (base, line, kind, name)
            if expr is None:
                self.problem(where, "no expr found")
                continue
            if kind == "record" and not name.startswith("iodrift:"):
                self.problem(where, "recording rules are named iodrift:<what>:<how>")
            self.check_expr(where, expr)

    # -- promtool -----------------------------------------------------------------------------------

    def promql_parse(self, promtool):
        """Writes every expression into one rules file and lets promtool parse it."""
        if not self.exprs:
            return
        with tempfile.TemporaryDirectory(prefix="iodrift-lint-") as tmp:
            path = os.path.join(tmp, "dashboard-exprs.rules.yml")
            with open(path, "w", encoding="utf-8") as f:
                f.write("groups:\n  - name: dashboard-exprs\n    rules:\n")
                for i, (_, expr) in enumerate(self.exprs):
                    f.write("      - record: lint:expr_%04d\n        expr: %s\n"
                            % (i, json.dumps(substitute(expr))))
            try:
                r = subprocess.run([promtool, "check", "rules", "--lint=none", path],
                                   capture_output=True, text=True, timeout=60)
            except subprocess.TimeoutExpired:
                self.problem("promtool", "check rules timed out")
                return
            if r.returncode == 0:
                return
            out = r.stdout + r.stderr
            found = False
            for m in re.finditer(r'"lint:expr_(\d{4})": (.*)', out):
                where, expr = self.exprs[int(m.group(1))]
                self.problem(where, "%s\n      expr: %s" % (m.group(2).strip(), expr))
                found = True
            if not found:
                self.problem("promtool", "check rules failed:\n" + out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dashboards", nargs="*", help="dashboard JSON files (default: <repo>/dashboards/*.json)")
    ap.add_argument("--docs", default=os.path.join(REPO, "docs"),
                    help="directory with metrics.md and configuration.md (default: %(default)s)")
    ap.add_argument("--rules", nargs="*", default=None,
                    help="Prometheus rule files (default: <repo>/dashboards/prometheus/*.rules.yml)")
    ap.add_argument("--proc-fixtures", nargs="*", default=None,
                    help="directories with /proc fixture trees (meminfo, vmstat)")
    ap.add_argument("--promtool", default=shutil.which("promtool"), help="promtool binary")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--no-promql", action="store_true", help="skip the promtool parse check")
    mode.add_argument("--promql-only", action="store_true",
                      help="only the promtool parse check (exit 77 when promtool is missing)")
    mode.add_argument("--list-metrics", action="store_true",
                      help="print the metric names the dashboards and rules read (one a line) and exit")
    args = ap.parse_args(argv)

    dashboards = args.dashboards or sorted(glob.glob(os.path.join(REPO, "dashboards", "*.json")))
    rules = args.rules if args.rules is not None else sorted(
        glob.glob(os.path.join(REPO, "dashboards", "prometheus", "*.rules.yml")))
    fixtures = args.proc_fixtures if args.proc_fixtures is not None else [
        os.path.join(REPO, "tests", "fixtures", "proc"),
        os.path.join(REPO, "tests", "fixtures", "proc-samples")]
    if not dashboards:
        print("lint_dashboards: no dashboards given or found", file=sys.stderr)
        return 2

    if args.promql_only and not (args.promtool and os.access(args.promtool, os.X_OK)):
        print("lint_dashboards: promtool not found (Debian package 'prometheus'); skipping", file=sys.stderr)
        return SKIP

    notes = []
    try:
        contract = load_docs_contract(args.docs)
    except (OSError, ValueError) as e:
        print("lint_dashboards: cannot read the metric list from %s/metrics.md: %s" % (args.docs, e),
              file=sys.stderr)
        return 2

    fields = load_fixture_fields(fixtures)
    if not fields["meminfo"] or not fields["vmstat"]:
        notes.append("no meminfo/vmstat fixtures found: meminfo and vmstat field names are not checked")

    recorded = set()
    for path in rules:
        recorded |= {name for kind, name, _, _ in read_rule_file(path) if kind == "record"}

    linter = Linter(contract, recorded, fields)
    for path in dashboards:
        linter.lint_dashboard(path)
    for path in rules:
        linter.lint_rules(path)

    if args.list_metrics:
        for name in sorted(linter.used - set(BUILTIN_NAMES)):
            print(name)
        return 0
    if args.promql_only:
        linter.problems = []
    if not args.no_promql:
        if args.promtool and os.access(args.promtool, os.X_OK):
            linter.promql_parse(args.promtool)
        else:
            notes.append("promtool not found: expressions were not parsed (run with --promql-only to see it skipped)")

    for note in notes:
        print("note: " + note)
    for p in linter.problems:
        print("error: " + p)
    checked = "%d dashboard(s), %d rule file(s), %d expression(s)" % (len(dashboards), len(rules), len(linter.exprs))
    if linter.problems:
        print("lint_dashboards: %d problem(s) in %s" % (len(linter.problems), checked))
        return 1
    what = "PromQL parses" if args.promql_only else "clean"
    print("lint_dashboards: %s: %s" % (what, checked))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
