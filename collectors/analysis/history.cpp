#include "collectors/analysis/history.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "collectors/analysis/baseline_store.h"

namespace iodrift::analysis {

using namespace probes;  // NOLINT: reads what the probes measured

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

std::vector<double> MonotonicTimes(const std::deque<HistoryPoint>& points) {
  std::vector<double> out;
  out.reserve(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const HistoryPoint& p = points[i];
    if (i == 0) {
      out.push_back(std::isfinite(p.time_seconds) ? p.time_seconds : 0);
      continue;
    }
    const HistoryPoint& prev = points[i - 1];
    const bool same_boot = (!prev.boot_id || !p.boot_id || *prev.boot_id == *p.boot_id) &&
                           prev.uptime_seconds && p.uptime_seconds &&
                           *p.uptime_seconds >= *prev.uptime_seconds;
    double step =
        same_boot ? *p.uptime_seconds - *prev.uptime_seconds : p.time_seconds - prev.time_seconds;
    if (!std::isfinite(step) || step < 0) step = 0;
    out.push_back(out.back() + step);
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
  p.drift_window = CountsForWorst(result);
  return p;
}

HistoryRing HistoryRing::Append(HistoryPoint point, std::size_t capacity) const {
  HistoryRing out = *this;  // copies the chunk list, shares the chunks
  if (out.chunks_.empty() || out.chunks_.back()->size() == kHistoryChunk) {
    auto chunk = std::make_shared<std::vector<HistoryPoint>>();
    chunk->reserve(kHistoryChunk);
    chunk->push_back(std::move(point));
    out.chunks_.push_back(std::move(chunk));
  } else {
    auto chunk = std::make_shared<std::vector<HistoryPoint>>(*out.chunks_.back());
    chunk->push_back(std::move(point));
    out.chunks_.back() = std::move(chunk);
  }
  ++out.size_;
  while (out.size_ > capacity) out.DropOldest();
  return out;
}

HistoryRing HistoryRing::Trimmed(std::size_t capacity) const {
  HistoryRing out = *this;
  while (out.size_ > capacity) out.DropOldest();
  return out;
}

void HistoryRing::DropOldest() {
  if (size_ == 0) return;
  ++skip_;
  --size_;
  if (skip_ == chunks_.front()->size()) {
    chunks_.erase(chunks_.begin());
    skip_ = 0;
  }
}

const HistoryPoint& HistoryRing::operator[](std::size_t i) const {
  const std::size_t j = i + skip_;
  return (*chunks_[j / kHistoryChunk])[j % kHistoryChunk];
}

ProbeHistory ThinHistory(const std::string& name, ProbeKind kind, const std::string& target,
                         const HistoryRing& ring, std::size_t max_points) {
  ProbeHistory out;
  out.name = name;
  out.kind = kind;
  out.target = target;
  out.runs_kept = ring.size();
  for (std::size_t i : EvenlySpacedIndices(ring.size(), max_points)) out.points.push_back(ring[i]);
  return out;
}

}  // namespace iodrift::analysis
