// Drift analysis on synthetic series with known answers: feature extraction, average ranks,
// Spearman (ties, too few points, constant series, noise), the window and the explain text.
#include "collectors/analysis/drift.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "collectors/analysis/explain.h"
#include "collectors/analysis/probe_states.h"
#include "collectors/probes/context.h"
#include "tests/analysis/states_test_util.h"

namespace iodrift::probes {
using namespace ::iodrift::analysis;  // NOLINT: tests of the analysis of probe results
namespace {

constexpr std::size_t Idx(DriftFeature f) { return static_cast<std::size_t>(f); }

ProbeResult Buffered(double throughput, double sunreclaim, double uptime) {
  ProbeResult r;
  r.name = "disk-buffered";
  r.kind = probes::ProbeKind::kBuffered;
  r.target = "/dev/vda";
  r.outcome = Outcome::kOk;
  r.spec_size = 64ull << 20;
  r.duration_seconds = 0.5;
  r.throughput_bytes_per_second = throughput;
  r.uptime_seconds = uptime;
  r.context["SUnreclaim"] = static_cast<std::uint64_t>(sunreclaim);
  r.context["MemFree"] = 8ull << 30;
  return r;
}

TEST(DriftFigure, PicksThroughputOrTheKindsOperation) {
  ProbeResult r = Buffered(100, 0, 0);
  EXPECT_EQ(DriftFigure(r), 100);
  r.kind = probes::ProbeKind::kRandom;
  r.ops_per_second = {{"read", 250}};
  EXPECT_EQ(DriftFigure(r), 250);
  r.kind = probes::ProbeKind::kMetadata;
  r.ops_per_second = {{"create", 40}, {"stat", 9000}};
  EXPECT_EQ(DriftFigure(r), 40);
  r.outcome = Outcome::kError;
  EXPECT_FALSE(DriftFigure(r));
}

TEST(ExtractDriftFeatures, DerivesRatesAndSumsAndLeavesMissingInputsUnknown) {
  ProbeResult r = Buffered(100, 5000, 3600);
  r.duration_seconds = 2;
  r.context["Dirty"] = 100;
  r.context["Writeback"] = 20;
  r.pressure_delta_us["memory_some"] = 500000;  // 0.5 s of 2 s
  r.vmstat_delta["pgscan_kswapd"] = 10;
  r.vmstat_delta["pgsteal_direct"] = 5;
  r.vmstat_delta["pgfault"] = 1000;  // not reclaim
  r.dentry_state["negative"] = 77;
  r.fragmentation_index = 0.25;
  const DriftFeatures f = ExtractDriftFeatures(r);
  EXPECT_EQ(f[Idx(DriftFeature::kUptime)], 3600);
  EXPECT_EQ(f[Idx(DriftFeature::kSUnreclaim)], 5000);
  EXPECT_EQ(f[Idx(DriftFeature::kDirtyWriteback)], 120);
  EXPECT_DOUBLE_EQ(f[Idx(DriftFeature::kPsiMemory)], 0.25);
  EXPECT_EQ(f[Idx(DriftFeature::kReclaim)], 15);
  EXPECT_EQ(f[Idx(DriftFeature::kDentriesNegative)], 77);
  EXPECT_EQ(f[Idx(DriftFeature::kFragmentation)], 0.25);
  EXPECT_TRUE(std::isnan(f[Idx(DriftFeature::kPsiIo)]));
  EXPECT_TRUE(std::isnan(f[Idx(DriftFeature::kCached)]));
}

TEST(ExtractDriftFeatures, PerGibTimePartsAreOfTheFirstStepOfAReadersCurve) {
  // time_seconds are the first step's (one reader, 64 MiB); the run read 192 MiB in all.
  ProbeResult r = Buffered(100, 5000, 3600);
  r.bytes = 192ull << 20;
  ReaderStep one;
  one.readers = 1;
  one.bytes = 64ull << 20;
  ReaderStep two;
  two.readers = 2;
  two.bytes = 128ull << 20;
  r.readers = {one, two};
  TimeParts tp;
  tp.wall = 0.5;
  tp.kernel_cpu = 0.1;
  tp.device_busy = 0.2;
  r.time_seconds = tp;
  const DriftFeatures f = ExtractDriftFeatures(r);
  EXPECT_DOUBLE_EQ(f[Idx(DriftFeature::kKernelCpuPerGib)], 0.1 * 16);  // 64 MiB = 1/16 GiB
  EXPECT_DOUBLE_EQ(f[Idx(DriftFeature::kDeviceBusyPerGib)], 0.2 * 16);
}

TEST(DriftFeatureName, RoundTripsEveryFeature) {
  for (std::size_t i = 0; i < kDriftFeatureCount; ++i) {
    EXPECT_FALSE(DriftFeatureName(i).empty());
    EXPECT_EQ(ParseDriftFeatureName(DriftFeatureName(i)), i);
  }
  EXPECT_FALSE(ParseDriftFeatureName("bogus"));
}

TEST(AverageRanks, GivesTiedValuesTheMeanOfTheirRanks) {
  const std::vector<double> v = {10, 20, 20, 30, 5};
  EXPECT_EQ(AverageRanks(v), (std::vector<double>{2, 3.5, 3.5, 5, 1}));
}

TEST(Spearman, IsOneForAnyMonotoneRelationAndMinusOneWhenReversed) {
  std::vector<double> x, y, z;
  for (int i = 0; i < 10; ++i) {
    x.push_back(i);
    y.push_back(std::exp(i));  // monotone, far from linear
    z.push_back(-i * i);
  }
  EXPECT_DOUBLE_EQ(*Spearman(x, y), 1.0);
  EXPECT_DOUBLE_EQ(*Spearman(x, z), -1.0);
}

TEST(Spearman, HandlesTiesWithAverageRanks) {
  // Reference values from the textbook definition (Pearson of average ranks).
  EXPECT_NEAR(*Spearman(std::vector<double>{1, 2, 2, 3, 4, 5, 6, 7},
                        std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}),
              0.994029797388005, 1e-12);
  EXPECT_NEAR(*Spearman(std::vector<double>{1, 1, 1, 2, 2, 3, 3, 3, 4},
                        std::vector<double>{5, 3, 4, 2, 2, 1, 1, 0, 0}),
              -0.9564715964616591, 1e-12);
}

TEST(Spearman, GivesNothingForTooFewPointsOrAConstantSeries) {
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7};
  std::vector<double> y = {7, 6, 5, 4, 3, 2, 1};
  ASSERT_EQ(x.size() + 1, kMinCorrelationPoints);
  EXPECT_FALSE(Spearman(x, y));
  x.push_back(8);
  y.push_back(0);
  EXPECT_TRUE(Spearman(x, y));
  EXPECT_FALSE(Spearman(x, std::vector<double>(8, 3.0)));
  EXPECT_FALSE(Spearman(x, std::vector<double>(7, 3.0)));  // length mismatch
}

