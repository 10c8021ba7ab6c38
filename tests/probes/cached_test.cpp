// The `cached` probe on a real file: warm region, windows, figures consistent with each other.
#include "collectors/probes/cached.h"

#include <gtest/gtest.h>

#include "collectors/probes/runner.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

using testing::TempDir;

TEST(CachedProbe, ReadsTheWarmTwoMiBRegionRepeatedlyAndReportsTheMedianWindow) {
  TempDir dir;
  ASSERT_TRUE(testing::WriteRandomFile(dir.path() / "f", 8 << 20));
  auto spec = testing::MakeSpec("c", probes::ProbeKind::kCached, (dir.path() / "f").string());
  spec.time_budget = std::chrono::milliseconds(100);
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(dir.path()));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_TRUE(r.error.empty());
  EXPECT_EQ(r.extra.at("region_bytes"), 2 << 20);
  EXPECT_EQ(r.bytes % (2 << 20), 0u);
  EXPECT_GE(r.bytes, 7u * (2 << 20));  // 2 warm-up reads + ≥ 1 per window
  ASSERT_TRUE(r.throughput_bytes_per_second);
  const double t = *r.throughput_bytes_per_second;
  EXPECT_GT(t, 100e6);  // page-cache copies: far above any disk
  EXPECT_LE(r.extra.at("throughput_min_bytes_per_second"), t);
  EXPECT_GE(r.extra.at("throughput_max_bytes_per_second"), t);
  EXPECT_EQ(r.extra.at("windows"), 5);
  // hdparm -T's definition (all bytes / all time) lies between the slowest and fastest window.
  const double mean = r.extra.at("throughput_mean_bytes_per_second");
  EXPECT_GE(mean, r.extra.at("throughput_min_bytes_per_second") * 0.999);
  EXPECT_LE(mean, r.extra.at("throughput_max_bytes_per_second") * 1.001);
  EXPECT_GE(r.extra.at("resident_fraction"), 0.99);
  // The bytes were read within the run: bytes / duration cannot exceed the fastest window much.
  EXPECT_LE(r.bytes / r.duration_seconds, r.extra.at("throughput_max_bytes_per_second") * 1.05);
  EXPECT_GE(r.duration_seconds, 5 * 0.02);  // 5 windows of ≥ time_budget/5
  EXPECT_FALSE(r.throughput_bytes_per_second.value() != t);
  EXPECT_EQ(r.target_info.fstype.empty(), false);
}

TEST(CachedProbe, FailsWithTheTargetNameWhenItIsMissing) {
  TempDir dir;
  auto spec = testing::MakeSpec("c", probes::ProbeKind::kCached, dir.str() + "/missing");
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(dir.path()));
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.error.find(dir.str() + "/missing"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("no such file"), std::string::npos) << r.error;
  EXPECT_EQ(r.bytes, 0u);
  EXPECT_FALSE(r.throughput_bytes_per_second);
}

}  // namespace
}  // namespace iodrift::probes
