// The drift families of daemon/probe_metrics.cpp: baseline and ratio (bytes/s and ops/s), worst
// ratio, and iodrift_probe_correlation, suppressed until the window holds enough points; the
// configured interval and the last run's latency quantiles.
#include "daemon/probe_metrics.h"

#include <algorithm>
#include <chrono>
#include <map>

#include <gtest/gtest.h>

#include "collectors/analysis/probe_states.h"
#include "collectors/probes/io_util.h"
#include "tests/analysis/states_test_util.h"

namespace iodrift::daemon {
namespace {

using probes::ProbeResult;

ProbeResult Random(double iops, double slab, double uptime) {
  ProbeResult r;
  r.name = "disk-random";
  r.kind = probes::ProbeKind::kRandom;
  r.target = "/dev/vda";
  r.outcome = probes::Outcome::kOk;
  r.spec_size = 64;
  r.duration_seconds = 1;
  r.ops_per_second["read"] = iops;
  r.uptime_seconds = uptime;
  r.context["SUnreclaim"] = static_cast<std::uint64_t>(slab);
  return r;
}

const prometheus::MetricFamily* Find(const std::vector<prometheus::MetricFamily>& families,
                                     const std::string& name) {
  auto it =
      std::find_if(families.begin(), families.end(), [&](const auto& f) { return f.name == name; });
  return it == families.end() ? nullptr : &*it;
}

std::string Label(const prometheus::ClientMetric& m, const std::string& name) {
  for (const auto& l : m.label) {
    if (l.name == name) return l.value;
  }
  return "";
}

TEST(AppendProbeFamilies, ExportsOpsBaselinesRatiosAndWorst) {
  analysis::ProbeStates store;
  for (int i = 0; i < 5; ++i) probes::testing::DefineAndRecord(store, Random(1000, 1e6, 10.0 * i));
  probes::testing::DefineAndRecord(store, Random(400, 2e6, 3600));
  std::vector<prometheus::MetricFamily> out;
  AppendProbeFamilies(*store.Snapshot(), out);
  EXPECT_EQ(Find(out, "iodrift_probe_baseline_bytes_per_second"), nullptr);
  const auto* baseline = Find(out, "iodrift_probe_baseline_ops_per_second");
  ASSERT_NE(baseline, nullptr);
  EXPECT_NE(baseline->help.find("random (op=read)"), std::string::npos);
  EXPECT_EQ(baseline->metric.at(0).gauge.value, 1000);
  const auto* ratio = Find(out, "iodrift_probe_baseline_ratio");
  ASSERT_NE(ratio, nullptr);
  EXPECT_DOUBLE_EQ(ratio->metric.at(0).gauge.value, 0.4);
  const auto* worst = Find(out, "iodrift_probe_baseline_worst_ratio");
  ASSERT_NE(worst, nullptr);
  EXPECT_DOUBLE_EQ(worst->metric.at(0).gauge.value, 0.4);
  const auto* at = Find(out, "iodrift_probe_baseline_worst_uptime_seconds");
  ASSERT_NE(at, nullptr);
  EXPECT_EQ(at->metric.at(0).gauge.value, 3600);
}

TEST(AppendProbeFamilies, ExportsCorrelationsOnlyOnceTheWindowHoldsEnoughPoints) {
  analysis::ProbeStates store;
  for (std::size_t i = 0; i + 1 < analysis::kMinCorrelationPoints; ++i) {
    probes::testing::DefineAndRecord(store, Random(1000 - 10.0 * i, 1e6 * (1 + i), 60.0 * i));
  }
  std::vector<prometheus::MetricFamily> out;
  AppendProbeFamilies(*store.Snapshot(), out);
  EXPECT_EQ(Find(out, "iodrift_probe_correlation"), nullptr);

  probes::testing::DefineAndRecord(store, Random(1, 1e9, 1e5));
  out.clear();
  AppendProbeFamilies(*store.Snapshot(), out);
  const auto* corr = Find(out, "iodrift_probe_correlation");
  ASSERT_NE(corr, nullptr);
  EXPECT_NE(corr->help.find("last " + std::to_string(analysis::kDriftWindowSize)),
            std::string::npos);
  bool slab = false;
  for (const auto& m : corr->metric) {
    EXPECT_EQ(Label(m, "probe"), "disk-random");
    EXPECT_EQ(Label(m, "kind"), "random");
    EXPECT_EQ(Label(m, "target"), "/dev/vda");
    if (Label(m, "feature") == "sunreclaim_bytes") {
      slab = true;
      EXPECT_DOUBLE_EQ(m.gauge.value, -1.0);
    }
    EXPECT_NE(Label(m, "feature"), "mem_free_bytes");  // never known: suppressed
  }
  EXPECT_TRUE(slab);
}

TEST(AppendProbeFamilies, ExportsTheConfiguredIntervalOfProbesThatRan) {
  analysis::ProbeStates store;
  ProbeResult r = Random(1000, 1e6, 10);
  probes::ProbeSpec random = probes::testing::SpecOf(r);
  random.interval = std::chrono::milliseconds(2500);
  probes::ProbeSpec other;
  other.name = "never-ran";
  other.interval = std::chrono::minutes(10);
  for (const auto& defined : store.Define({random, other})) {
    if (defined.spec.name == r.name) r.generation = defined.generation;
  }
  ASSERT_TRUE(store.Record(r));
  std::vector<prometheus::MetricFamily> out;
  AppendProbeFamilies(*store.Snapshot(), out);
  const auto* interval = Find(out, "iodrift_probe_interval_seconds");
  ASSERT_NE(interval, nullptr);
  EXPECT_EQ(interval->type, prometheus::MetricType::Gauge);
  ASSERT_EQ(interval->metric.size(), 1u);  // only probes that ran: labels come from the run
  EXPECT_EQ(Label(interval->metric[0], "probe"), "disk-random");
  EXPECT_EQ(Label(interval->metric[0], "kind"), "random");
  EXPECT_EQ(Label(interval->metric[0], "target"), "/dev/vda");
  EXPECT_DOUBLE_EQ(interval->metric[0].gauge.value, 2.5);
}

TEST(AppendProbeFamilies, BaselinesCarryTheirUnitInTheName) {
  analysis::ProbeStates store;
  for (int i = 0; i < 5; ++i) probes::testing::DefineAndRecord(store, Random(1000, 1e6, 10.0 * i));
  ProbeResult cached;
  cached.name = "disk-cached";
  cached.kind = probes::ProbeKind::kCached;
  cached.target = "/dev/vda";
  cached.outcome = probes::Outcome::kOk;
  cached.throughput_bytes_per_second = 3e9;
  for (int i = 0; i < 5; ++i) probes::testing::DefineAndRecord(store, cached);
  std::vector<prometheus::MetricFamily> out;
  AppendProbeFamilies(*store.Snapshot(), out);
  const auto* bytes = Find(out, "iodrift_probe_baseline_bytes_per_second");
  const auto* ops = Find(out, "iodrift_probe_baseline_ops_per_second");
  ASSERT_NE(bytes, nullptr);
  ASSERT_NE(ops, nullptr);
  ASSERT_EQ(bytes->metric.size(), 1u);  // the random probe's ops/s never under a bytes name
  EXPECT_EQ(Label(bytes->metric[0], "probe"), "disk-cached");
  EXPECT_DOUBLE_EQ(bytes->metric[0].gauge.value, 3e9);
  ASSERT_EQ(ops->metric.size(), 1u);
  EXPECT_EQ(Label(ops->metric[0], "probe"), "disk-random");
  EXPECT_EQ(Label(ops->metric[0], "op"), "read");
  EXPECT_DOUBLE_EQ(ops->metric[0].gauge.value, 1000);
}

TEST(AppendProbeFamilies, ExportsTheLastRunsLatencyQuantiles) {
  analysis::ProbeStates store;
  ProbeResult r = Random(1000, 1e6, 10);
  r.latency = probes::LatencyHistogram{};
  r.latency->count = 64;
  r.latency->p50_seconds = 0.0002;
  r.latency->p99_seconds = 0.004;
  probes::testing::DefineAndRecord(store, r);
  ProbeResult cached;  // a sequential kind carries no latency
  cached.name = "disk-cached";
  cached.kind = probes::ProbeKind::kCached;
  cached.target = "/dev/vda";
  cached.outcome = probes::Outcome::kOk;
  cached.throughput_bytes_per_second = 1e9;
  probes::testing::DefineAndRecord(store, cached);
  std::vector<prometheus::MetricFamily> out;
  AppendProbeFamilies(*store.Snapshot(), out);
  const auto* last = Find(out, "iodrift_probe_latency_last_seconds");
  ASSERT_NE(last, nullptr);
  // A summary (promtool: a `quantile` label belongs to summaries only): the quantiles of the last
  // run, count and sum cumulative like the histogram's.
  EXPECT_EQ(last->type, prometheus::MetricType::Summary);
  ASSERT_EQ(last->metric.size(), 1u);
  const auto& m = last->metric[0];
  EXPECT_EQ(Label(m, "probe"), "disk-random");
  EXPECT_EQ(Label(m, "kind"), "random");
  std::map<double, double> by_quantile;
  for (const auto& q : m.summary.quantile) by_quantile[q.quantile] = q.value;
  ASSERT_EQ(by_quantile.size(), 2u);
  EXPECT_DOUBLE_EQ(by_quantile.at(0.5), 0.0002);
  EXPECT_DOUBLE_EQ(by_quantile.at(0.99), 0.004);
  auto record = store.Get("disk-random");
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(m.summary.sample_count, record->latency_total.count);
  EXPECT_DOUBLE_EQ(m.summary.sample_sum, record->latency_total.sum_seconds);

  // A failed run has no figures: the quantiles disappear with it rather than showing old ones.
  ProbeResult failed = Random(0, 1e6, 20);
  failed.outcome = probes::Outcome::kError;
  failed.error = "EIO";
  failed.ops_per_second.clear();
  failed.latency = r.latency;  // even with latencies of the operations before the error
  probes::testing::DefineAndRecord(store, failed);
  out.clear();
  AppendProbeFamilies(*store.Snapshot(), out);
  EXPECT_EQ(Find(out, "iodrift_probe_latency_last_seconds"), nullptr);
}

TEST(AppendProbeFamilies, ExportsTheSampleCountAndOnlyTheQuantilesItSupports) {
  analysis::ProbeStates store;
  ProbeResult r = Random(1000, 1e6, 10);
  std::vector<double> lat;
  for (int i = 1; i <= 64; ++i) lat.push_back(i * 1e-6);
  r.latency = probes::BuildLatencyHistogram(lat);  // 64 samples: no honest p99
  probes::testing::DefineAndRecord(store, r);
  std::vector<prometheus::MetricFamily> out;
  AppendProbeFamilies(*store.Snapshot(), out);
  const auto* samples = Find(out, "iodrift_probe_latency_last_samples");
  ASSERT_NE(samples, nullptr);
  ASSERT_EQ(samples->metric.size(), 1u);
  EXPECT_EQ(Label(samples->metric[0], "probe"), "disk-random");
  EXPECT_DOUBLE_EQ(samples->metric[0].gauge.value, 64);
  const auto* last = Find(out, "iodrift_probe_latency_last_seconds");
  ASSERT_NE(last, nullptr);
  ASSERT_EQ(last->metric.size(), 1u);
  ASSERT_EQ(last->metric[0].summary.quantile.size(), 1u);
  EXPECT_DOUBLE_EQ(last->metric[0].summary.quantile[0].quantile, 0.5);
  EXPECT_DOUBLE_EQ(last->metric[0].summary.quantile[0].value, 32e-6);

  // Too few for any percentile: the summary goes, the count stays.
  r.latency = probes::BuildLatencyHistogram({1e-3, 2e-3, 3e-3});
  probes::testing::DefineAndRecord(store, r);
  out.clear();
  AppendProbeFamilies(*store.Snapshot(), out);
  EXPECT_EQ(Find(out, "iodrift_probe_latency_last_seconds"), nullptr);
  samples = Find(out, "iodrift_probe_latency_last_samples");
  ASSERT_NE(samples, nullptr);
  EXPECT_DOUBLE_EQ(samples->metric[0].gauge.value, 3);
}

}  // namespace
}  // namespace iodrift::daemon
