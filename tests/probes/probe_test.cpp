// Pure helpers of the probe engine: outcome names, latency buckets and histograms, percentiles,
// calibration arithmetic and persistence, mountinfo parsing, context rules.
#include "collectors/probes/probe.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "collectors/common/state_health.h"
#include "collectors/probes/calibration.h"
#include "collectors/probes/context.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/target.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

TEST(OutcomeName, NamesEveryOutcomeAsTheResultLabel) {
  EXPECT_STREQ(OutcomeName(Outcome::kOk), "ok");
  EXPECT_STREQ(OutcomeName(Outcome::kError), "error");
  EXPECT_STREQ(OutcomeName(Outcome::kTimeout), "timeout");
  EXPECT_STREQ(OutcomeName(Outcome::kSkipped), "skipped");
}

TEST(LatencyBucketBounds, AscendFromTenMicrosecondsToTenSeconds) {
  const auto& b = LatencyBucketBounds();
  ASSERT_GE(b.size(), 10u);
  EXPECT_DOUBLE_EQ(b.front(), 10e-6);
  EXPECT_DOUBLE_EQ(b.back(), 10.0);
  for (std::size_t i = 1; i < b.size(); ++i) EXPECT_LT(b[i - 1], b[i]);
}

TEST(BuildLatencyHistogram, CountsEachSampleInTheFirstBucketAtOrAboveIt) {
  const auto& b = LatencyBucketBounds();
  // 5 µs → bucket 0; exactly 10 µs → bucket 0 (le); 60 µs → the 100 µs bucket; 20 s → +Inf.
  LatencyHistogram h = BuildLatencyHistogram({5e-6, 10e-6, 60e-6, 20.0});
  ASSERT_EQ(h.bucket_counts.size(), b.size() + 1);
  EXPECT_EQ(h.count, 4u);
  EXPECT_EQ(h.bucket_counts[0], 2u);
  const auto idx100us = static_cast<std::size_t>(std::find(b.begin(), b.end(), 100e-6) - b.begin());
  EXPECT_EQ(h.bucket_counts[idx100us], 1u);
  EXPECT_EQ(h.bucket_counts.back(), 1u);
  EXPECT_NEAR(h.sum_seconds, 5e-6 + 10e-6 + 60e-6 + 20.0, 1e-12);
  std::uint64_t total = 0;
  for (auto c : h.bucket_counts) total += c;
  EXPECT_EQ(total, h.count);
}

TEST(BuildLatencyHistogram, GivesNearestRankPercentiles) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i * 1e-3);  // 1..100 ms, unsorted
  LatencyHistogram h = BuildLatencyHistogram(v);
  ASSERT_TRUE(h.p50_seconds && h.p99_seconds);
  EXPECT_DOUBLE_EQ(*h.p50_seconds, 50e-3);
  EXPECT_DOUBLE_EQ(*h.p99_seconds, 99e-3);
  EXPECT_FALSE(BuildLatencyHistogram({}).p50_seconds.has_value());
}

TEST(HonestPercentile, NeedsOneSampleAboveThePercentileAndAtLeastTen) {
  EXPECT_EQ(MinSamplesForPercentile(0.50), 10u);
  EXPECT_EQ(MinSamplesForPercentile(0.90), 10u);
  EXPECT_EQ(MinSamplesForPercentile(0.95), 20u);
  EXPECT_EQ(MinSamplesForPercentile(0.99), 100u);  // 1 − 0.99 is not exactly 0.01
  EXPECT_EQ(MinSamplesForPercentile(0.999), 1000u);
  std::vector<double> v;
  for (int i = 1; i <= 99; ++i) v.push_back(i * 1e-3);
  EXPECT_FALSE(HonestPercentile(v, 0.99).has_value());  // would be the largest sample
  EXPECT_DOUBLE_EQ(*HonestPercentile(v, 0.5), 50e-3);
  v.push_back(100e-3);
  ASSERT_TRUE(HonestPercentile(v, 0.99).has_value());
  EXPECT_DOUBLE_EQ(*HonestPercentile(v, 0.99), 99e-3);  // the second largest of 100
  EXPECT_FALSE(HonestPercentile({1e-3, 2e-3, 3e-3}, 0.5).has_value());
  EXPECT_FALSE(HonestPercentile({}, 0.5).has_value());
}

