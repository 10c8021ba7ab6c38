#include "collectors/analysis/boot_record.h"

#include <algorithm>
#include <set>

namespace iodrift::analysis {

bool BootRecord::empty() const {
  return std::none_of(at.begin(), at.end(), [](const auto& v) { return v.has_value(); }) &&
         !last_ratio && !last_uptime && worst_verdict.empty();
}

bool NoteBootRun(BootRecord& record, double ratio, const std::optional<double>& uptime_seconds) {
  bool changed = record.last_ratio != ratio || record.last_uptime != uptime_seconds;
  record.last_ratio = ratio;
  record.last_uptime = uptime_seconds;
  if (!uptime_seconds) return changed;
  for (std::size_t i = 0; i < kBootMarks.size(); ++i) {
    if (!record.at[i] && *uptime_seconds >= kBootMarks[i] &&
        *uptime_seconds < kBootMarkWindow * kBootMarks[i]) {
      record.at[i] = ratio;
      changed = true;
    }
  }
  return changed;
}

std::size_t TrimBootRecords(BaselineState& state) {
  std::map<std::string, std::size_t> seen;  // past boots holding the probe, newest first
  std::size_t cleared = 0;
  for (auto boot = state.history.rbegin(); boot != state.history.rend(); ++boot) {
    for (auto& probe : boot->probes) {
      if (++seen[probe.key.name] < kMaxBootRecords || probe.record.empty()) continue;
      probe.record = BootRecord{};
      ++cleared;
    }
  }
  return cleared;
}

std::vector<BootRow> BootsOf(const BaselineState& state, const std::string& name) {
  std::vector<BootRow> rows;
  if (auto it = state.probes.find(name); it != state.probes.end()) {
    const ProbeBaseline& pb = it->second;
    rows.push_back(BootRow{state.boot_id, state.boot_time_seconds, true, pb.key, pb.baseline,
                           pb.worst_ratio, pb.uptime_at_worst, pb.record});
  }
  std::size_t past = 0;
  for (auto boot = state.history.rbegin();
       boot != state.history.rend() && past + 1 < kMaxBootRecords; ++boot) {
    for (const auto& p : boot->probes) {
      if (p.key.name != name) continue;
      rows.push_back(BootRow{boot->boot_id, boot->boot_time_seconds, false, p.key, p.baseline,
                             p.worst_ratio, p.uptime_at_worst, p.record});
      ++past;
      break;
    }
  }
  return rows;
}

std::vector<std::string> BootProbeNames(const BaselineState& state) {
  std::set<std::string> names;
  for (const auto& [name, pb] : state.probes) names.insert(name);
  for (const auto& boot : state.history) {
    for (const auto& p : boot.probes) names.insert(p.key.name);
  }
  return {names.begin(), names.end()};
}

}  // namespace iodrift::analysis
