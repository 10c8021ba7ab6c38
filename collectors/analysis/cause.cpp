#include "collectors/analysis/cause.h"

namespace iodrift::analysis {

std::string_view CauseName(Cause cause) {
  switch (cause) {
    case Cause::kDevice:
      return "device";
    case Cause::kDeviceBusy:
      return "device_busy";
    case Cause::kMemoryReclaim:
      return "memory_reclaim";
    case Cause::kMemoryCompaction:
      return "memory_compaction";
    case Cause::kPageAllocation:
      return "page_allocation";
    case Cause::kHypervisorReclaim:
      return "hypervisor_reclaim";
    case Cause::kCpuContention:
      return "cpu_contention";
    case Cause::kRemoteFilesystem:
      return "remote_filesystem";
    case Cause::kUndetermined:
      return "undetermined";
  }
  return "undetermined";
}

const std::vector<Cause>& AllCauses() {
  static const std::vector<Cause> all = {
      Cause::kDevice,           Cause::kDeviceBusy,       Cause::kMemoryReclaim,
      Cause::kMemoryCompaction, Cause::kPageAllocation,   Cause::kHypervisorReclaim,
      Cause::kCpuContention,    Cause::kRemoteFilesystem, Cause::kUndetermined};
  return all;
}

std::optional<Cause> ParseCauseName(std::string_view name) {
  for (Cause c : AllCauses()) {
    if (CauseName(c) == name) return c;
  }
  return std::nullopt;
}

}  // namespace iodrift::analysis
