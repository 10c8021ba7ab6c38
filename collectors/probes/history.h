// ResultHistory: a bounded in-memory ring of the recent results of every probe, for the status
// page (GET /) and /api/v1/probes.
//
// ResultStore keeps the *last* result, the baseline and a drift window of valid figures; the
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
// would be in other units or of another device.
//
// Thread-safety: all methods are safe to call concurrently; readers get copies.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/probes/drift.h"
#include "collectors/probes/probe.h"

namespace iodrift::probes {

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
};

struct ProbeHistory {
  std::string name;
  config::ProbeKind kind = config::ProbeKind::kCached;
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

class ResultHistory {
 public:
  // `capacity`: points kept per probe, clamped to [kMinHistoryRuns, kMaxHistoryRuns].
  explicit ResultHistory(std::size_t capacity = kDefaultHistoryRuns);

  // Changes the bound; drops the oldest points of rings that are now too long.
  void SetCapacity(std::size_t capacity);
  std::size_t capacity() const;

  // The boot id stamped on the points added from now on (the daemon sets it at start).
  void SetBootId(std::optional<std::string> boot_id);

  // Appends the point of `result` (see MakeHistoryPoint) to the ring of result.name, dropping
  // the oldest point when full. `baseline`: the probe's baseline after this result (ResultStore).
  void Add(const ProbeResult& result, const std::optional<double>& baseline);

  // The history of one probe; nullopt when none was added.
  std::optional<ProbeHistory> Get(const std::string& name) const;
  // Every probe's history, ordered by name.
  std::vector<ProbeHistory> Snapshot() const;
  // The same with at most `max_points` points per probe (EvenlySpacedIndices), so a page that
  // draws a few hundred points does not copy a history of 100000.
  std::vector<ProbeHistory> Snapshot(std::size_t max_points) const;

  // Forgets every probe not in `names` (after a reload removed them).
  void Retain(const std::set<std::string>& names);
  void Clear();

 private:
  mutable std::mutex mu_;
  std::size_t capacity_;
  std::shared_ptr<const std::string> boot_id_;
  std::map<std::string, ProbeHistory> probes_;
};

}  // namespace iodrift::probes
