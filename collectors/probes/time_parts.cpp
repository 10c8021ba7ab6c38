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
  return user_cpu + kernel_cpu + runqueue_wait.value_or(0) + device_wait.value_or(0) + other;
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

std::map<std::string, std::uint64_t> ParseDiskIoTicks(std::string_view text) {
  std::map<std::string, std::uint64_t> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const auto line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const auto words = Words(line);
    // major minor name reads merged sectors ms writes merged sectors ms in_flight io_ticks ...
    if (words.size() < 13) continue;
    if (auto ticks = text::ParseU64(words[12])) out[std::string(words[2])] = *ticks;
  }
  return out;
}

TimeParts ComputeTimeParts(const TimePartsInput& in) {
  TimeParts p;
  p.wall = std::max(0.0, in.wall_seconds);
  const double rusage_sum = in.rusage_user_seconds + in.rusage_system_seconds;
  const double on_cpu = std::max(0.0, in.on_cpu_seconds.value_or(rusage_sum));
  const double user_share = rusage_sum > 0 ? in.rusage_user_seconds / rusage_sum : 0.0;
  p.user_cpu = on_cpu * user_share;
  p.kernel_cpu = on_cpu - p.user_cpu;
  if (in.runqueue_wait_seconds) p.runqueue_wait = std::max(0.0, *in.runqueue_wait_seconds);
  const double off_cpu = std::max(0.0, p.wall - on_cpu - p.runqueue_wait.value_or(0));
  if (in.device_busy_seconds) {
    p.device_busy = std::max(0.0, *in.device_busy_seconds);
    p.device_wait = std::min(*p.device_busy, off_cpu);
  }
  p.other = off_cpu - p.device_wait.value_or(0);
  p.psi_io_stall = in.psi_io_some_seconds;
  p.psi_memory_stall = in.psi_memory_some_seconds;
  return p;
}

}  // namespace iodrift::probes