TEST(BuildLatencyHistogram, ReportsOnlyThePercentilesTheCountSupports) {
  std::vector<double> v64;
  for (int i = 1; i <= 64; ++i) v64.push_back(i * 1e-6);
  LatencyHistogram h = BuildLatencyHistogram(v64);
  EXPECT_EQ(h.count, 64u);  // the count is always there
  ASSERT_TRUE(h.p50_seconds.has_value());
  EXPECT_DOUBLE_EQ(*h.p50_seconds, 32e-6);
  EXPECT_FALSE(h.p99_seconds.has_value());  // 64 samples: the "p99" would be the max

  LatencyHistogram small =
      BuildLatencyHistogram({1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3, 7e-3, 8e-3, 9e-3});
  EXPECT_EQ(small.count, 9u);
  EXPECT_FALSE(small.p50_seconds.has_value());
  EXPECT_FALSE(small.p99_seconds.has_value());
}

TEST(CalibratedBudget, KeepsEightyPercentOfATimeLimitedReadClampedToSixteenTo128MiB) {
  EXPECT_EQ(CalibratedBudget(100ull << 20, true), 80ull << 20);
  EXPECT_EQ(CalibratedBudget(100ull << 20, false), 100ull << 20);
  EXPECT_EQ(CalibratedBudget(1ull << 20, true), kMinCalibratedBytes);
  EXPECT_EQ(CalibratedBudget(10ull << 30, true), kMaxCalibratedBytes);
  EXPECT_EQ(CalibratedBudget(89ull << 20, true), 70ull << 20);  // 71.2 MiB down to a 2 MiB step
  EXPECT_EQ(CalibratedBudget((50ull << 20) + 12345, false) % (1 << 20), 0u);
}

