// The `random` probe: O_DIRECT 4 KiB reads at random aligned offsets, one histogram entry per
// measured request; ioping's fadvise mode where O_DIRECT is refused, skipped where even the
// drop is a no-op.
#include "collectors/probes/random.h"

#include <gtest/gtest.h>

#include "collectors/probes/io_util.h"
#include "collectors/probes/runner.h"
#include "tests/lib/ci_guarantee.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

using testing::TempDir;

void ExpectConsistentLatency(const ProbeResult& r, std::uint32_t requests) {
  ASSERT_TRUE(r.latency);
  EXPECT_EQ(r.latency->count, requests);
  std::uint64_t total = 0;
  for (auto c : r.latency->bucket_counts) total += c;
  EXPECT_EQ(total, requests);
  EXPECT_EQ(r.latency->bucket_counts.size(), LatencyBucketBounds().size() + 1);
  // Honest percentiles: p50 from 10 samples, p99 only from 100 (below that it would be the max).
  ASSERT_EQ(r.latency->p50_seconds.has_value(), requests >= 10);
  ASSERT_EQ(r.latency->p99_seconds.has_value(), requests >= 100);
  if (r.latency->p50_seconds) {
    EXPECT_GT(*r.latency->p50_seconds, 0);
    EXPECT_LE(*r.latency->p50_seconds, r.extra.at("latency_max_seconds"));
  }
  if (r.latency->p99_seconds) {
    EXPECT_LE(*r.latency->p50_seconds, *r.latency->p99_seconds);
    EXPECT_LE(*r.latency->p99_seconds, r.extra.at("latency_max_seconds"));
  }
  EXPECT_NEAR(r.ops_per_second.at("read"), requests / r.latency->sum_seconds, 1e-6);
  EXPECT_GT(r.extra.at("wall_iops"), 0);
  EXPECT_LE(r.extra.at("wall_iops"), r.ops_per_second.at("read") * 1.0001);  // wall ≥ Σ latency
}

TEST(RandomProbe, TimesEachRequestedReadAndDiscardsTheWarmUp) {
  TempDir dir;
  const std::string file = (dir.path() / "f").string();
  ASSERT_TRUE(testing::WriteRandomFile(file, 16 << 20));
  auto spec = testing::MakeSpec("r", probes::ProbeKind::kRandom, file);
  spec.requests = 120;
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(dir.path()));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_EQ(r.mode, OpenReadOnly(file, O_DIRECT) ? "direct" : "fadvise");
  EXPECT_EQ(r.bytes, 121u * 4096);  // 120 measured + 1 warm-up
  ExpectConsistentLatency(r, 120);
  EXPECT_FALSE(r.throughput_bytes_per_second);
}

TEST(RandomProbe, FadviseModeDropsEachPageFirstAndLeavesNothingCached) {
  TempDir dir;
  const std::string file = (dir.path() / "f").string();
  ASSERT_TRUE(testing::WriteRandomFile(file, 16 << 20));
  auto spec = testing::MakeSpec("r", probes::ProbeKind::kRandom, file);
  spec.requests = 20;
  {  // start cold: the write left the file cached
    auto fd = OpenReadOnly(file);
    ASSERT_TRUE(fd);
    posix_fadvise(fd->get(), 0, 0, POSIX_FADV_DONTNEED);
  }
  ProbeResult r;
  RunControl control;
  RandomOptions options;
  options.force_fadvise_mode = true;
  RunRandomProbe(spec, testing::MakeEnv(dir.path()), control, r, options);
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_EQ(r.mode, "fadvise");
  ExpectConsistentLatency(r, 20);
  auto fd = OpenReadOnly(file);
  ASSERT_TRUE(fd);
  auto res = MeasureResidency(fd->get(), 0, 16 << 20);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->resident_bytes, 0u);
}

TEST(RandomProbe, IsUnsupportedWhereNeitherODirectNorTheDropWorks) {
  TempDir dir;
  auto run = testing::RunInPrivateMountNamespace([&]() -> std::map<std::string, std::string> {
    if (mount("iodrift-ramfs", dir.path().c_str(), "ramfs", 0, nullptr) != 0) {
      return {{"mount", "failed"}};
    }
    auto m = testing::Summarize(RunProbe(
        testing::MakeSpec("r", probes::ProbeKind::kRandom, dir.str()), testing::MakeEnv("")));
    umount2(dir.path().c_str(), MNT_DETACH);
    return m;
  });
  if (!run.skip_reason.empty()) IODRIFT_SKIP_GUARANTEED(run.skip_reason);
  ASSERT_EQ(run.values["mount"], "");
  EXPECT_EQ(run.values["outcome"], "skipped") << run.values["error"];
  EXPECT_EQ(run.values["supported"], "0");
  EXPECT_EQ(run.values["mode"], "fadvise");
  EXPECT_NE(run.values["suspect"].find("cache_not_dropped"), std::string::npos);
}

}  // namespace
}  // namespace iodrift::probes
