// slabinfo's cost cap: read from a live procfs, /proc/slabinfo is re-read at most every 10 s and
// iodrift_slabinfo_age_seconds says how old the exported figures are; from a fixture tree (not
// procfs) it is read on every scrape and no age is exported.
#include <unistd.h>

#include <optional>

#include <gtest/gtest.h>

#include "collectors/proc/state_collectors.h"
#include "config/config.h"
#include "tests/lib/ci_guarantee.h"

namespace iodrift::proc {
namespace {

std::optional<double> Age(const std::vector<prometheus::MetricFamily>& families) {
  for (const auto& f : families) {
    if (f.name == "iodrift_slabinfo_age_seconds") return f.metric.at(0).gauge.value;
  }
  return std::nullopt;
}

TEST(SlabinfoCap, LiveProcfsIsReadAtMostEveryTenSeconds) {
  if (::access("/proc/slabinfo", R_OK) != 0)
    IODRIFT_SKIP_GUARANTEED("/proc/slabinfo unreadable (not root)");
  auto collector = MakeSlabinfoCollector(config::SlabinfoOptions{});
  const ProcRoot root("/proc");
  std::vector<prometheus::MetricFamily> first, second;
  ASSERT_TRUE(collector->Collect(root, first));
  ::usleep(20000);
  ASSERT_TRUE(collector->Collect(root, second));
  ASSERT_TRUE(Age(first).has_value());
  EXPECT_EQ(*Age(first), 0.0);
  ASSERT_TRUE(Age(second).has_value());
  EXPECT_GT(*Age(second), 0.0) << "re-read although the last read is younger than 10 s";
  EXPECT_LT(*Age(second), 10.0);
  EXPECT_EQ(first.size(), second.size());
}

TEST(SlabinfoCap, FixtureTreeIsReadEveryTimeWithoutAge) {
  auto collector = MakeSlabinfoCollector(config::SlabinfoOptions{});
  const ProcRoot root(IODRIFT_TEST_FIXTURES "/proc/local-6.18");
  std::vector<prometheus::MetricFamily> out;
  ASSERT_TRUE(collector->Collect(root, out));
  EXPECT_FALSE(Age(out).has_value());
  EXPECT_FALSE(out.empty());
}

}  // namespace
}  // namespace iodrift::proc
