// One description of a result: every output (--once --json, /api/v1/probes, D-Bus a{sv} and its
// decoding in iodriftctl, the status page's field table) carries every field of the walk in
// collectors/probes/result_fields.h. A field missing from one output fails here.
#include "collectors/probes/result_fields.h"

#include <set>

#include <gtest/gtest.h>

#include "daemon/dbus/result_dict.h"
#include "daemon/json_writer.h"
#include "daemon/probe_report.h"
#include "daemon/status_page.h"

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
  probes::TimeParts tp;
  tp.wall = 0.5;
  tp.kernel_cpu = 0.1;
  tp.runqueue_wait = 0.05;
  tp.device_wait = 0.3;
  tp.other = 0.05;
  tp.device_busy = 0.3;
  tp.psi_io_stall = 0.2;
  tp.psi_memory_stall = 0;
  r.time_seconds = tp;
  probes::ReaderStep step;  // a one-step readers curve (issue 18)
  step.rate = 1000;
  step.per_reader_min = step.per_reader_max = 1000;
  step.scaling_efficiency = 1;
  step.bytes = 4096;
  step.seconds = 0.5;
  r.readers = {step};
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
    void Text(std::string_view k, const std::string&) override { Add(k); }
    void Flag(std::string_view k, bool) override { Add(k); }
    void Real(std::string_view k, const std::optional<double>&) override { Add(k); }
    void Count(std::string_view k, const std::optional<std::uint64_t>&) override { Add(k); }
    void Signed(std::string_view k, std::int64_t) override { Add(k); }
    void TextList(std::string_view k, const std::vector<std::string>&) override { Add(k); }
    void BeginGroup(std::string_view k, probes::GroupShape, bool) override {
      Add(k);
      groups.insert(paths.back());
      prefix.push_back(paths.back() + ".");
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
             R"("cgroup_memory_stall":null,"device_others_share":null,)"
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
