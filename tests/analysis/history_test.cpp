#include "collectors/analysis/history.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

namespace iodrift::probes {
using namespace ::iodrift::analysis;  // NOLINT: tests of the analysis of probe results
namespace {

ProbeResult RandomOk(double t, double ops) {
  ProbeResult r;
  r.name = "disk-random";
  r.kind = probes::ProbeKind::kRandom;
  r.target = "/dev/vdb";
  r.outcome = Outcome::kOk;
  r.start_time_seconds = t;
  r.uptime_seconds = t - 1000;
  r.ops_per_second = {{"read", ops}};
  r.context = {{"MemFree", 4096}, {"Cached", 8192}, {"Dirty", 10}, {"Writeback", 5}};
  r.fragmentation_index = 0.25;
  return r;
}

std::size_t F(DriftFeature f) { return static_cast<std::size_t>(f); }

HistoryPoint At(double wall, std::optional<double> uptime, const char* boot = "b1") {
  HistoryPoint p;
  p.time_seconds = wall;
  p.uptime_seconds = uptime;
  p.boot_id = std::make_shared<const std::string>(boot);
  return p;
}

// A clock stepped back 30 days, then forward 60, within one boot: the points stay in order and
// as far apart as the uptime between them. Across a boot the wall difference counts when it is
// positive, else nothing (never backwards); without uptimes, the same.
TEST(MonotonicTimes, FollowsUptimeAcrossClockStepsAndNeverGoesBack) {
  const double month = 30 * 86400.0;
  std::deque<HistoryPoint> pts = {At(1e9, 100),
                                  At(1e9 + 60, 160),
                                  At(1e9 + 120 - month, 220),       // stepped back
                                  At(1e9 + 180 + month, 280),       // stepped forward
                                  At(1e9 + 500 + month, 10, "b2"),  // a reboot, 320 s later
                                  At(1e9 + 400 + month, std::nullopt, "b2"),  // back, no uptime
                                  At(1e9 + 460 + month, std::nullopt, "b2")};
  const auto t = MonotonicTimes(pts);
  ASSERT_EQ(t.size(), pts.size());
  EXPECT_EQ(t, (std::vector<double>{1e9, 1e9 + 60, 1e9 + 120, 1e9 + 180, 1e9 + 500, 1e9 + 500,
                                    1e9 + 560}));
  EXPECT_TRUE(MonotonicTimes({}).empty());
}

TEST(MakeHistoryPoint, CarriesFigureBaselineRatioAndTheContextOfTheRun) {
  auto boot = std::make_shared<const std::string>("b1");
  HistoryPoint p = MakeHistoryPoint(RandomOk(5000, 1000), 2000.0, boot);
  EXPECT_EQ(p.time_seconds, 5000);
  ASSERT_TRUE(p.boot_id);
  EXPECT_EQ(*p.boot_id, "b1");
  EXPECT_EQ(p.uptime_seconds, 4000);
  EXPECT_EQ(p.outcome, Outcome::kOk);
  EXPECT_EQ(p.figure, 1000);
  EXPECT_EQ(p.baseline, 2000);
  EXPECT_EQ(p.ratio, 0.5);
  EXPECT_EQ(p.features[F(DriftFeature::kMemFree)], 4096);
  EXPECT_EQ(p.features[F(DriftFeature::kCached)], 8192);
  EXPECT_EQ(p.features[F(DriftFeature::kDirtyWriteback)], 15);
  EXPECT_EQ(p.features[F(DriftFeature::kFragmentation)], 0.25);
  EXPECT_TRUE(std::isnan(p.features[F(DriftFeature::kSUnreclaim)]));
}

TEST(MakeHistoryPoint, AFailedRunHasNoFigureAndNoRatio) {
  ProbeResult r = RandomOk(1, 1000);
  r.outcome = Outcome::kTimeout;
  HistoryPoint p = MakeHistoryPoint(r, 2000.0, nullptr);
  EXPECT_EQ(p.outcome, Outcome::kTimeout);
  EXPECT_FALSE(p.figure);
  EXPECT_FALSE(p.ratio);
  EXPECT_EQ(p.baseline, 2000);
  EXPECT_FALSE(p.boot_id);
  EXPECT_FALSE(MakeHistoryPoint(RandomOk(1, 1000), std::nullopt, nullptr).ratio);
}

HistoryRing Filled(int from, int to, std::size_t capacity) {
  HistoryRing ring;
  for (int i = from; i <= to; ++i) {
    ring = ring.Append(MakeHistoryPoint(RandomOk(i, 100.0 * i), std::nullopt, nullptr), capacity);
  }
  return ring;
}

TEST(HistoryRing, KeepsOnlyTheLastCapacityPointsOldestFirst) {
  const HistoryRing ring = Filled(1, 10, 3);
  ASSERT_EQ(ring.size(), 3u);
  EXPECT_EQ(ring[0].time_seconds, 8);
  EXPECT_EQ(ring[1].time_seconds, 9);
  EXPECT_EQ(ring[2].time_seconds, 10);
  EXPECT_EQ(ring.back().figure, 1000);
}

TEST(HistoryRing, KeepsOrderAcrossManyChunksAndTrims) {
  const std::size_t capacity = 5 * kHistoryChunk + 7;
  const HistoryRing ring = Filled(0, 20 * static_cast<int>(kHistoryChunk), capacity);
  ASSERT_EQ(ring.size(), capacity);
  const double first = 20.0 * kHistoryChunk - static_cast<double>(capacity) + 1;
  for (std::size_t i = 0; i < ring.size(); ++i) {
    ASSERT_EQ(ring[i].time_seconds, first + static_cast<double>(i)) << i;
  }
  const HistoryRing trimmed = ring.Trimmed(3);
  ASSERT_EQ(trimmed.size(), 3u);
  EXPECT_EQ(trimmed[0].time_seconds, 20.0 * kHistoryChunk - 2);
  EXPECT_EQ(ring.size(), capacity);  // the original is unchanged
}

TEST(HistoryRing, AppendLeavesTheOlderRingAsItWas) {
  const HistoryRing before = Filled(1, 3, 100);
  const HistoryRing after =
      before.Append(MakeHistoryPoint(RandomOk(4, 400), std::nullopt, nullptr), 100);
  EXPECT_EQ(before.size(), 3u);
  EXPECT_EQ(before.back().time_seconds, 3);
  EXPECT_EQ(after.size(), 4u);
  EXPECT_EQ(after.back().time_seconds, 4);
}

TEST(EvenlySpacedIndices, KeepsFirstAndLastAndAllWhenFew) {
  EXPECT_EQ(EvenlySpacedIndices(3, 5), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(EvenlySpacedIndices(11, 3), (std::vector<std::size_t>{0, 5, 10}));
  EXPECT_EQ(EvenlySpacedIndices(10, 1), (std::vector<std::size_t>{9}));
  EXPECT_TRUE(EvenlySpacedIndices(10, 0).empty());
  auto many = EvenlySpacedIndices(100000, 240);
  ASSERT_EQ(many.size(), 240u);
  EXPECT_EQ(many.front(), 0u);
  EXPECT_EQ(many.back(), 99999u);
  EXPECT_TRUE(std::is_sorted(many.begin(), many.end()));
}

TEST(ThinHistory, CopiesAtMostMaxPointsAndTellsTheRingSize) {
  const HistoryRing ring = Filled(0, 999, 1000);
  const ProbeHistory thin = ThinHistory("p", probes::ProbeKind::kRandom, "/dev/vdb", ring, 10);
  EXPECT_EQ(thin.name, "p");
  EXPECT_EQ(thin.points.size(), 10u);
  EXPECT_EQ(thin.runs_kept, 1000u);
  EXPECT_EQ(thin.points.front().time_seconds, 0);
  EXPECT_EQ(thin.points.back().time_seconds, 999);
}

}  // namespace
}  // namespace iodrift::probes
