// Where a probe's timed read went: the time parts of one step (ReaderStep::time_seconds) and of
// the run (ProbeResult::time_seconds = the first step's, like the run's other figures).
//
// What is measured (accounting.h). Every thread that reads (one, or the N readers of a
// `readers:` step) samples its own per-thread counters immediately before and after its timed
// read, and the parts are the sums over those threads; target open, cache drop, preparation and
// member probing are outside. Per thread:
//   /proc/thread-self/schedstat   on-CPU time (ns, exact) and run-queue wait (ns)
//   getrusage(RUSAGE_THREAD)      the user/kernel split of the on-CPU time
//   delay accounting              why the thread waited (taskstats over generic netlink, needs
//                                 CAP_NET_ADMIN; or /proc/thread-self/stat field 42, block I/O
//                                 only, unprivileged); both need kernel.task_delayacct=1
//   /proc/thread-self/io          read_bytes (what the thread fetched from storage)
// Around the whole step (on the coordinating thread): /proc/diskstats of the target's device
// (io_ticks, sectors), PSI io/memory "some" totals, the daemon's own cgroup (cpu.stat throttled
// time, memory.pressure, memory.events high), /sys/module/page_reporting/parameters/reported_kib.
//
// `wall` is the readers' timed-read wall time summed over the readers (N readers of a 2 s step:
// about 2N s), measured by the read loops themselves, independently of the accounting samples.
// The model splits each thread's sampled span into five parts that do not overlap; summed over
// the threads they add up to `wall` (within the few µs the samples take): a thread whose
// accounting is missing leaves a hole, so the sum is a check, not an identity.
//   user_cpu       on-CPU time x user share of the rusage split
//   kernel_cpu     on-CPU time x system share (page-cache allocation, reclaim, copies to user)
//   runqueue_wait  runnable but not running (CPU contention, CPU quota throttling)
//   device_wait    off-CPU time waiting for block I/O: the delay accounting's blkio delay when
//                  known, else min(device_busy, off-CPU) (an upper bound: the device may be
//                  busy for someone else too)
//   other          the rest of the off-CPU time (locks, a throttle holding requests before the
//                  device sees them when blkio delay is unknown, page-fault waits, a network
//                  filesystem's server)
// Overlapping figures, NOT in the sum (nullopt = this machine could not measure it; never a
// guess):
//   device_busy        the device's busy time during the step (io_ticks, any requester)
//   psi_io_stall       PSI io "some" stall of the system during the step
//   psi_memory_stall   PSI memory "some" stall of the system during the step
//   blkio_delay        readers' delay accounting: waiting for block I/O (sync reads, page locks)
//   swapin_delay       readers' delay accounting: waiting for swap-in
//   reclaim_delay      readers' delay accounting: direct reclaim (freepages_delay_total; mostly
//                      kernel CPU, partly waits)
//   thrashing_delay    readers' delay accounting: waiting on refaulting, recently evicted pages
//   compaction_delay   readers' delay accounting: direct memory compaction
//   irq_delay          readers' delay accounting: time stolen by interrupt handling
//   cpu_throttled      the daemon's cgroup CPU quota throttling during the step (cpu.stat
//                      throttled_usec, v1 throttled_time); whole cgroup, wall time
//   cgroup_memory_stall  the daemon's cgroup memory.pressure "some" during the step (memory.high
//                      throttling, reclaim in the cgroup)
//   cgroup_io_stall    the daemon's cgroup io.pressure "some" during the step: its tasks waiting
//                      for I/O (the system-wide figure weighs each CPU by its busy time, so a
//                      lone waiter on a 2-CPU machine whose other CPU is busy shows at half)
// Evidence that is not seconds (in the same record, never summed):
//   device_others_share  0..1: share of the bytes the device moved during the step (diskstats
//                      sectors read + written) that were not the readers' own read_bytes
//   page_reported_bytes  free memory the guest handed back to the hypervisor during the step
//                      (free page reporting; pages then faulted back in by the host)
//   memory_high_events   the daemon's cgroup memory.events "high" delta during the step
//   storage_read_bytes   what the readers fetched from storage during the timed read
//                      (/proc/thread-self/io read_bytes summed): more than the bytes they
//                      delivered when pages were read again (readahead evicted before use)
// TimePartFields() lists every field once: every output (JSON, D-Bus, metrics, explain,
// diagnose) walks it, so adding a field is one edit there.
//
// Thread-safety: pure functions and plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace iodrift::probes {