TEST(Spearman, SkipsPairsWithAnUnknownValue) {
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<double> y = {1, 2, 3, 4, 5, 6, 7, 8, NAN};
  EXPECT_DOUBLE_EQ(*Spearman(x, y), 1.0);  // 8 finite pairs
  y[0] = NAN;
  EXPECT_FALSE(Spearman(x, y));  // 7
}

TEST(DriftWindow, RanksSlabFirstWhenThroughputFallsExactlyAsSlabGrows) {
  // Slab goes up and down over time (a shuffled sequence), throughput follows it exactly;
  // uptime rises steadily, so it must not explain the figure as well as slab does.
  std::vector<double> slab(40);
  for (std::size_t i = 0; i < slab.size(); ++i) slab[i] = 100e6 + 10e6 * static_cast<double>(i);
  std::mt19937 rng(7);
  std::shuffle(slab.begin(), slab.end(), rng);
  DriftWindow window;
  for (std::size_t i = 0; i < slab.size(); ++i) {
    const double throughput = 2e9 - 3 * slab[i];
    window.Add({throughput, ExtractDriftFeatures(Buffered(throughput, slab[i], 60.0 * i))});
  }
  const DriftCorrelations rho = window.Correlations();
  ASSERT_TRUE(rho[Idx(DriftFeature::kSUnreclaim)]);
  EXPECT_DOUBLE_EQ(*rho[Idx(DriftFeature::kSUnreclaim)], -1.0);
  ASSERT_TRUE(rho[Idx(DriftFeature::kUptime)]);
  EXPECT_LT(std::fabs(*rho[Idx(DriftFeature::kUptime)]), 0.5);
  EXPECT_FALSE(rho[Idx(DriftFeature::kMemFree)]);  // constant: no correlation
  EXPECT_FALSE(rho[Idx(DriftFeature::kCached)]);   // never known

  ProbeState record;
  record.last = Buffered(2e9 - 3 * slab.back(), slab.back(), 2400);
  record.last_figure = record.last.throughput_bytes_per_second;
  record.baseline = 1.8e9;
  record.baseline_features[Idx(DriftFeature::kSUnreclaim)] = 100e6;
  const std::string text = ExplainProbe(record, window);
  const auto first_feature = text.find("    sunreclaim_bytes");
  ASSERT_NE(first_feature, std::string::npos) << text;
  EXPECT_LT(first_feature, text.find("    uptime_seconds")) << text;
  EXPECT_NE(text.find("of baseline"), std::string::npos) << text;
  EXPECT_NE(text.find("95.4 MiB"), std::string::npos) << text;  // 100e6 bytes at baseline time
}

