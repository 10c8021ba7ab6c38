// The `memory` probe: memcpy bandwidth (hot and streaming) and first-touch allocation speed,
// with its buffers gone again after the run.
#include "collectors/probes/memory.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

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
  EXPECT_EQ(r.extra.at("stream_buffer_bytes"), 7 << 20);
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
  // 2 × 7 MiB were touched during the run and are unmapped again.
  EXPECT_LT(rss_after, rss_before + (8ull << 20));
  // The first touch faulted at least the 2 × 7 MiB in (4 KiB pages or THP).
  const auto faults = r.vmstat_delta.count("pgfault") ? r.vmstat_delta.at("pgfault") : 0;
  const auto thp =
      r.vmstat_delta.count("thp_fault_alloc") ? r.vmstat_delta.at("thp_fault_alloc") : 0;
  EXPECT_GE(faults * 4096 + thp * (2 << 20), static_cast<std::int64_t>(14ull << 20) * 9 / 10);
}

// "VmHWM:" / "VmRSS:" of /proc/self/status, bytes; 0 when absent.
std::uint64_t StatusBytes(const std::string& field) {
  auto status = ReadWholeFile("/proc/self/status");
  if (!status) return 0;
  const auto at = status->find("\n" + field + ":");
  if (at == std::string::npos) return 0;
  return std::strtoull(status->c_str() + at + field.size() + 2, nullptr, 10) << 10;
}

// The bounded buffer: a default run raises this process's peak RSS by at most 16 MiB (the peak
// is reset first with clear_refs 5, VmHWM := VmRSS), and by at least 8 MiB (the buffers were
// touched, so the measurement sees them).
TEST(MemoryProbe, RaisesThePeakRssByAtMost16MiB) {
  auto spec = testing::MakeSpec("mem", probes::ProbeKind::kMemory, "", 0);
  spec.time_budget = std::chrono::milliseconds(20);
  const auto env = testing::MakeEnv("");
  (void)RunProbe(spec, env);  // first run: the allocator's and the runner's one-time growth
  {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    if (!clear) GTEST_SKIP() << "cannot reset VmHWM (/proc/self/clear_refs)";
  }
  const std::uint64_t rss = StatusBytes("VmRSS");
  if (StatusBytes("VmHWM") > rss + (1ull << 20)) GTEST_SKIP() << "clear_refs 5 did not reset VmHWM";
  const ProbeResult r = RunProbe(spec, env);
  const std::uint64_t peak = StatusBytes("VmHWM");
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_LE(peak, rss + (16ull << 20)) << "peak +" << (peak - rss) / 1024 << " KiB";
  EXPECT_GE(peak, rss + (8ull << 20)) << "peak +" << (peak - rss) / 1024 << " KiB";
}

TEST(StreamBufferBytes, DefaultsTo7MiBAndCapsLargerRequests) {
  EXPECT_EQ(StreamBufferBytes(0), 7ull << 20);
  EXPECT_EQ(StreamBufferBytes(4ull << 20), 4ull << 20);
  EXPECT_EQ(StreamBufferBytes((4ull << 20) + 1), 5ull << 20);
  EXPECT_EQ(StreamBufferBytes(1), 1ull << 20);
  EXPECT_EQ(StreamBufferBytes(512ull << 20), 7ull << 20);
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
  // The LLC is the machine's property: the runs still form a baseline (no suspect of the probe's
  // own; pressure from other work on a busy machine is left aside).
  EXPECT_TRUE(testing::OwnSuspects(big.suspect).empty()) << big.suspect.size();

  WriteCacheIndex(fake.path(), 3, 3, "Unified", "1024K");
  const ProbeResult small = RunProbe(spec, env);
  ASSERT_EQ(small.outcome, Outcome::kOk) << small.error;
  EXPECT_EQ(small.extra.at("llc_bytes"), 1 << 20);
  EXPECT_EQ(small.extra.at("stream_within_llc"), 0);
}

}  // namespace
}  // namespace iodrift::probes
