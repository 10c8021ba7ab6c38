// iodrift_probe_verdict (daemon/verdict_metrics.h): one series per probe with a verdict (a run and
// a baseline), value 1, `cause` the verdict's current cause; none for a probe without a baseline.
#include "daemon/verdict_metrics.h"

#include <algorithm>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "collectors/analysis/probe_states.h"
#include "collectors/analysis/verdict.h"
#include "tests/analysis/states_test_util.h"

namespace iodrift::daemon {
namespace {

using probes::ProbeResult;

// A random probe run at `iops` whose wall time is split into CPU and run-queue wait.
ProbeResult Random(const std::string& name, double iops, double runqueue_share, double uptime) {
  ProbeResult r;
  r.name = name;
  r.kind = probes::ProbeKind::kRandom;
  r.target = "/dev/" + name;
  r.outcome = probes::Outcome::kOk;
  r.spec_size = 64;
  r.duration_seconds = 1;
  r.ops_per_second["read"] = iops;
  r.uptime_seconds = uptime;
  probes::TimeParts tp;
  tp.wall = 1;
  tp.user_cpu = 0.05;
  tp.kernel_cpu = 0.15;
  tp.runqueue_wait = runqueue_share;
  tp.device_wait = 0;
  tp.other = 1 - 0.2 - runqueue_share;
  r.time_seconds = tp;
  return r;
}

std::string Label(const prometheus::ClientMetric& m, const std::string& name) {
  for (const auto& l : m.label) {
    if (l.name == name) return l.value;
  }
  return "";
}

TEST(VerdictFamily, OneSeriesPerProbeWithAVerdictValueOneOnTheCurrentCause) {
  analysis::ProbeStates store;
  // "slow": a baseline, then runs at 30 % of it whose added time is run-queue wait (as many as
  // the verdict wants in a row).
  for (int i = 0; i < 5; ++i) {
    probes::testing::DefineAndRecord(store, Random("slow", 2500, 0.05, 10.0 * i));
  }
  for (std::size_t i = 0; i < analysis::kSustainedRuns; ++i) {
    probes::testing::DefineAndRecord(store, Random("slow", 750, 0.75, 3600.0 + 10.0 * i));
  }
  // "steady": a baseline and no slowdown.
  for (int i = 0; i < 6; ++i) {
    probes::testing::DefineAndRecord(store, Random("steady", 1000, 0.05, 10.0 * i));
  }
  // "young": ran, but has no baseline yet.
  probes::testing::DefineAndRecord(store, Random("young", 1000, 0.05, 10));

  std::vector<prometheus::MetricFamily> out;
  const auto snapshot = store.Snapshot();
  AppendVerdictFamily(*snapshot, out);
  ASSERT_EQ(out.size(), 1u);
  const prometheus::MetricFamily& family = out[0];
  EXPECT_EQ(family.name, "iodrift_probe_verdict");
  EXPECT_EQ(family.type, prometheus::MetricType::Gauge);
  // HELP names every cause and the doc that lists their evidence.
  for (analysis::Cause cause : analysis::AllCauses()) {
    EXPECT_NE(family.help.find(std::string(analysis::CauseName(cause))), std::string::npos)
        << family.help;
  }
  EXPECT_NE(family.help.find("docs/reading-drift.md"), std::string::npos) << family.help;

  std::map<std::string, std::string> cause_of;  // probe → cause
  for (const auto& m : family.metric) {
    EXPECT_EQ(m.gauge.value, 1) << Label(m, "probe");
    EXPECT_TRUE(cause_of.emplace(Label(m, "probe"), Label(m, "cause")).second)
        << "two series for probe " << Label(m, "probe");
    EXPECT_TRUE(analysis::ParseCauseName(Label(m, "cause"))) << Label(m, "cause");
    EXPECT_EQ(Label(m, "kind"), "random");
    EXPECT_EQ(Label(m, "target"), "/dev/" + Label(m, "probe"));
  }
  EXPECT_EQ(cause_of.size(), 2u);
  EXPECT_EQ(cause_of.count("young"), 0u) << "a probe without a baseline has no verdict series";
  // Exactly the verdict's cause, the one every other output shows.
  for (const auto& state : *snapshot) {
    if (state->spec.name == "young") continue;
    const auto verdict = analysis::VerdictOf(*state, analysis::FindTwin(*snapshot, *state));
    EXPECT_EQ(cause_of[state->spec.name], analysis::CauseName(verdict.cause)) << verdict.line;
  }
  EXPECT_EQ(cause_of["steady"], "undetermined");
  EXPECT_NE(cause_of["slow"], "undetermined") << "the slowdown names a cause";
}

// The verdict names a cause only for a slowdown that lasted kSustainedRuns runs in a row
// (ProbeState::recent_ratios, kept by ProbeStates::Record): one slow run among good ones is the
// figure's scatter.
TEST(VerdictFamily, ACauseIsNamedOnlyOnceTheSlowdownLasted) {
  analysis::ProbeStates store;
  for (int i = 0; i < 5; ++i) {
    probes::testing::DefineAndRecord(store, Random("p", 2500, 0.05, 10.0 * i));
  }
  auto verdict = [&] {
    const auto snapshot = store.Snapshot();
    return analysis::VerdictOf(*snapshot->front(), nullptr);
  };
  double uptime = 100;
  auto record = [&](double iops, double runqueue) {
    probes::testing::DefineAndRecord(store, Random("p", iops, runqueue, uptime += 10));
  };
  for (std::size_t slow = 1; slow <= analysis::kSustainedRuns; ++slow) {
    record(750, 0.75);
    const auto v = verdict();
    if (slow < analysis::kSustainedRuns) {
      EXPECT_EQ(v.cause, analysis::Cause::kUndetermined) << slow << " slow runs: " << v.line;
      EXPECT_NE(v.line.find("a single slow run"), std::string::npos) << v.line;
    } else {
      EXPECT_EQ(v.cause, analysis::Cause::kCpuContention) << v.line;
    }
  }
  // One good run among slow ones: the next slow run is a single one again, then it lasts.
  record(2500, 0.05);
  record(750, 0.75);
  EXPECT_EQ(verdict().cause, analysis::Cause::kUndetermined) << verdict().line;
  EXPECT_NE(verdict().line.find("the run before it at 100 %"), std::string::npos) << verdict().line;
  record(750, 0.75);
  record(750, 0.75);
  EXPECT_EQ(verdict().cause, analysis::Cause::kCpuContention) << verdict().line;
  // A failed run in between keeps the ratios of the runs that had one.
  probes::ProbeResult failed = Random("p", 750, 0.75, uptime += 10);
  failed.outcome = probes::Outcome::kError;
  failed.ops_per_second.clear();
  failed.time_seconds.reset();
  probes::testing::DefineAndRecord(store, failed);
  record(750, 0.75);
  EXPECT_EQ(verdict().cause, analysis::Cause::kCpuContention) << verdict().line;
}

TEST(VerdictFamily, NothingBeforeAnyProbeHasABaseline) {
  analysis::ProbeStates store;
  probes::testing::DefineAndRecord(store, Random("young", 1000, 0.05, 10));
  std::vector<prometheus::MetricFamily> out;
  AppendVerdictFamily(*store.Snapshot(), out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace iodrift::daemon
