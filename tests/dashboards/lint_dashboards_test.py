#!/usr/bin/env python3
"""Self-test of lint_dashboards.py: the shipped dashboards pass, and each kind of mistake the linter
exists for is caught (a linter that passes everything would otherwise look the same as a clean
repository). Python standard library only; the PromQL cases are skipped without promtool.

Run: python3 tests/dashboards/lint_dashboards_test.py [-v]
"""

import contextlib
import copy
import io
import json
import os
import shutil
import tempfile
import unittest

import lint_dashboards as lint  # noqa: E402

OVERVIEW = os.path.join(lint.REPO, "dashboards", "iodrift-overview.json")
RULES = [os.path.join(lint.REPO, "dashboards", "prometheus", name)
         for name in ("iodrift-recording.rules.yml", "iodrift-alerts.rules.yml")]
PROMTOOL = shutil.which("promtool")


def first_graph_panel(d):
    return next(p for p in d["panels"] if p["type"] == "timeseries")


class LintTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="iodrift-lint-test-")
        with open(OVERVIEW, encoding="utf-8") as f:
            self.dashboard = json.load(f)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_lint(self, dashboard=None, extra=(), raw=None, name="iodrift-overview.json", rules=None):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            if raw is not None:
                f.write(raw)
            else:
                json.dump(dashboard if dashboard is not None else self.dashboard, f)
        argv = [path, "--rules"] + (rules if rules is not None else RULES) + list(extra)
        if not PROMTOOL and "--promql-only" not in extra and "--promtool" not in extra:
            argv.append("--no-promql")
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = lint.main(argv)
        return code, out.getvalue()

    def assertCaught(self, needle, **kw):
        code, out = self.run_lint(**kw)
        self.assertEqual(code, 1, out)
        self.assertIn(needle, out)
        return out

    # -- the real files ---------------------------------------------------------------------------

    def test_shipped_dashboards_and_rules_are_clean(self):
        argv = [] if PROMTOOL else ["--no-promql"]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = lint.main(argv)
        self.assertEqual(code, 0, out.getvalue())

    def test_metric_list_comes_from_docs_metrics_md(self):
        contract = lint.load_docs_contract()
        self.assertEqual(contract.source, os.path.join("docs", "metrics.md"))
        self.assertEqual(contract.exact["iodrift_probe_runs_total"], {"probe", "kind", "target", "result"})
        self.assertEqual(contract.exact["iodrift_page_cache_tax_ratio"], {"target"})
        self.assertEqual(contract.exact["iodrift_probe_recovery_ratio"], {"probe", "step"})
        self.assertEqual(contract.exact["iodrift_slabinfo_active_objects"], {"slab"})
        self.assertIn("le", contract.exact["iodrift_probe_latency_seconds_bucket"])
        self.assertEqual(contract.enums["result"], {"ok", "error", "timeout", "skipped"})
        self.assertEqual(contract.enums["resource"], {"cpu", "io", "memory", "irq"})
        self.assertEqual(contract.enums["kind"],
                         {"cached", "buffered", "direct", "random", "metadata", "memory"})

    def test_name_dropped_from_docs_is_unknown(self):
        # A family the docs stop defining fails the shipped dashboards that read it.
        docs = os.path.join(self.tmp, "docs")
        shutil.copytree(os.path.join(lint.REPO, "docs"), docs)
        path = os.path.join(docs, "metrics.md")
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines(True)
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(l for l in lines if not l.startswith("| `iodrift_probe_success`"))
        self.assertCaught("unknown metric iodrift_probe_success: not defined in", extra=["--docs", docs])

    def test_missing_metrics_doc_is_a_usage_error(self):
        code, out = self.run_lint(extra=["--docs", os.path.join(self.tmp, "no-docs")])
        self.assertEqual(code, 2, out)
        self.assertIn("cannot read the metric list", out)

    # -- structure ----------------------------------------------------------------------------------

    def test_invalid_json(self):
        self.assertCaught("not valid JSON", raw="{\"uid\": ")

    def test_changed_uid(self):
        self.dashboard["uid"] = "a8Fk2mZ"
        self.assertCaught("expected the stable 'iodrift-overview'")

    def test_missing_uid(self):
        del self.dashboard["uid"]
        self.assertCaught("uid is not set")

    def test_unregistered_dashboard_file(self):
        self.assertCaught("no stable uid registered", name="iodrift-new.json")

    def test_default_time_range_and_refresh(self):
        self.dashboard["time"] = {"from": "now-1h", "to": "now"}
        self.dashboard["refresh"] = "1m"
        out = self.assertCaught("last 7 days")
        self.assertIn("auto-refresh must be off", out)

    def test_missing_probe_variable(self):
        self.dashboard["templating"]["list"] = [
            v for v in self.dashboard["templating"]["list"] if v["name"] != "probe"]
        out = self.assertCaught("missing the 'probe' variable")
        self.assertIn("undefined variable $probe", out)

    def test_panel_without_unit(self):
        del first_graph_panel(self.dashboard)["fieldConfig"]["defaults"]["unit"]
        self.assertCaught("no unit (fieldConfig.defaults.unit)")

    def test_text_and_row_panels_need_no_unit(self):
        kinds = {p["type"] for p in self.dashboard["panels"]}
        self.assertTrue({"text", "row"} <= kinds)
        code, out = self.run_lint()
        self.assertEqual(code, 0, out)

    def test_panel_with_fixed_datasource(self):
        first_graph_panel(self.dashboard)["datasource"] = {"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}
        self.assertCaught("must be ${datasource}")

    def test_target_with_fixed_datasource(self):
        first_graph_panel(self.dashboard)["targets"][0]["datasource"] = "Prometheus"
        self.assertCaught("target A: datasource is 'Prometheus'")

    def test_duplicate_panel_id(self):
        panels = [p for p in self.dashboard["panels"] if p["type"] == "timeseries"]
        panels[1]["id"] = panels[0]["id"]
        self.assertCaught("duplicate panel id")

    # -- names ----------------------------------------------------------------------------------------

    def set_expr(self, expr):
        first_graph_panel(self.dashboard)["targets"][0]["expr"] = expr

    def test_unknown_metric(self):
        self.set_expr('iodrift_probe_throughput_bytes{instance="$instance"}')
        self.assertCaught("unknown metric iodrift_probe_throughput_bytes")

    def test_recording_rule_name_must_exist(self):
        self.set_expr('iodrift:probe_baseline_ratio:min_by_probe{instance="$instance"}')
        self.assertCaught("unknown metric iodrift:probe_baseline_ratio:min_by_probe")

    def test_meminfo_field_typo(self):
        self.set_expr('iodrift_meminfo_Memfree_bytes{instance="$instance"}')
        self.assertCaught("meminfo field 'Memfree'")

    def test_meminfo_kernel_names_are_kept(self):
        self.set_expr('iodrift_meminfo_Active_file_bytes{job=~"$job", instance="$instance"} + iodrift_meminfo_HugePages_Total{job=~"$job", instance="$instance"}')
        code, out = self.run_lint()
        self.assertEqual(code, 0, out)

    def test_vmstat_field_typo(self):
        self.set_expr('rate(iodrift_vmstat_pgscan_kswap{instance="$instance"}[5m])')
        self.assertCaught("vmstat field 'pgscan_kswap'")

    def test_unknown_label(self):
        self.set_expr('iodrift_probe_success{instance="$instance", name="sda"}')
        self.assertCaught("iodrift_probe_success has no label 'name'")

    def test_label_of_another_family(self):
        self.set_expr('iodrift_page_cache_tax_ratio{instance="$instance", probe="sda-buffered"}')
        self.assertCaught("iodrift_page_cache_tax_ratio has no label 'probe'")

    def test_invalid_enum_value(self):
        self.set_expr('iodrift_probe_success{instance="$instance", kind=~"buffered|drect"}')
        self.assertCaught("'drect' is not a valid kind")

    def test_invalid_resource(self):
        self.set_expr('rate(iodrift_pressure_stalled_seconds_total{instance="$instance", resource="mem"}[5m])')
        self.assertCaught("'mem' is not a valid resource")

    def test_histogram_series_names(self):
        self.set_expr('rate(iodrift_probe_latency_seconds_sum[5m]) / rate(iodrift_probe_latency_seconds_count[5m])'
                      ' + 0 * sum by (le) (rate(iodrift_probe_latency_seconds_bucket{le="0.001"}[5m]))')
        code, out = self.run_lint()
        self.assertEqual(code, 0, out)

    def test_name_regex_must_match_something(self):
        self.set_expr('sum(rate({__name__=~"iodrift_vmstat_allocstal_.+"}[5m]))')
        self.assertCaught("matches no known metric")

    def test_unknown_function(self):
        self.set_expr('rat(iodrift_probe_runs_total[5m])')
        self.assertCaught("unknown function rat()")

    def test_undefined_variable(self):
        self.set_expr('iodrift_probe_success{instance="$node"}')
        self.assertCaught("undefined variable $node")

    def test_variable_query_is_checked(self):
        var = next(v for v in self.dashboard["templating"]["list"] if v["name"] == "instance")
        var["query"] = {"query": "label_values(iodrift_build_information, instance)", "refId": "X"}
        self.assertCaught("variable instance: unknown metric iodrift_build_information")

    def test_annotation_is_checked(self):
        ann = next(a for a in self.dashboard["annotations"]["list"] if not a.get("builtIn"))
        ann["target"]["expr"] = "changes(iodrift_boot_seconds[10m]) > 0"
        self.assertCaught("annotation Reboots: unknown metric iodrift_boot_seconds")

    def test_annotation_query_at_top_level(self):
        ann = next(a for a in self.dashboard["annotations"]["list"] if not a.get("builtIn"))
        ann["expr"] = ann["target"].pop("expr")
        self.assertCaught("annotation Reboots: query at the top level")

    def test_instance_without_job(self):
        self.set_expr('iodrift_probe_success{instance="$instance"}')
        self.assertCaught('filters by $instance but not by job=~"$job"')

    def test_job_variable_required(self):
        self.dashboard["templating"]["list"] = [
            v for v in self.dashboard["templating"]["list"] if v["name"] != "job"]
        self.assertCaught("missing the 'job' variable")

    def test_rule_files_are_checked(self):
        bad = os.path.join(self.tmp, "bad.rules.yml")
        with open(bad, "w", encoding="utf-8") as f:
            f.write("groups:\n  - name: x\n    rules:\n      - record: iodrift:x:y\n"
                    "        expr: |\n          sum(iodrift_probe_sucess)\n"
                    "      - alert: X\n        expr: up == 0\n")
        out = self.assertCaught("bad.rules.yml:4: record iodrift:x:y: unknown metric iodrift_probe_sucess",
                                rules=RULES + [bad])
        self.assertNotIn("alert X", out)

    def test_rule_file_reader(self):
        rules = lint.read_rule_file(RULES[1])
        names = [name for kind, name, _, _ in rules]
        self.assertIn("IodriftThroughputRegression", names)
        expr = dict((n, e) for _, n, e, _ in rules)["IodriftExporterDown"]
        self.assertEqual(expr, 'up{job=~"iodrift.*"} == 0')

    # -- PromQL -----------------------------------------------------------------------------------------

    @unittest.skipUnless(PROMTOOL, "promtool not installed")
    def test_promql_syntax_error(self):
        self.set_expr('sum by (probe) (rate(iodrift_probe_runs_total{instance="$instance"}[$__rate_interval))')
        self.assertCaught("parse error")

    @unittest.skipUnless(PROMTOOL, "promtool not installed")
    def test_promql_only_ignores_other_problems(self):
        del first_graph_panel(self.dashboard)["fieldConfig"]["defaults"]["unit"]
        code, out = self.run_lint(extra=["--promql-only"])
        self.assertEqual(code, 0, out)

    def test_promql_only_without_promtool_is_skipped(self):
        code, out = self.run_lint(extra=["--promql-only", "--promtool", os.path.join(self.tmp, "no-promtool")])
        self.assertEqual(code, lint.SKIP, out)

    def test_substitution(self):
        self.assertEqual(lint.substitute('rate(x{a=~"$probe", b="${instance}"}[$__rate_interval])'),
                         'rate(x{a=~"x", b="x"}[5m])')


if __name__ == "__main__":
    unittest.main()