struct TimeParts {
  double wall = 0;
  double user_cpu = 0;
  double kernel_cpu = 0;
  std::optional<double> runqueue_wait;  // nullopt without schedstat (CONFIG_SCHED_INFO)
  std::optional<double> device_wait;    // nullopt when neither blkio delay nor device busy known
  double other = 0;
  // Overlapping, not in the sum (seconds):
  std::optional<double> device_busy;
  std::optional<double> psi_io_stall;
  std::optional<double> psi_memory_stall;
  std::optional<double> blkio_delay;
  std::optional<double> swapin_delay;
  std::optional<double> reclaim_delay;
  std::optional<double> thrashing_delay;
  std::optional<double> compaction_delay;
  std::optional<double> irq_delay;
  std::optional<double> cpu_throttled;
  std::optional<double> cgroup_memory_stall;
  std::optional<double> cgroup_io_stall;
  // Evidence, not seconds:
  std::optional<double> device_others_share;
  std::optional<double> page_reported_bytes;
  std::optional<double> memory_high_events;
  std::optional<double> storage_read_bytes;

  // user_cpu + kernel_cpu + runqueue_wait + device_wait + other (unknown parts count 0).
  double Sum() const;
};

// What a TimeParts field is: the wall time, a part of the sum, or an overlapping figure in
// seconds; or evidence in another unit.
enum class TimePartRole { kWall, kSum, kOverlap, kShare, kBytes, kCount };

// One field of TimeParts: its name in every output ("kernel_cpu"; JSON and D-Bus keys, the
// `part` label of iodrift_probe_time_seconds, explain's "time.kernel_cpu"), and exactly one of
// the two member pointers.
struct TimePartField {
  std::string_view name;
  TimePartRole role;
  double TimeParts::*plain = nullptr;
  std::optional<double> TimeParts::*optional = nullptr;

  bool seconds() const {
    return role == TimePartRole::kWall || role == TimePartRole::kSum ||
           role == TimePartRole::kOverlap;
  }
  std::optional<double> Get(const TimeParts& tp) const;
  // A plain field takes value_or(0).
  void Set(TimeParts& tp, std::optional<double> value) const;
};

// Every field, wall first, then the sum's parts, the overlapping seconds, the evidence.
const std::vector<TimePartField>& TimePartFields();

// /proc/<pid>/task/<tid>/schedstat: "on_cpu_ns runqueue_ns timeslices".
struct SchedStat {
  std::uint64_t on_cpu_ns = 0;
  std::uint64_t runqueue_ns = 0;
};
std::optional<SchedStat> ParseSchedStat(std::string_view text);

// What the accounting measured over one step (accounting.h), summed over the readers.
struct TimePartsInput {
  double wall_seconds = 0;  // the timed reads' own wall time, summed over the readers
  // The accounting samples' own spans, summed over the readers whose accounting was taken
  // (off-CPU time is computed from these); nullopt: the same as wall_seconds.
  std::optional<double> accounted_seconds;
  double rusage_user_seconds = 0;
  double rusage_system_seconds = 0;
  std::optional<double> on_cpu_seconds;         // schedstat delta
  std::optional<double> runqueue_wait_seconds;  // schedstat delta
  std::optional<double> device_busy_seconds;    // io_ticks delta of the target's device
  std::optional<double> psi_io_some_seconds;
  std::optional<double> psi_memory_some_seconds;
  std::optional<double> blkio_delay_seconds;  // delay accounting, summed over the readers
  std::optional<double> swapin_delay_seconds;
  std::optional<double> reclaim_delay_seconds;
  std::optional<double> thrashing_delay_seconds;
  std::optional<double> compaction_delay_seconds;
  std::optional<double> irq_delay_seconds;
  std::optional<double> cpu_throttled_seconds;        // the daemon's cgroup
  std::optional<double> cgroup_memory_stall_seconds;  // the daemon's cgroup
  std::optional<double> cgroup_io_stall_seconds;      // the daemon's cgroup
  std::optional<double> memory_high_events;           // the daemon's cgroup
  std::optional<double> device_bytes;    // diskstats (sectors read + written) x 512 of the device
  std::optional<double> own_read_bytes;  // the readers' read_bytes summed
  std::optional<double> page_reported_bytes;
};

// The model above. On-CPU time is schedstat's when known, else rusage user + system; a run with
// on-CPU time but no rusage ticks (too short for a tick) counts it as kernel CPU. Off-CPU time is
// accounted_seconds - on-CPU - run-queue; device_wait is min(blkio delay, off-CPU) when the blkio
// delay is known, else min(device busy, off-CPU).
TimeParts ComputeTimeParts(const TimePartsInput& in);

}  // namespace iodrift::probes
