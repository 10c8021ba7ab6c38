#include "collectors/probes/time_parts.h"

#include <algorithm>
#include <vector>

#include "collectors/common/text.h"

namespace iodrift::probes {
namespace {

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

double TimeParts::Sum() const {
  double sum = 0;
  for (const auto& f : TimePartFields()) {
    if (f.role == TimePartRole::kSum) sum += f.Get(*this).value_or(0);
  }
  return sum;
}

std::optional<SchedStat> ParseSchedStat(std::string_view text) {
  const auto nl = text.find('\n');
  const auto words = Words(text.substr(0, nl));
  if (words.size() < 2) return std::nullopt;
  auto on_cpu = text::ParseU64(words[0]);
  auto runqueue = text::ParseU64(words[1]);
  if (!on_cpu || !runqueue) return std::nullopt;
  return SchedStat{*on_cpu, *runqueue};
}

TimeParts ComputeTimeParts(const TimePartsInput& in) {
  TimeParts p;
  p.wall = std::max(0.0, in.wall_seconds);
  const double accounted = std::max(0.0, in.accounted_seconds.value_or(in.wall_seconds));
  const double rusage_sum = in.rusage_user_seconds + in.rusage_system_seconds;
  const double on_cpu = std::max(0.0, in.on_cpu_seconds.value_or(rusage_sum));
  const double user_share = rusage_sum > 0 ? in.rusage_user_seconds / rusage_sum : 0.0;
  p.user_cpu = on_cpu * user_share;
  p.kernel_cpu = on_cpu - p.user_cpu;
  if (in.runqueue_wait_seconds) p.runqueue_wait = std::max(0.0, *in.runqueue_wait_seconds);
  const double off_cpu = std::max(0.0, accounted - on_cpu - p.runqueue_wait.value_or(0));
  if (in.device_busy_seconds) p.device_busy = std::max(0.0, *in.device_busy_seconds);
  auto non_negative = [](const std::optional<double>& v) -> std::optional<double> {
    if (!v) return std::nullopt;
    return std::max(0.0, *v);
  };
  p.blkio_delay = non_negative(in.blkio_delay_seconds);
  if (p.blkio_delay) {
    p.device_wait = std::min(*p.blkio_delay, off_cpu);
  } else if (p.device_busy) {
    p.device_wait = std::min(*p.device_busy, off_cpu);
  }
  p.other = off_cpu - p.device_wait.value_or(0);
  // The parts never add up to more than the timed wall time. The samples enclose the timed read,
  // so their span also holds reading the counters (~0.15 ms per reader, several ms under a
  // sanitizer); and without schedstat, rusage counts CPU time by scheduler ticks (4 ms at HZ=250),
  // more than a 1 ms read took. The parts are then the measured shares put on the wall time (the
  // header's off-CPU rule holds for the span; the overlapping figures stay as measured).
  const double sum = p.Sum();
  if (p.wall > 0 && sum > p.wall) {
    const double scale = p.wall / sum;
    p.user_cpu *= scale;
    p.kernel_cpu *= scale;
    p.other *= scale;
    if (p.runqueue_wait) *p.runqueue_wait *= scale;
    if (p.device_wait) *p.device_wait *= scale;
  }
  p.psi_io_stall = in.psi_io_some_seconds;
  p.psi_memory_stall = in.psi_memory_some_seconds;
  p.swapin_delay = non_negative(in.swapin_delay_seconds);
  p.reclaim_delay = non_negative(in.reclaim_delay_seconds);
  p.thrashing_delay = non_negative(in.thrashing_delay_seconds);
  p.compaction_delay = non_negative(in.compaction_delay_seconds);
  p.irq_delay = non_negative(in.irq_delay_seconds);
  p.cpu_throttled = non_negative(in.cpu_throttled_seconds);
  p.cgroup_memory_stall = non_negative(in.cgroup_memory_stall_seconds);
  p.cgroup_io_stall = non_negative(in.cgroup_io_stall_seconds);
  p.memory_high_events = non_negative(in.memory_high_events);
  p.page_reported_bytes = non_negative(in.page_reported_bytes);
  p.storage_read_bytes = non_negative(in.own_read_bytes);
  if (in.device_bytes && in.own_read_bytes && *in.device_bytes > 0) {
    p.device_others_share = std::clamp(1.0 - *in.own_read_bytes / *in.device_bytes, 0.0, 1.0);
  }
  return p;
}

std::optional<double> TimePartField::Get(const TimeParts& tp) const {
  if (plain) return tp.*plain;
  return tp.*optional;
}

void TimePartField::Set(TimeParts& tp, std::optional<double> value) const {
  if (plain) {
    tp.*plain = value.value_or(0);
  } else {
    tp.*optional = value;
  }
}

const std::vector<TimePartField>& TimePartFields() {
  using R = TimePartRole;
  using T = TimeParts;
  static const std::vector<TimePartField> kFields = {
      {"wall", R::kWall, &T::wall, nullptr},
      {"user_cpu", R::kSum, &T::user_cpu, nullptr},
      {"kernel_cpu", R::kSum, &T::kernel_cpu, nullptr},
      {"runqueue_wait", R::kSum, nullptr, &T::runqueue_wait},
      {"device_wait", R::kSum, nullptr, &T::device_wait},
      {"other", R::kSum, &T::other, nullptr},
      {"device_busy", R::kOverlap, nullptr, &T::device_busy},
      {"psi_io_stall", R::kOverlap, nullptr, &T::psi_io_stall},
      {"psi_memory_stall", R::kOverlap, nullptr, &T::psi_memory_stall},
      {"blkio_delay", R::kOverlap, nullptr, &T::blkio_delay},
      {"swapin_delay", R::kOverlap, nullptr, &T::swapin_delay},
      {"reclaim_delay", R::kOverlap, nullptr, &T::reclaim_delay},
      {"thrashing_delay", R::kOverlap, nullptr, &T::thrashing_delay},
      {"compaction_delay", R::kOverlap, nullptr, &T::compaction_delay},
      {"irq_delay", R::kOverlap, nullptr, &T::irq_delay},
      {"cpu_throttled", R::kOverlap, nullptr, &T::cpu_throttled},
      {"cgroup_memory_stall", R::kOverlap, nullptr, &T::cgroup_memory_stall},
      {"cgroup_io_stall", R::kOverlap, nullptr, &T::cgroup_io_stall},
      {"device_others_share", R::kShare, nullptr, &T::device_others_share},
      {"page_reported_bytes", R::kBytes, nullptr, &T::page_reported_bytes},
      {"memory_high_events", R::kCount, nullptr, &T::memory_high_events},
      {"storage_read_bytes", R::kBytes, nullptr, &T::storage_read_bytes},
  };
  return kFields;
}

}  // namespace iodrift::probes
