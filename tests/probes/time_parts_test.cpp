// Time parts (collectors/probes/time_parts.h): parsing schedstat and diskstats, and the model on
// recorded runs — the parts add up to the wall time within 10 %.
#include "collectors/probes/time_parts.h"

#include <cmath>
#include <optional>
#include <set>

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

TEST(TimeParts, BlkioDelayIsTheDeviceWaitWhenKnown) {
  TimePartsInput in;
  in.wall_seconds = 1.0;
  in.rusage_system_seconds = 0.2;
  in.on_cpu_seconds = 0.2;
  in.runqueue_wait_seconds = 0.1;
  in.device_busy_seconds = 0.9;  // the device was busy, mostly for someone else
  in.blkio_delay_seconds = 0.3;  // the readers waited for block I/O this long
  in.device_bytes = 4.0e6;
  in.own_read_bytes = 1.0e6;
  const TimeParts p = ComputeTimeParts(in);
  EXPECT_NEAR(*p.device_wait, 0.3, 1e-9);
  EXPECT_NEAR(p.other, 0.4, 1e-9);
  EXPECT_NEAR(*p.device_others_share, 0.75, 1e-9);
  EXPECT_NEAR(p.Sum(), 1.0, 1e-9);
}

TEST(TimeParts, OffCpuTimeComesFromTheAccountedSpansNotTheWall) {
  // Three readers' accounting over 0.75 s of the 1 s their reads took: the parts miss 25 %.
  TimePartsInput in;
  in.wall_seconds = 1.0;
  in.accounted_seconds = 0.75;
  in.on_cpu_seconds = 0.25;
  in.rusage_system_seconds = 0.25;
  in.runqueue_wait_seconds = 0.0;
  const TimeParts p = ComputeTimeParts(in);
  EXPECT_NEAR(p.Sum(), 0.75, 1e-9);
  EXPECT_NEAR(p.wall, 1.0, 1e-9);
}

TEST(TimeParts, TheSamplesOwnCostOnAShortReadIsNotAddedToTheWall) {
  // causes: e2e.time_parts under ASan, a 1.0 ms metadata read whose samples spanned 4 ms (reading
  // the counters took 3 ms): 4 ms of kernel CPU against a 1 ms wall. The parts are the span's
  // shares on the wall.
  TimePartsInput in;
  in.wall_seconds = 0.001;
  in.accounted_seconds = 0.004;
  in.on_cpu_seconds = 0.003;
  in.rusage_system_seconds = 0.003;
  in.runqueue_wait_seconds = 0.0005;
  in.blkio_delay_seconds = 0.0004;
  const TimeParts p = ComputeTimeParts(in);
  EXPECT_NEAR(p.Sum(), 0.001, 1e-12);
  EXPECT_NEAR(p.kernel_cpu, 0.00075, 1e-12);
  EXPECT_NEAR(*p.runqueue_wait, 0.000125, 1e-12);
  EXPECT_NEAR(*p.device_wait, 0.0001, 1e-12);
  EXPECT_NEAR(*p.blkio_delay, 0.0004, 1e-12);  // evidence over the span, not a part: as measured
}

TEST(TimeParts, RusageTicksOnAShortReadAreNotAddedToTheWall) {
  // e2e.time_parts (main stage): a 1.1 ms metadata read without its own span, whose rusage
  // counted 2.5 ms of kernel CPU (tick-based).
  TimePartsInput in;
  in.wall_seconds = 0.0011;
  in.rusage_system_seconds = 0.0025;
  const TimeParts p = ComputeTimeParts(in);
  EXPECT_NEAR(p.Sum(), 0.0011, 1e-12);
  EXPECT_NEAR(p.kernel_cpu, 0.0011, 1e-12);
}

TEST(TimeParts, EveryFieldIsListedOnceAndOnlyTheSumPartsAddUp) {
  TimeParts tp;
  std::set<std::string_view> names;
  double v = 1;
  for (const auto& f : TimePartFields()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_NE(f.plain == nullptr, f.optional == nullptr) << f.name;
    f.Set(tp, v);
    EXPECT_EQ(*f.Get(tp), v) << f.name;
    v *= 2;
  }
  EXPECT_EQ(names.size(), 22u);
  // user_cpu 2 + kernel_cpu 4 + runqueue_wait 8 + device_wait 16 + other 32
  EXPECT_EQ(tp.Sum(), 62);
  EXPECT_EQ(TimePartFields().front().name, "wall");
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
