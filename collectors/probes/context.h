// The memory state next to every probe result: a snapshot at the start of the run and the
// changes over it, plus the probe thread's CPU time.
//
// At Begin(): /proc/meminfo (the fields in ContextFields(), bytes), /proc/uptime, /proc/buddyinfo
// (FragmentationIndex),
// /proc/sys/fs/dentry-state, /proc/vmstat (the reclaim/compaction/fault counters that
// IsTrackedVmstatField() selects), PSI io and memory totals and avg10, and
// getrusage(RUSAGE_THREAD). At Finish(): the deltas of vmstat, PSI and CPU time, written into
// the ProbeResult, and the suspect reasons that follow from the snapshot:
//   low_free_memory  MemFree at the start < the run's page-cache/anonymous working set + 64 MiB
//                    (the read or copy will have to reclaim memory first, so the figure includes
//                    reclaim; old hdparm warned about the same) — for cached, buffered, memory;
//   io_pressure      PSI io "some" avg10 at the start, minus the share iodriftd's own recent runs
//                    account for (own_stall.h), > 10 % (someone else was waiting for I/O before
//                    the probe started; the probe's own waits would count during it);
//   memory_pressure  PSI memory "some" avg10 > 10 % at the start.
// Time parts (time_parts.h) are not measured here: they cover only the timed read, per reader
// (accounting.h).
// Each part is optional: a proc root missing a file (a fixture, an old kernel) leaves that part
// empty and is not an error.
//
// Thread-safety: a RunContext is a value; Begin() and Finish() must run on the probe thread
// (RUSAGE_THREAD measures the calling thread).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/proc_root.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/probe.h"
#include "collectors/probes/time_parts.h"
#include "collectors/proc/buddyinfo.h"
#include "collectors/proc/meminfo.h"

namespace iodrift::probes {

inline constexpr std::uint64_t kLowFreeSlackBytes = 64ull << 20;
inline constexpr double kPressureSuspectAvg10 = 10.0;
// The suspects that describe the machine during a run (low free memory, io or memory pressure
// from others), as opposed to the probe's own checks (cache_not_dropped, residency_unverified,
// cache_evicted ...). A run under either is kept out of the baseline alike; tests of a probe's
// own checks leave these aside, as a busy machine sets them (Python:
// tests/lib/iodrift_test/suspects.py).
inline constexpr std::string_view kMachineStateSuspects[] = {"low_free_memory", "io_pressure",
                                                             "memory_pressure"};
bool IsMachineStateSuspect(std::string_view reason);
// Buddy blocks below this order count as fragmented free memory (order 4 = 64 KiB with 4 KiB
// pages: what THP, large folios and readahead allocations cannot use).
inline constexpr std::size_t kFragmentationOrder = 4;

// Kernel meminfo names recorded in ProbeResult::context, under the kernel's own names
// ("Active(file)", as D-Bus Snapshot and /proc/meminfo spell them; only metric *names* are
// sanitised, iodrift_meminfo_Active_file_bytes).
const std::vector<std::string_view>& ContextFields();

// Whether a /proc/vmstat counter is kept in ProbeResult::vmstat_delta: pgscan*, pgsteal*,
// allocstall*, workingset_refault*, compact_{stall,fail,success}, pgfault, pgmajfault,
// thp_fault_{alloc,fallback}, pgpgin, pgpgout.
bool IsTrackedVmstatField(std::string_view name);

// low_free_memory rule (see above); false when MemFree is unknown or working_set_bytes is 0.
bool LowFreeMemory(const proc::Meminfo& meminfo, std::uint64_t working_set_bytes);

// sum over zones and orders o < kFragmentationOrder of n_o * 2^o, divided by the same sum over
// all orders (page units cancel). nullopt when no zone has free blocks.
std::optional<double> FragmentationIndex(const proc::Buddyinfo& buddyinfo);

class RunContext {
 public:
  // `own_io_share`: percentage points of PSI io avg10 that iodriftd's own earlier runs account
  // for (OwnIoStall::Avg10Share), discounted by the io_pressure rule.
  static RunContext Begin(const ProcRoot& root, double own_io_share = 0);

  // Writes context, uptime, dentry state, vmstat/PSI deltas and CPU seconds into `result` and
  // appends suspect reasons (without duplicates). `working_set_bytes` is what the run pulled
  // through the page cache or allocated (0: the low-memory rule does not apply).
  void Finish(ProbeResult& result, std::uint64_t working_set_bytes) const;

 private:
  ProcRoot root_;
  std::optional<proc::Meminfo> meminfo_;
  std::map<std::string, std::int64_t> vmstat_;
  std::map<std::string, std::uint64_t> pressure_total_us_;  // io_some, io_full, memory_some, …
  std::optional<double> io_avg10_;
  double own_io_share_ = 0;
  std::optional<double> memory_avg10_;
  std::optional<double> uptime_;
  std::map<std::string, std::uint64_t> dentries_;
  std::optional<double> fragmentation_index_;
  ThreadCpu cpu_;
};

}  // namespace iodrift::probes
