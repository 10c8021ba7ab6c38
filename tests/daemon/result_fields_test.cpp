// One description of a result: every output (--once --json, /api/v1/probes, D-Bus a{sv} and its
// decoding in iodriftctl, the status page's field table, the iodrift_probe_* families of
// /metrics) carries every field of the walk in collectors/probes/result_fields.h. A field missing
// from one output fails here, and so does a field that Full() leaves at its default.
#include "collectors/probes/result_fields.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "collectors/common/families.h"
#include "collectors/probes/kinds.h"
#include "daemon/dbus/result_dict.h"
#include "daemon/json_writer.h"
#include "daemon/probe_metrics.h"
#include "daemon/probe_report.h"
#include "daemon/status_page.h"
#include "tests/analysis/states_test_util.h"

namespace iodrift::daemon {
namespace {

// A result with every field set to something other than its default.
probes::ProbeResult Full() {
  probes::ProbeResult r;
  r.name = "disk-random";
  r.kind = probes::ProbeKind::kRandom;
  r.target = "/dev/vdb";
  r.outcome = probes::Outcome::kOk;
  r.error = "none";
  r.supported = false;
  r.start_time_seconds = 1'700'000'000.5;
  r.duration_seconds = 0.25;
  r.bytes = 4096 * 64;
  r.throughput_bytes_per_second = 1e6;
  r.ops_per_second = {{"read", 256}};
  probes::LatencyHistogram latency;
  latency.p50_seconds = 0.001;
  latency.p99_seconds = 0.004;
  latency.count = 64;
  r.latency = latency;
  r.extra = {{"requests", 64}};
  r.cpu_user_seconds = 0.01;
  r.cpu_system_seconds = 0.02;
  r.suspect = {"io_pressure"};
  r.context = {{"MemFree", 1 << 20}, {"Active(file)", 2 << 20}};
  r.vmstat_delta = {{"pgscan_kswapd", -3}};
  r.target_info = {"ext4", "mq-deadline", "128",          "0",           "vdb", "1",
                   512,    "1",           {"vdb", "vdc"}, {"vdb", "vdc"}};
  r.mode = "direct";
  r.residency_witness = "task_io";
  r.uptime_seconds = 1234.5;
  r.dentry_state = {{"negative", 7}};
  r.pressure_delta_us = {{"io_some", 9}};
  r.fragmentation_index = 0.25;
  r.spec_size = 64;
  r.member_figures = {{"vdb", 128}};
  r.member_ratios = {{"vdb", 2}};
  r.member_errors = {{"vdc", "EIO"}};
  // Every time part, each its own value (a plain one and an optional one are both set).
  probes::TimeParts tp;
  double part = 0.01;
  for (const probes::TimePartField& f : probes::TimePartFields()) f.Set(tp, part += 0.01);
  r.time_seconds = tp;
  probes::ReaderStep step;  // a two-step readers curve
  step.rate = 1000;
  step.per_reader_min = 900;
  step.per_reader_max = 1100;
  step.scaling_efficiency = 1;
  step.bytes = 4096;
  step.seconds = 0.5;
  step.time_seconds = tp;
  probes::ReaderStep two = step;
  two.readers = 2;
  two.rate = 1800;
  two.scaling_efficiency = 0.9;
  r.readers = {step, two};
  return r;
}

std::string Json(const probes::ProbeResult& r) {
  JsonWriter w;
  WriteProbeResultJson(w, r);
  return w.str();
}

// Every member name of the walk, nested ones as "group.member", with whether it applies.
// A group's own path is followed by its members' paths; `groups` lists the group paths.
std::vector<std::string> Paths(const probes::ProbeResult& r, std::set<std::string>* groups) {
  struct Walk : probes::ResultFieldVisitor {
    std::vector<std::string> paths;
    std::vector<std::string> prefix;  // the open groups' paths, each ending in "."
    void Add(std::string_view key) {
      paths.push_back((prefix.empty() ? "" : prefix.back()) + std::string(key));
    }
    void Text(std::string_view k, const std::string&, const probes::MetricExport&) override {
      Add(k);
    }
    void Flag(std::string_view k, bool, const probes::MetricExport&) override { Add(k); }
    void Real(std::string_view k, const std::optional<double>&,
              const probes::MetricExport&) override {
      Add(k);
    }
    void Count(std::string_view k, const std::optional<std::uint64_t>&,
               const probes::MetricExport&) override {
      Add(k);
    }
    void Signed(std::string_view k, std::int64_t, const probes::MetricExport&) override { Add(k); }
    void TextList(std::string_view k, const std::vector<std::string>&,
                  const probes::MetricExport&) override {
      Add(k);
    }
    bool BeginGroup(std::string_view k, probes::GroupShape, bool present,
                    const probes::MetricExport&) override {
      Add(k);
      groups.insert(paths.back());
      prefix.push_back(paths.back() + ".");
      return present;
    }
    std::set<std::string> groups;
    void EndGroup() override { prefix.pop_back(); }
  } walk;
  probes::VisitProbeResult(r, walk);
  *groups = walk.groups;
  return walk.paths;
}

TEST(ResultFields, EveryOutputCarriesEveryField) {
  const probes::ProbeResult r = Full();
  const std::string json = Json(r);
  const std::string html = ResultFieldsHtml(r);
  const dbus::Dict dict = dbus::ToDict(r);
  std::set<std::string> groups;
  for (const std::string& path : Paths(r, &groups)) {
    const auto dot = path.find('.');
    const std::string leaf = dot == std::string::npos ? path : path.substr(path.rfind('.') + 1);
    EXPECT_NE(json.find("\"" + leaf + "\":"), std::string::npos) << "JSON lacks " << path;
    if (!groups.count(path)) {  // a present group is its members' rows
      EXPECT_NE(html.find("<th>" + HtmlEscape(path) + "</th>"), std::string::npos)
          << "status page lacks " << path;
    }
    if (dot == std::string::npos) {
      EXPECT_TRUE(dict.count(path)) << "D-Bus lacks " << path;
    }
  }
  // D-Bus there and back (iodriftctl's view) gives the same JSON: nothing lost either way.
  EXPECT_EQ(Json(dbus::FromDict(dict)), json);
}

// Each leaf of the walk: its path, its MetricExport and its value (a number, a text, a list).
struct Leaf {
  std::string path;
  std::string key;
  probes::MetricExport how;
  std::optional<double> number;
  std::optional<std::string> text;
  std::vector<std::string> list;
  bool set = false;  // not the type's default
};

std::vector<Leaf> Leaves(const probes::ProbeResult& r) {
  struct Walk : probes::ResultFieldVisitor {
    std::vector<Leaf> leaves;
    std::vector<std::string> prefix;
    Leaf& Add(std::string_view k, const probes::MetricExport& m) {
      leaves.push_back({(prefix.empty() ? "" : prefix.back()) + std::string(k),
                        std::string(k),
                        m,
                        std::nullopt,
                        std::nullopt,
                        {},
                        false});
      return leaves.back();
    }
    void Text(std::string_view k, const std::string& v, const probes::MetricExport& m) override {
      Leaf& l = Add(k, m);
      l.text = v;
      l.set = !v.empty();
    }
    void Flag(std::string_view k, bool v, const probes::MetricExport& m) override {
      Leaf& l = Add(k, m);
      l.number = v ? 1 : 0;
      l.set = true;
    }
    void Real(std::string_view k, const std::optional<double>& v,
              const probes::MetricExport& m) override {
      Leaf& l = Add(k, m);
      l.number = v;
      l.set = v.has_value();
    }
    void Count(std::string_view k, const std::optional<std::uint64_t>& v,
               const probes::MetricExport& m) override {
      Leaf& l = Add(k, m);
      if (v) l.number = static_cast<double>(*v);
      l.set = v.has_value() && *v != 0;
    }
    void Signed(std::string_view k, std::int64_t v, const probes::MetricExport& m) override {
      Leaf& l = Add(k, m);
      l.number = static_cast<double>(v);
      l.set = v != 0;
    }
    void TextList(std::string_view k, const std::vector<std::string>& v,
                  const probes::MetricExport& m) override {
      Leaf& l = Add(k, m);
      l.list = v;
      l.set = !v.empty();
    }
    bool BeginGroup(std::string_view k, probes::GroupShape, bool present,
                    const probes::MetricExport&) override {
      EXPECT_TRUE(present) << "Full() leaves the group " << k << " out";
      prefix.push_back((prefix.empty() ? "" : prefix.back()) + std::string(k) + ".");
      return present;
    }
    void EndGroup() override { prefix.pop_back(); }
  } walk;
  probes::VisitProbeResult(r, walk);
  return walk.leaves;
}

// The /metrics families of one recorded result.
std::vector<prometheus::MetricFamily> Metrics(const probes::ProbeResult& r) {
  analysis::ProbeStates store;
  EXPECT_TRUE(probes::testing::DefineAndRecord(store, r));
  std::vector<prometheus::MetricFamily> out;
  AppendProbeFamilies(*store.Snapshot(), out);
  return out;
}

bool HasLabels(const prometheus::ClientMetric& m, const iodrift::Labels& want) {
  return std::all_of(want.begin(), want.end(), [&](const auto& w) {
    return std::find(m.label.begin(), m.label.end(), w) != m.label.end();
  });
}

// Whether `families` hold what `leaf`'s MetricExport promises for a result of `kind`.
testing::AssertionResult InMetrics(const std::vector<prometheus::MetricFamily>& families,
                                   const Leaf& leaf, probes::ProbeKind kind) {
  using Way = probes::MetricExport::Way;
  const probes::MetricExport& m = leaf.how;
  if (m.way == Way::kNone) {
    if (m.why.empty()) return testing::AssertionFailure() << "no reason why it is not exported";
    return testing::AssertionSuccess();
  }
  const bool ops = probes::Traits(kind).ops_figure;
  const probes::ResultFamily& f = ops && m.ops_family ? *m.ops_family : *m.family;
  auto family = std::find_if(families.begin(), families.end(),
                             [&](const auto& x) { return x.name == f.name; });
  if (family == families.end()) return testing::AssertionFailure() << "no family " << f.name;
  iodrift::Labels want;
  if (m.way == Way::kGauge && !m.label.empty()) want.push_back({std::string(m.label), leaf.key});
  if (!m.fixed.first.empty())
    want.push_back({std::string(m.fixed.first), std::string(m.fixed.second)});
  if (f.op_label) want.push_back({"op", std::string(probes::Traits(kind).op)});
  if (m.way == Way::kInfoLabel) {
    std::string value = leaf.text.value_or("");
    for (const auto& v : leaf.list) value += (value.empty() ? "" : ",") + v;
    want.push_back({std::string(m.label), value});
  }
  for (const auto& metric : family->metric) {
    if (m.way == Way::kFlags) {
      // Every value of the list is a series at 1, and the always-listed ones are there.
      bool all = true;
      for (const auto& v : leaf.list) {
        all = all && std::any_of(family->metric.begin(), family->metric.end(), [&](const auto& x) {
                return HasLabels(x, {{std::string(m.label), v}}) && x.gauge.value == 1;
              });
      }
      for (const auto& v : m.always) {
        all = all && std::any_of(family->metric.begin(), family->metric.end(), [&](const auto& x) {
                return HasLabels(x, {{std::string(m.label), std::string(v)}});
              });
      }
      return all ? testing::AssertionSuccess()
                 : testing::AssertionFailure() << f.name << " lacks a value of the list";
    }
    if (!HasLabels(metric, want)) continue;
    if (m.way == Way::kInfoLabel) return testing::AssertionSuccess();
    if (m.way == Way::kQuantile) {
      for (const auto& q : metric.summary.quantile) {
        if (q.quantile == m.quantile && q.value == leaf.number) return testing::AssertionSuccess();
      }
      continue;
    }
    if (metric.gauge.value == leaf.number) return testing::AssertionSuccess();
  }
  return testing::AssertionFailure() << f.name << " has no sample of the field's value";
}

TEST(ResultFields, EveryFieldReachesMetricsOrSaysWhyNot) {
  probes::ProbeResult random = Full();  // an ops kind: the ops families
  probes::ProbeResult buffered = Full();
  buffered.name = "disk-buffered";
  buffered.kind = probes::ProbeKind::kBuffered;
  for (const probes::ProbeResult& r : {random, buffered}) {
    const auto families = Metrics(r);
    for (const Leaf& leaf : Leaves(r)) {
      EXPECT_TRUE(leaf.set) << "Full() leaves " << leaf.path << " at its default";
      EXPECT_TRUE(InMetrics(families, leaf, r.kind))
          << "/metrics lacks " << leaf.path << " (" << r.name << ")";
    }
  }
}

TEST(ResultFields, OnlySuccessfulRunsExportTheirFigures) {
  probes::ProbeResult r = Full();
  r.outcome = probes::Outcome::kError;
  const auto families = Metrics(r);
  for (const Leaf& leaf : Leaves(r)) {
    if (!leaf.how.on_success) continue;
    const auto* f = leaf.how.family;
    const auto* ops = leaf.how.ops_family;
    for (const auto& family : families) {
      EXPECT_FALSE(family.name == f->name || (ops && family.name == ops->name))
          << family.name << " exported for a failed run (" << leaf.path << ")";
    }
  }
}

TEST(ResultFields, ADefaultResultSurvivesTheRoundTripToo) {
  probes::ProbeResult r;
  r.name = "m";
  r.kind = probes::ProbeKind::kMemory;
  r.outcome = probes::Outcome::kTimeout;
  EXPECT_EQ(Json(dbus::FromDict(dbus::ToDict(r))), Json(r));
}

TEST(ResultFields, KeepsTheOnceJsonShapeAndTheKernelsNames) {
  const std::string json = Json(Full());
  EXPECT_EQ(json.rfind(R"({"name":"disk-random","kind":"random","target":"/dev/vdb",)", 0), 0u)
      << json;
  EXPECT_NE(json.find(R"x("context":{"Active(file)":2097152,"MemFree":1048576})x"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("latency_seconds":{"p50":0.001,"p99":0.004,"count":64})"),
            std::string::npos)
      << json;
  probes::ProbeResult bare;
  const std::string b = Json(bare);
  EXPECT_NE(b.find(R"("ops_per_second":null)"), std::string::npos) << b;
  EXPECT_NE(b.find(R"("latency_seconds":{"p50":null,"p99":null,"count":null})"), std::string::npos)
      << b;
  EXPECT_NE(b.find(R"("time_seconds":null)"), std::string::npos) << b;
  probes::ProbeResult timed;
  probes::TimeParts tp;
  tp.wall = 1;
  tp.kernel_cpu = 0.5;
  tp.other = 0.5;
  tp.psi_io_stall = 0.25;
  timed.time_seconds = tp;
  const std::string t = Json(timed);
  EXPECT_NE(
      t.find(R"("time_seconds":{"wall":1,"user_cpu":0,"kernel_cpu":0.5,)"
             R"("runqueue_wait":null,"device_wait":null,"other":0.5,"device_busy":null,)"
             R"("psi_io_stall":0.25,"psi_memory_stall":null,"blkio_delay":null,)"
             R"("swapin_delay":null,"reclaim_delay":null,"thrashing_delay":null,)"
             R"("compaction_delay":null,"irq_delay":null,"cpu_throttled":null,)"
             R"("cgroup_memory_stall":null,"cgroup_io_stall":null,"device_others_share":null,)"
             R"("page_reported_bytes":null,"memory_high_events":null,"storage_read_bytes":null})"),
      std::string::npos)
      << t;
  const auto& names = probes::ProbeResultFieldNames();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "name");
  EXPECT_EQ(std::count(names.begin(), names.end(), "context"), 1);
}

}  // namespace
}  // namespace iodrift::daemon
