// Accounting of a probe's timed read: what feeds the time parts (time_parts.h).
//
// StepAccounting covers one step (one reader, or the N readers of a `readers:` step):
//   BeginStep()           coordinating thread, just before the readers are released: the
//                         system-wide samples (SystemSample)
//   BeginReader(i)        on reader i's own thread, immediately before its timed read
//   EndReader(i, timed)   on the same thread, immediately after; `timed` is the read's own
//                         clock (its wall time, measured apart from the samples)
//   EndStep()             coordinating thread, after the last reader ended
//   Parts()               the step's TimeParts: per-thread figures summed over the readers
//
// Per thread (ThreadSample; files of the calling thread, always the live /proc):
//   /proc/thread-self/schedstat   on-CPU and run-queue ns
//   getrusage(RUSAGE_THREAD)      user/system split
//   /proc/thread-self/io          read_bytes
//   delay accounting, only when kernel.task_delayacct is 1 (it is 0 by default; iodriftd never
//   switches it on): taskstats (TASKSTATS_CMD_GET over generic netlink for the thread's tid:
//   block I/O, swap-in, direct reclaim, thrashing, compaction and IRQ delays; the kernel asks
//   for CAP_NET_ADMIN), else /proc/thread-self/stat field 42 (delayacct_blkio_ticks, clock ticks:
//   block I/O only, unprivileged). DelaySourceNow() says which one this process gets.
// System-wide (SystemSample, at BeginStep/EndStep):
//   <proc>/diskstats             io_ticks and sectors read + written of the target's device
//   <proc>/pressure/{io,memory}  "some" totals
//   the daemon's own cgroup      cpu.stat throttled_usec (v1: throttled_time ns),
//                                memory.pressure "some" total, memory.events "high"; found from
//                                /proc/self/cgroup and /proc/self/mountinfo (v2, or v1 cpu and
//                                memory hierarchies)
//   /sys/module/page_reporting/parameters/reported_kib   free memory reported to the hypervisor
// A source the machine lacks leaves its fields nullopt.
//
// Thread-safety: the parsers are pure. A StepAccounting is used by one coordinating thread and
// its readers: reader i touches only its own slot (BeginReader/EndReader), between BeginStep and
// EndStep.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/error.h"
#include "collectors/common/file_util.h"
#include "collectors/common/proc_root.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"
#include "collectors/probes/time_parts.h"

namespace iodrift::probes {

// --- Pure parsers ------------------------------------------------------------------------------

// Cumulative delay totals of one task (ns); a field the source does not give is nullopt.
struct DelayTotals {
  std::optional<std::uint64_t> blkio_ns;
  std::optional<std::uint64_t> swapin_ns;
  std::optional<std::uint64_t> reclaim_ns;  // freepages_delay_total
  std::optional<std::uint64_t> thrashing_ns;
  std::optional<std::uint64_t> compaction_ns;
  std::optional<std::uint64_t> irq_ns;  // struct taskstats version >= 14
};

// One generic netlink datagram answering TASKSTATS_CMD_GET for `tid`: the delay totals of the
// TASKSTATS_TYPE_STATS payload inside TASKSTATS_TYPE_AGGR_PID. An NLMSG_ERROR reply fails with
// its errno (EPERM: no CAP_NET_ADMIN); a malformed or foreign reply with EINVAL naming what is
// wrong.
Expected<DelayTotals> ParseTaskstatsReply(std::string_view datagram, pid_t tid);

// The CTRL_ATTR_FAMILY_ID of a CTRL_CMD_GETFAMILY reply; errors as above.
Expected<std::uint16_t> ParseGenlFamilyReply(std::string_view datagram);

// Field 42 of /proc/<pid>/stat (delayacct_blkio_ticks), counted after the ')' that ends comm;
// nullopt when the line is shorter or the field does not parse.
std::optional<std::uint64_t> ParseStatBlkioTicks(std::string_view stat);

// Counters of one device in /proc/diskstats.
struct DiskCounters {
  std::uint64_t io_ticks_ms = 0;
  std::uint64_t sectors = 0;  // read + written (512-byte units, whatever the device's)
};
// By device name; lines with fewer than 13 fields are skipped.
std::map<std::string, DiskCounters> ParseDiskCounters(std::string_view text);

// cgroup cpu.stat: the throttled time in seconds (v2 `throttled_usec`, v1 `throttled_time` ns);
// nullopt when neither is there (no cpu controller, no quota support).
std::optional<double> ParseCpuStatThrottled(std::string_view text);

// The value of `key` in a flat keyed file ("high 3\nmax 0\n": memory.events); nullopt if absent.
std::optional<std::uint64_t> ParseFlatKeyed(std::string_view text, std::string_view key);

// Where the daemon's own cgroup files are: the v2 directory, and the v1 cpu and memory ones
// when those controllers are mounted as v1 (a hybrid machine). Empty paths are unknown.
struct CgroupDirs {
  std::filesystem::path v2;
  std::filesystem::path v1_cpu;
  std::filesystem::path v1_memory;
};
// From /proc/self/cgroup and /proc/self/mountinfo text.
CgroupDirs ResolveCgroupDirs(std::string_view proc_cgroup, std::string_view mountinfo);
// The live process's: mountinfo is parsed again only when /proc/self/cgroup changed (the
// daemon was moved to another cgroup). Thread-safe.
CgroupDirs OwnCgroupDirs();

// --- Delay accounting source -------------------------------------------------------------------

enum class DelaySource {
  kOff,        // kernel.task_delayacct is not 1 (or unreadable): every delay is unknown
  kStatBlkio,  // taskstats refused (no CAP_NET_ADMIN): block I/O delay from /proc stat only
  kTaskstats,  // the full split
};
const char* DelaySourceName(DelaySource source);  // "off" | "stat_blkio" | "taskstats"

// Which source this process gets now: reads /proc/sys/kernel/task_delayacct each call; whether
// taskstats answers is tried once per process and remembered.
DelaySource DelaySourceNow();

// A generic netlink socket asking TASKSTATS_CMD_GET. One per thread that queries.
class TaskstatsClient {
 public:
  static Expected<TaskstatsClient> Open();
  Expected<DelayTotals> Query(pid_t tid);
  // The reply datagram as received (what Query parses).
  Expected<std::string> QueryRaw(pid_t tid);