TEST(ExplainProbe, PrintsCountsAsWholeNumbers) {
  // A squeezed run reclaims ~26,000 pages; the row must say so, not 2.662e+04.
  DriftWindow window;
  for (int i = 0; i < 10; ++i) {
    ProbeResult r = Buffered(1e9 + 1e7 * i, 200e6, 100.0 * i);
    r.vmstat_delta["pgscan_direct"] = 13312u * static_cast<std::uint64_t>(i % 2);
    r.vmstat_delta["pgsteal_direct"] = 13312u * static_cast<std::uint64_t>(i % 2);
    window.Add({*r.throughput_bytes_per_second, ExtractDriftFeatures(r)});
  }
  ProbeState record;
  record.last = Buffered(1e9, 200e6, 1000);
  record.last_figure = 1e9;
  record.baseline = 1e9;
  record.baseline_features[Idx(DriftFeature::kReclaim)] = 0;
  const std::string text = ExplainProbe(record, window);
  const auto row = text.find("    reclaim_pages");
  ASSERT_NE(row, std::string::npos) << text;
  const std::string line = text.substr(row, text.find('\n', row) - row);
  EXPECT_NE(line.find(" 26624 "), std::string::npos) << line;
  EXPECT_EQ(line.find("e+"), std::string::npos) << line;
  EXPECT_EQ(line.back(), '0') << line;  // at baseline: no reclaim
}

TEST(ExplainProbe, PrintsSecondsPerGibWithTheirFraction) {
  // kernel CPU per GiB is 0.0x s: a whole-number format printed "0" now and "1" at baseline.
  DriftWindow window;
  for (int i = 0; i < 10; ++i) {
    DriftFeatures f = UnknownFeatures();
    f[Idx(DriftFeature::kKernelCpuPerGib)] = 0.01 * (i + 1);
    window.Add({1e9 - 1e7 * i, f});
  }
  ProbeState record;
  record.last = Buffered(1e9, 200e6, 1000);
  record.last_figure = 1e9;
  record.baseline = 1e9;
  record.baseline_features[Idx(DriftFeature::kKernelCpuPerGib)] = 0.643;
  const std::string text = ExplainProbe(record, window);
  const auto row = text.find("    kernel_cpu_seconds_per_gib");
  ASSERT_NE(row, std::string::npos) << text;
  const std::string line = text.substr(row, text.find('\n', row) - row);
  EXPECT_NE(line.find("0.1 s/GiB"), std::string::npos) << line;
  EXPECT_NE(line.find("0.643 s/GiB"), std::string::npos) << line;
}