TEST(Calibration, RoundTripsAndIgnoresAFileMadeForAnotherTargetOrKind) {
  testing::TempDir dir;
  auto spec = testing::MakeSpec("sda-buffered", probes::ProbeKind::kBuffered, "/dev/my disk", 0);
  EXPECT_FALSE(LoadCalibration(dir.path(), spec).has_value());
  ASSERT_TRUE(SaveCalibration(dir.path(), spec, 48ull << 20));
  EXPECT_EQ(LoadCalibration(dir.path(), spec), std::optional<std::uint64_t>(48ull << 20));
  auto moved = spec;
  moved.target = "/dev/sdb";
  EXPECT_FALSE(LoadCalibration(dir.path(), moved).has_value());
  auto other_kind = spec;
  other_kind.kind = probes::ProbeKind::kDirect;
  EXPECT_FALSE(LoadCalibration(dir.path(), other_kind).has_value());
  struct stat st {};
  ASSERT_EQ(stat((dir.path() / "calibration").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

// A state dir that takes no writes (here: its path runs through a regular file, ENOTDIR even
// for root): the calibrated budget is kept in memory, the next run reads it instead of
// calibrating again, the run is not marked suspect (it may count toward the baseline), the
// state is reported unwritable — and once the dir exists, the retry saves it and clears that.
TEST(Calibration, AnUnsavedBudgetIsKeptInMemoryAndSavedOnceTheStateDirIsWritable) {
  testing::TempDir dir;
  ForgetUnsavedCalibrations();
  const auto blocker = dir.path() / "blocker";
  { std::ofstream(blocker) << "x"; }
  const auto state_dir = blocker / "state";
  auto spec = testing::MakeSpec("auto-sized", probes::ProbeKind::kBuffered, "/dev/sdz", 0);
  const auto first = ResolveBudget(spec, state_dir);
  ASSERT_TRUE(first.calibrating);
  ProbeResult result;
  FinishCalibration(spec, state_dir, 50ull << 20, true, result);
  EXPECT_TRUE(result.suspect.empty()) << result.suspect.front();
  EXPECT_EQ(result.extra["budget_bytes"], 40.0 * (1 << 20));
  EXPECT_FALSE(StateHealth::Process().View().writable);
  EXPECT_NE(StateProblemText(StateHealth::Process().View()).find("calibration/auto-sized"),
            std::string::npos);

  const auto next = ResolveBudget(spec, state_dir);
  EXPECT_FALSE(next.calibrating);
  EXPECT_EQ(next.read_limit, 40ull << 20);
  auto moved = spec;  // a budget is never used for another target
  moved.target = "/dev/sdy";
  EXPECT_TRUE(ResolveBudget(moved, state_dir).calibrating);

  RetryUnsavedCalibrations();  // still not writable: still in memory
  EXPECT_FALSE(ResolveBudget(spec, state_dir).calibrating);
  EXPECT_FALSE(StateHealth::Process().View().writable);

  std::filesystem::remove(blocker);
  std::filesystem::create_directories(state_dir);
  RetryUnsavedCalibrations();
  EXPECT_EQ(LoadCalibration(state_dir, spec), std::optional<std::uint64_t>(40ull << 20));
  EXPECT_TRUE(StateHealth::Process().View().writable);
  ForgetUnsavedCalibrations();
  EXPECT_EQ(ResolveBudget(spec, state_dir).read_limit, 40ull << 20);  // from the file now
}

TEST(ParseMountinfo, ReadsDeviceFstypeSourceAndDecodesEscapes) {
  const auto m = ParseMountinfo(
      "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
      "40 22 0:35 / /mnt/my\\040disk rw - tmpfs tmp\\040fs rw,size=4k\n"
      "garbage line\n"
      "41 22 0:36 / /x rw master:2 shared:3 - fuse.sshfs me@host:/ rw\n");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].major, 254u);
  EXPECT_EQ(m[0].fstype, "ext4");
  EXPECT_EQ(m[0].source, "/dev/vda");
  EXPECT_EQ(m[1].mount_point, "/mnt/my disk");
  EXPECT_EQ(m[1].source, "tmp fs");
  EXPECT_EQ(m[2].fstype, "fuse.sshfs");
  EXPECT_EQ(m[2].minor, 36u);
}

TEST(LowFreeMemory, FlagsMemFreeBelowTheWorkingSetPlusSlack) {
  proc::Meminfo mi;
  mi.fields.push_back({"MemFree", 100ull << 20, true});
  EXPECT_TRUE(LowFreeMemory(mi, 64ull << 20));               // 100 < 64 + 64
  EXPECT_FALSE(LowFreeMemory(mi, 16ull << 20));              // 100 >= 16 + 64
  EXPECT_FALSE(LowFreeMemory(mi, 0));                        // rule does not apply
  EXPECT_FALSE(LowFreeMemory(proc::Meminfo{}, 1ull << 30));  // unknown: no claim
}

TEST(ContextFields, KeepTheKernelsNames) {
  const auto& fields = ContextFields();
  EXPECT_NE(std::find(fields.begin(), fields.end(), "Active(file)"), fields.end());
  EXPECT_EQ(std::find(fields.begin(), fields.end(), "Active_file"), fields.end());
}

TEST(RunContext, RecordsTheFixtureMeminfoAndFlagsLowFreeMemory) {
  const ProcRoot root(std::filesystem::path(IODRIFT_TEST_FIXTURES) / "proc/local-6.18");
  auto mi = proc::ReadMeminfo(root);
  ASSERT_TRUE(mi) << mi.error().message;
  const auto free = mi->Get("MemFree");
  ASSERT_TRUE(free);
  RunContext ctx = RunContext::Begin(root);
  ProbeResult r;
  ctx.Finish(r, *free);  // a working set as large as MemFree must be suspect
  EXPECT_EQ(r.context.at("MemFree"), *free);
  for (const char* field : {"MemAvailable", "Buffers", "Cached", "Dirty", "Writeback", "Slab",
                            "SReclaimable", "SUnreclaim"}) {
    EXPECT_TRUE(r.context.count(field)) << field;
  }
  EXPECT_NE(std::find(r.suspect.begin(), r.suspect.end(), "low_free_memory"), r.suspect.end());
  EXPECT_TRUE(r.uptime_seconds.has_value());
  EXPECT_TRUE(r.dentry_state.count("total"));
  // A fixture does not change: every tracked vmstat delta is 0 and some are tracked.
  EXPECT_FALSE(r.vmstat_delta.empty());
  for (const auto& [name, delta] : r.vmstat_delta) EXPECT_EQ(delta, 0) << name;
}

}  // namespace
}  // namespace iodrift::probes
