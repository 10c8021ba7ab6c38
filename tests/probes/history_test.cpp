#include "collectors/probes/history.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace iodrift::probes {
namespace {

ProbeResult RandomOk(double t, double ops) {
  ProbeResult r;
  r.name = "disk-random";
  r.kind = config::ProbeKind::kRandom;
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

TEST(ResultHistory, KeepsOnlyTheLastCapacityPointsOldestFirst) {
  ResultHistory history(3);
  EXPECT_FALSE(history.Get("disk-random"));
  for (int i = 1; i <= 10; ++i) history.Add(RandomOk(i, 100.0 * i), std::nullopt);
  auto h = history.Get("disk-random");
  ASSERT_TRUE(h);
  ASSERT_EQ(h->points.size(), 3u);
  EXPECT_EQ(h->points[0].time_seconds, 8);
  EXPECT_EQ(h->points[1].time_seconds, 9);
  EXPECT_EQ(h->points[2].time_seconds, 10);
  EXPECT_EQ(h->points[2].figure, 1000);
  EXPECT_EQ(h->kind, config::ProbeKind::kRandom);
  EXPECT_EQ(h->target, "/dev/vdb");
}

TEST(ResultHistory, ClampsTheCapacityAndTrimsWhenItShrinks) {
  EXPECT_EQ(ResultHistory(0).capacity(), kMinHistoryRuns);
  EXPECT_EQ(ResultHistory(1u << 30).capacity(), kMaxHistoryRuns);
  ResultHistory history(10);
  for (int i = 1; i <= 10; ++i) history.Add(RandomOk(i, 100), std::nullopt);
  history.SetCapacity(4);
  EXPECT_EQ(history.capacity(), 4u);
  auto h = history.Get("disk-random");
  ASSERT_EQ(h->points.size(), 4u);
  EXPECT_EQ(h->points.front().time_seconds, 7);
  history.SetCapacity(8);  // growing keeps what is there
  history.Add(RandomOk(11, 100), std::nullopt);
  EXPECT_EQ(history.Get("disk-random")->points.size(), 5u);
}

TEST(ResultHistory, StampsTheBootIdSetBeforeTheRun) {
  ResultHistory history;
  history.Add(RandomOk(1, 100), std::nullopt);
  history.SetBootId("boot-a");
  history.Add(RandomOk(2, 100), std::nullopt);
  auto h = history.Get("disk-random");
  EXPECT_FALSE(h->points[0].boot_id);
  ASSERT_TRUE(h->points[1].boot_id);
  EXPECT_EQ(*h->points[1].boot_id, "boot-a");
}

TEST(ResultHistory, ARedefinedProbeStartsAnEmptyRing) {
  ResultHistory history;
  history.Add(RandomOk(1, 100), std::nullopt);
  history.Add(RandomOk(2, 100), std::nullopt);
  ProbeResult other = RandomOk(3, 100);
  other.target = "/dev/vdc";
  history.Add(other, std::nullopt);
  auto h = history.Get("disk-random");
  ASSERT_EQ(h->points.size(), 1u);
  EXPECT_EQ(h->target, "/dev/vdc");
}

TEST(ResultHistory, RetainForgetsRemovedProbesAndSnapshotIsOrderedByName) {
  ResultHistory history;
  for (const char* name : {"c", "a", "b"}) {
    ProbeResult r = RandomOk(1, 100);
    r.name = name;
    history.Add(r, std::nullopt);
  }
  auto all = history.Snapshot();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].name, "a");
  EXPECT_EQ(all[2].name, "c");
  history.Retain({"b", "zzz"});
  all = history.Snapshot();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].name, "b");
  history.Clear();
  EXPECT_TRUE(history.Snapshot().empty());
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

TEST(ResultHistory, AThinnedSnapshotCopiesAtMostMaxPointsAndTellsTheRingSize) {
  ResultHistory history(1000);
  for (int i = 0; i < 1000; ++i) history.Add(RandomOk(i, 100), std::nullopt);
  auto thin = history.Snapshot(10);
  ASSERT_EQ(thin.size(), 1u);
  EXPECT_EQ(thin[0].points.size(), 10u);
  EXPECT_EQ(thin[0].runs_kept, 1000u);
  EXPECT_EQ(thin[0].points.front().time_seconds, 0);
  EXPECT_EQ(thin[0].points.back().time_seconds, 999);
  EXPECT_EQ(history.Snapshot()[0].points.size(), 1000u);
  EXPECT_EQ(history.Snapshot()[0].runs_kept, 1000u);
}

TEST(ResultHistory, ConcurrentWritersAndReadersStayWithinTheBound) {
  ResultHistory history(50);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&history, t] {
      for (int i = 0; i < 500; ++i) {
        ProbeResult r = RandomOk(i, 100);
        r.name = "p" + std::to_string(t % 2);
        history.Add(r, 50.0);
        if (i % 50 == 0) (void)history.Snapshot();
      }
    });
  }
  for (auto& th : threads) th.join();
  auto all = history.Snapshot();
  ASSERT_EQ(all.size(), 2u);
  for (const auto& h : all) EXPECT_EQ(h.points.size(), 50u);
}

}  // namespace
}  // namespace iodrift::probes
