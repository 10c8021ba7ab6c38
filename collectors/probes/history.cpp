#include "collectors/probes/history.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace iodrift::probes {
namespace {

std::size_t Clamp(std::size_t capacity) {
  return std::clamp(capacity, kMinHistoryRuns, kMaxHistoryRuns);
}

void Trim(std::deque<HistoryPoint>& points, std::size_t capacity) {
  while (points.size() > capacity) points.pop_front();
}

}  // namespace

std::vector<std::size_t> EvenlySpacedIndices(std::size_t n, std::size_t max) {
  std::vector<std::size_t> out;
  if (n <= max) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  if (max == 0) return out;
  if (max == 1) return {n - 1};
  for (std::size_t k = 0; k < max; ++k) {
    out.push_back(static_cast<std::size_t>(std::llround(
        static_cast<double>(k) * static_cast<double>(n - 1) / static_cast<double>(max - 1))));
  }
  return out;
}

HistoryPoint MakeHistoryPoint(const ProbeResult& result, const std::optional<double>& baseline,
                              std::shared_ptr<const std::string> boot_id) {
  HistoryPoint p;
  p.time_seconds = result.start_time_seconds;
  p.boot_id = std::move(boot_id);
  p.uptime_seconds = result.uptime_seconds;
  p.outcome = result.outcome;
  p.figure = DriftFigure(result);
  p.baseline = baseline;
  if (p.figure && baseline && *baseline > 0 && std::isfinite(*baseline)) {
    p.ratio = *p.figure / *baseline;
  }
  p.features = ExtractDriftFeatures(result);
  return p;
}

ResultHistory::ResultHistory(std::size_t capacity) : capacity_(Clamp(capacity)) {}

void ResultHistory::SetCapacity(std::size_t capacity) {
  std::lock_guard lock(mu_);
  capacity_ = Clamp(capacity);
  for (auto& [name, history] : probes_) {
    Trim(history.points, capacity_);
    history.points.shrink_to_fit();
    history.runs_kept = history.points.size();
  }
}

std::size_t ResultHistory::capacity() const {
  std::lock_guard lock(mu_);
  return capacity_;
}

void ResultHistory::SetBootId(std::optional<std::string> boot_id) {
  std::lock_guard lock(mu_);
  if (boot_id && !boot_id->empty()) {
    boot_id_ = std::make_shared<const std::string>(std::move(*boot_id));
  } else {
    boot_id_.reset();
  }
}

void ResultHistory::Add(const ProbeResult& result, const std::optional<double>& baseline) {
  std::lock_guard lock(mu_);
  HistoryPoint point = MakeHistoryPoint(result, baseline, boot_id_);
  auto [it, inserted] = probes_.try_emplace(result.name);
  ProbeHistory& history = it->second;
  if (inserted || history.kind != result.kind || history.target != result.target) {
    history.name = result.name;
    history.kind = result.kind;
    history.target = result.target;
    history.points.clear();
  }
  history.points.push_back(std::move(point));
  Trim(history.points, capacity_);
  history.runs_kept = history.points.size();
}

std::optional<ProbeHistory> ResultHistory::Get(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = probes_.find(name);
  if (it == probes_.end()) return std::nullopt;
  return it->second;
}

std::vector<ProbeHistory> ResultHistory::Snapshot() const {
  return Snapshot(std::numeric_limits<std::size_t>::max());
}

std::vector<ProbeHistory> ResultHistory::Snapshot(std::size_t max_points) const {
  std::lock_guard lock(mu_);
  std::vector<ProbeHistory> out;
  out.reserve(probes_.size());
  for (const auto& [name, history] : probes_) {
    ProbeHistory& copy = out.emplace_back();
    copy.name = history.name;
    copy.kind = history.kind;
    copy.target = history.target;
    copy.runs_kept = history.points.size();
    for (std::size_t i : EvenlySpacedIndices(history.points.size(), max_points)) {
      copy.points.push_back(history.points[i]);
    }
  }
  return out;
}

void ResultHistory::Retain(const std::set<std::string>& names) {
  std::lock_guard lock(mu_);
  std::erase_if(probes_, [&](const auto& entry) { return !names.contains(entry.first); });
}

void ResultHistory::Clear() {
  std::lock_guard lock(mu_);
  probes_.clear();
}

}  // namespace iodrift::probes
