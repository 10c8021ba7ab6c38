// The causes a verdict names and the verdict itself (verdict.h decides it): kept apart so that a
// probe's state (probe_states.h) can hold the verdict of its last run.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace iodrift::analysis {

// The causes a verdict can name (iodrift_probe_verdict{cause}, JSON/D-Bus `cause`). Names are
// lower-case words with '_'; docs/reading-drift.md lists the evidence each needs.
enum class Cause {
  kDevice,             // "device": the device serves our requests more slowly
  kDeviceBusy,         // "device_busy": our requests queued behind other I/O on the device
  kMemoryReclaim,      // "memory_reclaim": the reader waited in or spent CPU on reclaim
  kMemoryCompaction,   // "memory_compaction": high-order allocation / compaction
  kPageAllocation,     // "page_allocation": kernel CPU allocating and zeroing page-cache pages
  kHypervisorReclaim,  // "hypervisor_reclaim": page allocation from memory the host took back
                       //   (free page reporting / balloon)
  kCpuContention,      // "cpu_contention": run-queue wait, cgroup CPU quota throttling
  kRemoteFilesystem,   // "remote_filesystem": a network filesystem's server or network
  kUndetermined,       // "undetermined": no cause carries most of the added time
};
std::string_view CauseName(Cause cause);
// Every cause, in the order above (metrics export one series per probe for the current one).
const std::vector<Cause>& AllCauses();
std::optional<Cause> ParseCauseName(std::string_view name);

struct Verdict {
  Cause cause = Cause::kUndetermined;
  std::string line = "Verdict: undetermined: no run yet";  // "Verdict: <cause>: <figures>"
  // Undetermined only for want of a contemporaneous twin run (verdict.h rule 6): running the
  // twin now would decide it.
  bool wants_twin_run = false;

  bool operator==(const Verdict&) const = default;
};

}  // namespace iodrift::analysis
