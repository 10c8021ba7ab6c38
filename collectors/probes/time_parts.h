// Where a run's wall time went: the time parts of one probe run (ProbeResult::time_seconds).
//
// Measured over the run on the probe thread (RunContext Begin/Finish):
//   /proc/thread-self/schedstat   on-CPU time (ns, exact) and run-queue wait (ns): time the
//                                 thread was runnable but another task had the CPU
//   getrusage(RUSAGE_THREAD)      the user/kernel split of the on-CPU time
//   /proc/diskstats               io_ticks (ms the device had requests in flight) of the target's
//                                 device (TargetInfo::device: the disk, or the loop device itself)
//   PSI io/memory "some" totals   system-wide stall time during the run
//
// The model. Wall time is split into five parts that do not overlap and add up to it:
//   user_cpu       on-CPU time x user share of the rusage split
//   kernel_cpu     on-CPU time x system share (page-cache allocation, reclaim, copies to user)
//   runqueue_wait  runnable but not running (CPU contention)
//   device_wait    off-CPU time while the device was busy: min(device_busy, off-CPU), where
//                  off-CPU = wall - on-CPU - runqueue_wait (an upper bound of the waits the
//                  device explains: the device may be busy for someone else too)
//   other          the rest of the off-CPU time: waits while the device was idle (a throttle
//                  holding requests before the device sees them, locks, page-fault waits)
// When the measured on-CPU + run-queue time exceeds the wall time (clock skew between the
// readings, a few µs), `other` is 0 and the parts add up to slightly more than wall.
// Three overlapping figures are kept next to them and are NOT part of the sum:
//   device_busy        the device's busy time during the run (any requester)
//   psi_io_stall       PSI io "some" stall of the system during the run
//   psi_memory_stall   PSI memory "some" stall of the system during the run
// device_busy overlaps with off-CPU wait; PSI counts every task on the system and overlaps with
// every part.
//
// Thread-safety: pure functions and plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace iodrift::probes {

struct TimeParts {
  double wall = 0;
  double user_cpu = 0;
  double kernel_cpu = 0;
  std::optional<double> runqueue_wait;  // nullopt without schedstat (CONFIG_SCHED_INFO)
  std::optional<double> device_wait;    // nullopt when the device's busy time is unknown
  double other = 0;
  // Overlapping, not in the sum:
  std::optional<double> device_busy;
  std::optional<double> psi_io_stall;
  std::optional<double> psi_memory_stall;

  // user_cpu + kernel_cpu + runqueue_wait + device_wait + other (unknown parts count 0).
  double Sum() const;
};

// /proc/<pid>/task/<tid>/schedstat: "on_cpu_ns runqueue_ns timeslices".
struct SchedStat {
  std::uint64_t on_cpu_ns = 0;
  std::uint64_t runqueue_ns = 0;
};
std::optional<SchedStat> ParseSchedStat(std::string_view text);

// /proc/diskstats: io_ticks (field 13 of the line, ms) by device name. Lines too short are
// skipped.
std::map<std::string, std::uint64_t> ParseDiskIoTicks(std::string_view text);

// What RunContext measured over one run.
struct TimePartsInput {
  double wall_seconds = 0;
  double rusage_user_seconds = 0;
  double rusage_system_seconds = 0;
  std::optional<double> on_cpu_seconds;         // schedstat delta
  std::optional<double> runqueue_wait_seconds;  // schedstat delta
  std::optional<double> device_busy_seconds;    // io_ticks delta of the target's device
  std::optional<double> psi_io_some_seconds;
  std::optional<double> psi_memory_some_seconds;
};

// The model above. On-CPU time is schedstat's when known, else rusage user + system; a run with
// on-CPU time but no rusage ticks (too short for a tick) counts it as kernel CPU.
TimeParts ComputeTimeParts(const TimePartsInput& in);

}  // namespace iodrift::probes
