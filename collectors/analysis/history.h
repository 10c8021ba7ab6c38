// History: a bounded in-memory ring of the recent results of a probe, for the status page (GET /)
// and /api/v1/probes.
//
// The probe state keeps the *last* result, the baseline and a drift window of valid figures; the
// history keeps the last `capacity` runs of every outcome (errors and timeouts included, so a
// chart shows the gaps), each reduced to a HistoryPoint: when it ran (wall clock, boot id,
// uptime), how it ended, its DriftFigure (bytes/s or ops/s), the baseline at that moment and the
// ratio, and the memory-state features of the same run (drift.h ExtractDriftFeatures). Nothing is
// persisted: Prometheus keeps the long history; this answers "what happened lately" without it.
//
// Memory: sizeof(HistoryPoint) = 184 bytes on x86-64 (the boot id string is shared by the points
// of one boot) plus the deque's bookkeeping: 208 bytes per point measured (heap growth for 6
// probes × 240 points: 299 KB). The maximum, 100000 runs per probe, is about 21 MB per probe.
//
// A probe redefined with another kind or target (a reload) starts an empty ring: its figures
// would be in other units or of another device (ProbeStates::Define).
//
// Thread-safety: HistoryRing is immutable; its chunks are shared read-only.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/analysis/drift.h"
#include "collectors/probes/probe.h"

namespace iodrift::analysis {

inline constexpr std::size_t kDefaultHistoryRuns = 240;
inline constexpr std::size_t kMinHistoryRuns = 2;
inline constexpr std::size_t kMaxHistoryRuns = 100000;

struct HistoryPoint {
  double time_seconds = 0;                     // wall clock (epoch) at the start of the run
  std::shared_ptr<const std::string> boot_id;  // null when unknown
  std::optional<double> uptime_seconds;        // /proc/uptime at the start of the run
  Outcome outcome = Outcome::kError;
  std::optional<double> figure;                // DriftFigure: bytes/s or ops/s
  std::optional<double> baseline;              // the probe's baseline after this run
  std::optional<double> ratio;                 // figure / baseline
  DriftFeatures features = UnknownFeatures();  // ExtractDriftFeatures of this run
  bool drift_window = false;  // went into the drift window (CountsForWorst: valid, not suspect)
};

struct ProbeHistory {
  std::string name;
  ProbeKind kind = ProbeKind::kCached;
  std::string target;
  std::deque<HistoryPoint> points;  // oldest first
  std::size_t runs_kept = 0;        // points in the ring (a thinned Snapshot returns fewer)
};

// At most `max` indices spread evenly over [0, n), the first and the last included; all of them
// when n <= max.
std::vector<std::size_t> EvenlySpacedIndices(std::size_t n, std::size_t max);

// The point of `result`: figure, features and uptime from the result; ratio = figure / baseline
// when both exist and the baseline is positive.
HistoryPoint MakeHistoryPoint(const ProbeResult& result, const std::optional<double>& baseline,
                              std::shared_ptr<const std::string> boot_id);

// Where each of `points` (oldest first) sits on a time axis that survives wall-clock steps both
// ways (no RTC battery, NTP stepping the clock): the first at its wall time, each next one after
// the previous by the uptime between them when both are of the same boot (/proc/uptime runs on
// CLOCK_BOOTTIME, which no clock step moves), else by their wall-clock difference when it is
// positive, else 0. Never decreasing: charts place points by it and label it with wall time.
std::vector<double> MonotonicTimes(const std::deque<HistoryPoint>& points);

// The last runs of one probe, oldest first: an immutable ring that successive probe states
// share (collectors/analysis/probe_states.h keeps one in every published ProbeState). Points
// live in chunks of kHistoryChunk; Append returns a new ring that shares every full chunk with
// this one, so a run costs one chunk copy and the chunk list, never the whole ring, and a
// reader holding an old state keeps a consistent ring.
inline constexpr std::size_t kHistoryChunk = 64;

class HistoryRing {
 public:
  // This ring plus `point`, trimmed to the newest `capacity` points.
  HistoryRing Append(HistoryPoint point, std::size_t capacity) const;
  // The newest `capacity` points of this ring.
  HistoryRing Trimmed(std::size_t capacity) const;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const HistoryPoint& operator[](std::size_t i) const;  // 0 = oldest; i < size()
  const HistoryPoint& back() const { return (*this)[size_ - 1]; }

 private:
  void DropOldest();
  // Every chunk but the last holds kHistoryChunk points; `skip_` are dropped from the first.
  std::vector<std::shared_ptr<const std::vector<HistoryPoint>>> chunks_;
  std::size_t skip_ = 0;
  std::size_t size_ = 0;
};

// The history of one probe as the status page and the API show it: `ring` thinned to at most
// `max_points` (EvenlySpacedIndices), with the ring's size in runs_kept.
ProbeHistory ThinHistory(const std::string& name, ProbeKind kind, const std::string& target,
                         const HistoryRing& ring, std::size_t max_points);

}  // namespace iodrift::analysis