 private:
  UniqueFd fd_;
  std::uint16_t family_ = 0;
  std::uint32_t seq_ = 0;
};

// --- Samples -----------------------------------------------------------------------------------

// Per-thread counters at one instant.
struct ThreadSample {
  double mono = 0;
  std::optional<SchedStat> sched;
  ThreadCpu cpu;
  DelayTotals delays;
  std::optional<std::uint64_t> read_bytes;
};

// One reader's figures over its timed read (seconds, bytes).
struct ThreadUsage {
  double timed_seconds = 0;  // the read's own clock
  // false: this reader's accounting is missing (its samples failed or never ran); its timed
  // seconds still count in the wall time, so the parts then miss it.
  bool accounted = false;
  double accounted_seconds = 0;  // the samples' span (>= timed by the samples' own cost)
  double user_seconds = 0;
  double system_seconds = 0;
  std::optional<double> on_cpu_seconds;
  std::optional<double> runqueue_seconds;
  std::optional<double> blkio_seconds;
  std::optional<double> swapin_seconds;
  std::optional<double> reclaim_seconds;
  std::optional<double> thrashing_seconds;
  std::optional<double> compaction_seconds;
  std::optional<double> irq_seconds;
  std::optional<std::uint64_t> read_bytes;
};
// A delay figure (block I/O, swap-in, reclaim, thrashing, compaction, IRQ) larger than the span
// between the reader's samples, by more than the clocks' and /proc/PID/stat's tick rounding
// (delayacct_blkio_ticks: one clock tick, 10 ms at USER_HZ 100), is unknown.
inline constexpr double kDelaySlackShare = 0.02;
inline constexpr double kDelaySlackSeconds = 0.011;
ThreadUsage UsageBetween(const ThreadSample& begin, const ThreadSample& end, double timed_seconds);

// System-wide and cgroup counters at one instant.
struct SystemSample {
  std::optional<DiskCounters> disk;
  std::optional<std::uint64_t> psi_io_some_us;
  std::optional<std::uint64_t> psi_memory_some_us;
  std::optional<double> cpu_throttled_seconds;
  std::optional<std::uint64_t> cgroup_memory_some_us;
  std::optional<std::uint64_t> cgroup_io_some_us;
  std::optional<std::uint64_t> memory_high_events;
  std::optional<std::uint64_t> page_reported_kib;
};

// The step's TimePartsInput: wall_seconds = every reader's timed seconds summed; the accounted
// readers' figures summed (a per-thread figure is known only when every accounted reader's is);
// system figures as end - begin (unknown when either is missing or the counter went backwards).
TimePartsInput StepInput(const std::vector<ThreadUsage>& readers, const SystemSample& begin,
                         const SystemSample& end);

// --- The step ----------------------------------------------------------------------------------

class StepAccounting {
 public:
  // `device`: the target's device name in diskstats ("" unknown); `sys_root`: for page
  // reporting.
  StepAccounting(ProcRoot root, std::filesystem::path sys_root, std::string device,
                 std::uint32_t readers);
  ~StepAccounting();
  StepAccounting(const StepAccounting&) = delete;
  StepAccounting& operator=(const StepAccounting&) = delete;

  void BeginStep();
  void BeginReader(std::uint32_t i);
  void EndReader(std::uint32_t i, double timed_seconds);
  void EndStep();

  const std::vector<ThreadUsage>& readers() const { return usage_; }
  const SystemSample& system_begin() const { return begin_; }
  const SystemSample& system_end() const { return end_; }
  DelaySource delay_source() const { return source_; }
  TimeParts Parts() const;

 private:
  struct Reader;
  struct SystemFiles;
  SystemSample SampleSystem() const;

  ProcRoot root_;
  std::filesystem::path sys_root_;
  std::string device_;
  DelaySource source_ = DelaySource::kOff;
  std::vector<std::unique_ptr<Reader>> state_;
  std::vector<ThreadUsage> usage_;
  std::unique_ptr<SystemFiles> files_;  // opened once, read at both ends of the step
  SystemSample begin_;
  SystemSample end_;
};

// The accounting of a kind's timed read on the calling thread (cached, metadata, memory; the
// reader kinds use RunReaders): one reader, from construction to Stop() (or destruction), which
// writes result.time_seconds. The device is result.target_info.device at construction.
class ScopedTimedRead {
 public:
  ScopedTimedRead(const ProbeEnv& env, ProbeResult& result);
  ~ScopedTimedRead() { Stop(); }
  ScopedTimedRead(const ScopedTimedRead&) = delete;
  ScopedTimedRead& operator=(const ScopedTimedRead&) = delete;
  void Stop();

 private:
  ProbeResult* result_;
  StepAccounting accounting_;
  double start_ = 0;
  bool stopped_ = false;
};

}  // namespace iodrift::probes
