// The `memory` probe: memcpy bandwidth (hot and streaming) and first-touch allocation speed,
// with its buffers gone again after the run.
#include "collectors/probes/memory.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "collectors/probes/runner.h"
#include "collectors/proc/vmstat.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

std::uint64_t ResidentBytes() {
  auto statm = ReadWholeFile("/proc/self/statm");
  if (!statm) return 0;
  std::uint64_t size = 0, resident = 0;
  std::sscanf(statm->c_str(), "%lu %lu", &size, &resident);
  return resident * PageSize();
}

TEST(MemoryProbe, ReportsCopyAndAllocationSpeedAndUnmapsItsBuffers) {
  auto spec = testing::MakeSpec("mem", probes::ProbeKind::kMemory, "", 32 << 20);
  spec.time_budget = std::chrono::milliseconds(50);
  const std::uint64_t rss_before = ResidentBytes();
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(""));
  const std::uint64_t rss_after = ResidentBytes();
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_EQ(r.extra.at("stream_buffer_bytes"), 32 << 20);
  for (const char* key :
       {"hot_copy_bytes_per_second", "hot_copy_max_bytes_per_second",
        "stream_copy_bytes_per_second", "page_alloc_bytes_per_second", "fault_in_seconds"}) {
    ASSERT_TRUE(r.extra.count(key)) << key;
    EXPECT_GT(r.extra.at(key), 0) << key;
  }
  ASSERT_TRUE(r.throughput_bytes_per_second);
  EXPECT_EQ(*r.throughput_bytes_per_second, r.extra.at("stream_copy_bytes_per_second"));
  EXPECT_GE(r.extra.at("hot_copy_max_bytes_per_second"), r.extra.at("hot_copy_bytes_per_second"));
  EXPECT_GT(r.extra.at("hot_copy_bytes_per_second"), 100e6);  // any machine copies > 100 MB/s
  EXPECT_EQ(r.bytes, 0u);
  // 2 × 32 MiB were touched during the run and are unmapped again.
  EXPECT_LT(rss_after, rss_before + (16ull << 20));
  // The first touch faulted at least the 2 × 32 MiB in (4 KiB pages or THP).
  const auto faults = r.vmstat_delta.count("pgfault") ? r.vmstat_delta.at("pgfault") : 0;
  const auto thp =
      r.vmstat_delta.count("thp_fault_alloc") ? r.vmstat_delta.at("thp_fault_alloc") : 0;
  EXPECT_GE(faults * 4096 + thp * (2 << 20), static_cast<std::int64_t>(64ull << 20) * 9 / 10);
}

TEST(DefaultStreamBytes, IsTwiceTheLastLevelCacheWithin64To512MiB) {
  const auto s = DefaultStreamBytes("/sys");
  EXPECT_GE(s, 64ull << 20);
  EXPECT_LE(s, 512ull << 20);
  testing::TempDir fake;
  std::filesystem::create_directories(fake.path() / "devices/system/cpu/cpu0/cache/index3");
  std::ofstream(fake.path() / "devices/system/cpu/cpu0/cache/index3/size") << "48M\n";
  EXPECT_EQ(DefaultStreamBytes(fake.path()), 96ull << 20);
  std::ofstream(fake.path() / "devices/system/cpu/cpu0/cache/index3/size") << "8192K\n";
  EXPECT_EQ(DefaultStreamBytes(fake.path()), 64ull << 20);
}

}  // namespace
}  // namespace iodrift::probes
