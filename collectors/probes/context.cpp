#include "collectors/probes/context.h"

#include <algorithm>
#include <cmath>

#include "collectors/probes/own_stall.h"
#include "collectors/proc/boot.h"
#include "collectors/proc/dentry_state.h"
#include "collectors/proc/pressure.h"
#include "collectors/proc/vmstat.h"

namespace iodrift::probes {
namespace {

std::map<std::string, std::int64_t> TrackedVmstat(const ProcRoot& root) {
  std::map<std::string, std::int64_t> out;
  auto vmstat = proc::ReadVmstat(root);
  if (!vmstat) return out;
  for (const auto& f : vmstat->fields) {
    if (IsTrackedVmstatField(f.name)) out[f.name] = f.value;
  }
  return out;
}

struct PressureNow {
  std::map<std::string, std::uint64_t> totals;
  std::optional<double> io_avg10;
  std::optional<double> memory_avg10;
};

PressureNow ReadPressureNow(const ProcRoot& root) {
  PressureNow now;
  for (const char* resource : {"io", "memory"}) {
    auto p = proc::ReadPressure(root, resource);
    if (!p) continue;
    const std::string r = resource;
    if (p->some) {
      now.totals[r + "_some"] = p->some->total_us;
      (r == "io" ? now.io_avg10 : now.memory_avg10) = p->some->avg10;
    }
    if (p->full) now.totals[r + "_full"] = p->full->total_us;
  }
  return now;
}

}  // namespace

const std::vector<std::string_view>& ContextFields() {
  static const std::vector<std::string_view> kFields = {
      "MemTotal",     "MemFree",        "MemAvailable", "Buffers",    "Cached",       "SwapCached",
      "Active(file)", "Inactive(file)", "Dirty",        "Writeback",  "AnonPages",    "Mapped",
      "Shmem",        "Slab",           "SReclaimable", "SUnreclaim", "AnonHugePages"};
  return kFields;
}

bool IsTrackedVmstatField(std::string_view name) {
  for (std::string_view prefix : {"pgscan", "pgsteal", "allocstall", "workingset_refault"}) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  for (std::string_view exact :
       {"compact_stall", "compact_fail", "compact_success", "pgfault", "pgmajfault",
        "thp_fault_alloc", "thp_fault_fallback", "pgpgin", "pgpgout"}) {
    if (name == exact) return true;
  }
  return false;
}

bool LowFreeMemory(const proc::Meminfo& meminfo, std::uint64_t working_set_bytes) {
  if (working_set_bytes == 0) return false;
  const auto free = meminfo.Get("MemFree");
  if (!free) return false;
  return *free < working_set_bytes + kLowFreeSlackBytes;
}

std::optional<double> FragmentationIndex(const proc::Buddyinfo& buddyinfo) {
  double small = 0;
  double total = 0;
  for (const auto& zone : buddyinfo.zones) {
    for (std::size_t order = 0; order < zone.free_blocks.size() && order < 64; ++order) {
      const double pages =
          static_cast<double>(zone.free_blocks[order]) * std::ldexp(1.0, static_cast<int>(order));
      total += pages;
      if (order < kFragmentationOrder) small += pages;
    }
  }
  if (total <= 0) return std::nullopt;
  return small / total;
}

RunContext RunContext::Begin(const ProcRoot& root, double own_io_share) {
  RunContext ctx;
  ctx.root_ = root;
  ctx.own_io_share_ = own_io_share;
  if (auto m = proc::ReadMeminfo(root)) ctx.meminfo_ = std::move(*m);
  if (auto boot = proc::ReadBootState(root)) ctx.uptime_ = boot->uptime_seconds;
  if (auto d = proc::ReadDentryState(root)) {
    ctx.dentries_["total"] = d->total;
    ctx.dentries_["unused"] = d->unused;
    if (d->negative) ctx.dentries_["negative"] = *d->negative;
  }
  // One short read (a line per zone): cheap enough for every run.
  if (auto b = proc::ReadBuddyinfo(root)) ctx.fragmentation_index_ = FragmentationIndex(*b);
  auto pressure = ReadPressureNow(root);
  ctx.pressure_total_us_ = std::move(pressure.totals);
  ctx.io_avg10_ = pressure.io_avg10;
  ctx.memory_avg10_ = pressure.memory_avg10;
  ctx.vmstat_ = TrackedVmstat(root);
  ctx.cpu_ = CurrentThreadCpu();  // last, so the snapshot's own reads are not charged
  return ctx;
}

bool IsMachineStateSuspect(std::string_view reason) {
  for (std::string_view machine : kMachineStateSuspects) {
    if (reason == machine) return true;
  }
  return false;
}

void RunContext::Finish(ProbeResult& result, std::uint64_t working_set_bytes) const {
  const ThreadCpu cpu = CurrentThreadCpu();  // first, for the same reason
  result.cpu_user_seconds = std::max(0.0, cpu.user_seconds - cpu_.user_seconds);
  result.cpu_system_seconds = std::max(0.0, cpu.system_seconds - cpu_.system_seconds);

  if (meminfo_) {
    for (std::string_view name : ContextFields()) {
      if (auto v = meminfo_->Get(name)) result.context[std::string(name)] = *v;
    }
    if (LowFreeMemory(*meminfo_, working_set_bytes)) AddSuspect(result, "low_free_memory");
  }
  result.uptime_seconds = uptime_;
  result.dentry_state = dentries_;
  result.fragmentation_index = fragmentation_index_;

  const auto vm_end = TrackedVmstat(root_);
  for (const auto& [name, before] : vmstat_) {
    if (auto it = vm_end.find(name); it != vm_end.end())
      result.vmstat_delta[name] = it->second - before;
  }
  const auto psi_end = ReadPressureNow(root_);
  for (const auto& [name, before] : pressure_total_us_) {
    if (auto it = psi_end.totals.find(name); it != psi_end.totals.end() && it->second >= before) {
      result.pressure_delta_us[name] = it->second - before;
    }
  }
  if (io_avg10_ && OwnIoStall::Exceeds(*io_avg10_, own_io_share_, kPressureSuspectAvg10)) {
    AddSuspect(result, "io_pressure");
  }
  if (memory_avg10_ && *memory_avg10_ > kPressureSuspectAvg10)
    AddSuspect(result, "memory_pressure");
}

}  // namespace iodrift::probes
