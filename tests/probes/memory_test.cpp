// The `memory` probe: memcpy bandwidth (hot and streaming) and first-touch allocation speed,
// with its buffers gone again after the run.
#include "collectors/probes/memory.h"

#include <algorithm>
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
  auto spec = testing::MakeSpec("mem", probes::ProbeKind::kMemory, "", 0);
  spec.time_budget = std::chrono::milliseconds(50);
  const std::uint64_t rss_before = ResidentBytes();
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(""));
  const std::uint64_t rss_after = ResidentBytes();
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_EQ(r.extra.at("stream_buffer_bytes"), 15 << 20);
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
  // 2 × 15 MiB were touched during the run and are unmapped again.
  EXPECT_LT(rss_after, rss_before + (8ull << 20));
  // The first touch faulted at least the 2 × 15 MiB in (4 KiB pages or THP).
  const auto faults = r.vmstat_delta.count("pgfault") ? r.vmstat_delta.at("pgfault") : 0;
  const auto thp =
      r.vmstat_delta.count("thp_fault_alloc") ? r.vmstat_delta.at("thp_fault_alloc") : 0;
  EXPECT_GE(faults * 4096 + thp * (2 << 20), static_cast<std::int64_t>(30ull << 20) * 9 / 10);
}

TEST(StreamBufferBytes, DefaultsTo15MiBAndCapsLargerRequests) {
  EXPECT_EQ(StreamBufferBytes(0), 15ull << 20);
  EXPECT_EQ(StreamBufferBytes(4ull << 20), 4ull << 20);
  EXPECT_EQ(StreamBufferBytes((4ull << 20) + 1), 5ull << 20);
  EXPECT_EQ(StreamBufferBytes(1), 1ull << 20);
  EXPECT_EQ(StreamBufferBytes(512ull << 20), 15ull << 20);
}

void WriteCacheIndex(const std::filesystem::path& root, int index, int level, const char* type,
                     const char* size) {
  const auto dir = root / "devices/system/cpu/cpu0/cache" / ("index" + std::to_string(index));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "level") << level << "\n";
  std::ofstream(dir / "type") << type << "\n";
  std::ofstream(dir / "size") << size << "\n";
}

TEST(LastLevelCacheBytes, IsTheHighestLevelDataCacheOrNothing) {
  testing::TempDir fake;
  EXPECT_FALSE(LastLevelCacheBytes(fake.path()));  // VMs often hide cache/
  WriteCacheIndex(fake.path(), 0, 1, "Data", "48K");
  WriteCacheIndex(fake.path(), 1, 1, "Instruction", "32K");
  EXPECT_EQ(LastLevelCacheBytes(fake.path()), 48ull << 10);
  WriteCacheIndex(fake.path(), 2, 2, "Unified", "2048K");
  WriteCacheIndex(fake.path(), 3, 3, "Unified", "32M");
  EXPECT_EQ(LastLevelCacheBytes(fake.path()), 32ull << 20);
}

// An LLC larger than one stream buffer is said in the result: the copy's working set no longer
// streams from DRAM alone.
TEST(MemoryProbe, SaysWhenTheLlcIsLargerThanAStreamBuffer) {
  testing::TempDir fake;
  WriteCacheIndex(fake.path(), 3, 3, "Unified", "32M");
  auto spec = testing::MakeSpec("mem", probes::ProbeKind::kMemory, "", 2ull << 20);
  spec.time_budget = std::chrono::milliseconds(50);
  auto env = testing::MakeEnv("");
  env.sys_root = fake.path();
  const ProbeResult big = RunProbe(spec, env);
  ASSERT_EQ(big.outcome, Outcome::kOk) << big.error;
  EXPECT_EQ(big.extra.at("llc_bytes"), 32 << 20);
  EXPECT_EQ(big.extra.at("stream_within_llc"), 1);
  EXPECT_TRUE(big.suspect.empty());  // the machine's property: the runs still form a baseline

  WriteCacheIndex(fake.path(), 3, 3, "Unified", "1024K");
  const ProbeResult small = RunProbe(spec, env);
  ASSERT_EQ(small.outcome, Outcome::kOk) << small.error;
  EXPECT_EQ(small.extra.at("llc_bytes"), 1 << 20);
  EXPECT_EQ(small.extra.at("stream_within_llc"), 0);
}

}  // namespace
}  // namespace iodrift::probes
