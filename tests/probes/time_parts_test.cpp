// Time parts (collectors/probes/time_parts.h): parsing schedstat and diskstats, and the model on
// recorded runs — the parts add up to the wall time within 10 %.
#include "collectors/probes/time_parts.h"

#include <cmath>
#include <optional>

#include <gtest/gtest.h>

namespace iodrift::probes {
namespace {

TEST(TimeParts, ParsesSchedStat) {
  auto s = ParseSchedStat("6235947 103987985 3\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->on_cpu_ns, 6235947u);
  EXPECT_EQ(s->runqueue_ns, 103987985u);
  EXPECT_FALSE(ParseSchedStat(""));
  EXPECT_FALSE(ParseSchedStat("12 x 3"));
}

TEST(TimeParts, ParsesDiskstatsIoTicks) {
  const char* text =
      "   7       0 loop0 2048 0 262144 1234 0 0 0 0 0 1500 1234 0 0 0 0 0 0\n"
      " 253       0 vda 90210 1200 8000000 40000 5000 100 90000 3000 0 52000 43000\n"
      "   1 2 short 3\n";
  auto ticks = ParseDiskIoTicks(text);
  ASSERT_EQ(ticks.size(), 2u);
  EXPECT_EQ(ticks.at("loop0"), 1500u);
  EXPECT_EQ(ticks.at("vda"), 52000u);
}

TEST(TimeParts, SplitsOnCpuTimeByTheRusageShares) {
  TimePartsInput in;
  in.wall_seconds = 1.0;
  in.rusage_user_seconds = 0.1;
  in.rusage_system_seconds = 0.3;
  in.on_cpu_seconds = 0.42;
  in.runqueue_wait_seconds = 0.08;
  in.device_busy_seconds = 0.7;  // more than the off-CPU time: device_wait is capped
  const TimeParts p = ComputeTimeParts(in);
  EXPECT_NEAR(p.user_cpu, 0.105, 1e-9);
  EXPECT_NEAR(p.kernel_cpu, 0.315, 1e-9);
  EXPECT_NEAR(*p.device_wait, 0.5, 1e-9);
  EXPECT_NEAR(p.other, 0.0, 1e-9);
  EXPECT_NEAR(*p.device_busy, 0.7, 1e-9);
  EXPECT_NEAR(p.Sum(), 1.0, 1e-9);
}

TEST(TimeParts, WithoutSchedstatOrDeviceTheRestIsOther) {
  TimePartsInput in;
  in.wall_seconds = 0.5;
  in.rusage_user_seconds = 0.0;
  in.rusage_system_seconds = 0.2;
  const TimeParts p = ComputeTimeParts(in);
  EXPECT_FALSE(p.runqueue_wait);
  EXPECT_FALSE(p.device_wait);
  EXPECT_NEAR(p.kernel_cpu, 0.2, 1e-9);
  EXPECT_NEAR(p.other, 0.3, 1e-9);
  EXPECT_NEAR(p.Sum(), 0.5, 1e-9);
}

// Runs recorded with `iodriftd --once --json` on this machine class (2 vCPU VM, loop device on
// virtio; docs/reading-drift.md "Reading a slowdown"): the raw deltas RunContext measured, one per
// kind. The parts must add up to the wall time within 10 %.
struct RecordedInput {
  double wall, user, system;
  std::optional<double> on_cpu, runqueue, device_busy, psi_io, psi_memory;
};
struct Recorded {
  const char* kind;
  RecordedInput raw;
};

TimePartsInput Input(const RecordedInput& r) {
  TimePartsInput in;
  in.wall_seconds = r.wall;
  in.rusage_user_seconds = r.user;
  in.rusage_system_seconds = r.system;
  in.on_cpu_seconds = r.on_cpu;
  in.runqueue_wait_seconds = r.runqueue;
  in.device_busy_seconds = r.device_busy;
  in.psi_io_some_seconds = r.psi_io;
  in.psi_memory_some_seconds = r.psi_memory;
  return in;
}

TEST(TimeParts, RecordedRunsAddUpToWallWithinTenPercent) {
  // wall, rusage user, rusage system, schedstat on-CPU, run-queue, device busy, PSI io, PSI mem
  const Recorded runs[] = {
#include "tests/probes/time_parts_recorded.inc"
  };
  ASSERT_GE(std::size(runs), 6u);
  for (const auto& rec : runs) {
    const TimePartsInput in = Input(rec.raw);
    const struct {
      const char* kind;
      const TimePartsInput& in;
    } r{rec.kind, in};
    const TimeParts p = ComputeTimeParts(r.in);
    EXPECT_NEAR(p.Sum(), r.in.wall_seconds, 0.1 * r.in.wall_seconds) << r.kind;
    EXPECT_GE(p.other, 0) << r.kind;
    // The on-CPU time is kept whole: the split moves no time between CPU and waiting.
    EXPECT_NEAR(p.user_cpu + p.kernel_cpu, r.in.on_cpu_seconds.value_or(0), 1e-9) << r.kind;
  }
}

}  // namespace
}  // namespace iodrift::probes