TEST(DriftWindow, IndependentNoiseGivesOnlyWeakCorrelations) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> noise(0, 1);
  DriftWindow window;
  for (int i = 0; i < 64; ++i) {
    ProbeResult r = Buffered(1e9 + 1e7 * noise(rng), 200e6 + 1e6 * noise(rng), 1000 + noise(rng));
    r.context["MemFree"] = static_cast<std::uint64_t>(4e9 + 1e7 * noise(rng));
    window.Add({*r.throughput_bytes_per_second, ExtractDriftFeatures(r)});
  }
  for (const auto& rho : window.Correlations()) {
    if (rho) {
      EXPECT_LT(std::fabs(*rho), 0.35);
    }
  }
}

TEST(DriftWindow, KeepsOnlyTheLastCapacitySamples) {
  DriftWindow window(3);
  for (int i = 0; i < 5; ++i) window.Add({static_cast<double>(i), UnknownFeatures()});
  ASSERT_EQ(window.size(), 3u);
  EXPECT_EQ(window.samples().front().figure, 2);
  DriftWindow fresh;
  EXPECT_EQ(fresh.capacity(), kDriftWindowSize);
}

TEST(ExplainProbe, SaysWhatIsMissingWhenNothingIsKnownYet) {
  ProbeState record;
  record.last = Buffered(1e9, 1e8, 10);
  record.baseline_samples = {1e9, 1.1e9};
  const std::string text = ExplainProbe(record, DriftWindow{});
  EXPECT_NE(text.find("forming, 2 of 5"), std::string::npos) << text;
  EXPECT_NE(text.find("correlations: none yet"), std::string::npos) << text;
}

TEST(ExplainFigures, HoldsTheNumbersBehindTheTextAndOmitsWhatIsUnknown) {
  ProbeState forming;
  forming.last = Buffered(1e9, 1e8, 10);
  forming.baseline_samples = {1e9, 1.1e9};
  auto f = ExplainFigures(forming, DriftWindow{});
  EXPECT_FALSE(f.count("baseline"));
  EXPECT_FALSE(f.count("ratio"));
  EXPECT_EQ(f.at("baseline_runs_counted"), 2);
  EXPECT_EQ(f.at("baseline_runs_needed"), 5);
  EXPECT_EQ(f.at("window_runs"), 0);

  DriftWindow window;
  ProbeState record;
  for (int i = 0; i < 10; ++i) {
    const double slab = 100e6 + 10e6 * i;
    const double throughput = 2e9 - 3 * slab;
    window.Add({throughput, ExtractDriftFeatures(Buffered(throughput, slab, 60.0 * i))});
  }
  record.last = Buffered(1.5e9, 200e6, 600);
  record.last_figure = 1.5e9;
  record.baseline = 2e9;
  record.baseline_ratio = 0.75;
  record.worst_ratio = 0.7;
  record.uptime_at_worst = 500;
  f = ExplainFigures(record, window);
  EXPECT_EQ(f.at("last"), 1.5e9);
  EXPECT_EQ(f.at("baseline"), 2e9);
  EXPECT_EQ(f.at("ratio"), 0.75);
  EXPECT_EQ(f.at("worst_ratio"), 0.7);
  EXPECT_EQ(f.at("uptime_at_worst"), 500);
  EXPECT_EQ(f.at("window_runs"), 10);
  EXPECT_DOUBLE_EQ(f.at("rho.sunreclaim_bytes"), -1.0);
  EXPECT_DOUBLE_EQ(f.at("rho.uptime_seconds"), -1.0);  // both rise together here
  EXPECT_FALSE(f.count("rho.mem_free_bytes"));
}

}  // namespace
}  // namespace iodrift::probes

namespace iodrift::probes {
namespace {

TEST(FragmentationIndex, IsTheShareOfFreePagesInBlocksBelowOrderFour) {
  // Orders 0..4: 4 pages in order 0, 2 blocks of order 1 (4 pages), 1 block of order 4
  // (16 pages): 8 of 24 free pages are in small blocks.
  auto b = proc::ParseBuddyinfo("Node 0, zone   Normal      4      2      0      0      1\n");
  EXPECT_DOUBLE_EQ(*FragmentationIndex(b), 8.0 / 24);
  EXPECT_FALSE(FragmentationIndex(proc::ParseBuddyinfo("Node 0, zone Normal 0 0 0\n")));
}

}  // namespace
}  // namespace iodrift::probes
