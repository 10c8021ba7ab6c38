#include "collectors/analysis/drift.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "collectors/probes/kinds.h"

namespace iodrift::analysis {

using namespace probes;  // NOLINT: reads what the probes measured
namespace {

constexpr std::array<std::string_view, kDriftFeatureCount> kFeatureNames = {
    "uptime_seconds",
    "mem_free_bytes",
    "cached_bytes",
    "sreclaimable_bytes",
    "sunreclaim_bytes",
    "dirty_writeback_bytes",
    "fragmentation_index",
    "psi_memory_stall_ratio",
    "psi_io_stall_ratio",
    "reclaim_pages",
    "dentries_negative",
    "kernel_cpu_seconds_per_gib",
    "device_busy_seconds_per_gib",
    "kernel_cpu_ratio",
    "wait_ratio",
    "runqueue_wait_ratio",
    "blkio_delay_ratio",
    "reclaim_delay_ratio",
    "compaction_delay_ratio",
    "swapin_delay_ratio",
    "thrashing_delay_ratio",
    "cpu_throttled_ratio",
    "cgroup_memory_stall_ratio",
    "device_others_ratio",
    "page_reported_bytes",
    "memory_high_events",
    "direct_reclaim_stalls",
    "compaction_stalls",
    "read_amplification",
    "cgroup_io_stall_ratio"};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double ContextValue(const ProbeResult& r, const char* field) {
  auto it = r.context.find(field);
  return it == r.context.end() ? kNaN : static_cast<double>(it->second);
}

double StallRatio(const ProbeResult& r, const char* key) {
  auto it = r.pressure_delta_us.find(key);
  if (it == r.pressure_delta_us.end() || r.duration_seconds <= 0) return kNaN;
  return static_cast<double>(it->second) / 1e6 / r.duration_seconds;
}

// Sum of the vmstat deltas whose name starts with `prefix`; nullopt when there is none (a kernel
// without the counter: unknown, not 0).
std::optional<double> VmstatSum(const ProbeResult& r, std::string_view prefix) {
  std::optional<double> sum;
  for (const auto& [name, delta] : r.vmstat_delta) {
    if (name.starts_with(prefix)) sum = sum.value_or(0) + static_cast<double>(delta);
  }
  return sum;
}

}  // namespace

std::string_view DriftFeatureName(std::size_t index) {
  return index < kFeatureNames.size() ? kFeatureNames[index] : std::string_view();
}

std::optional<std::size_t> ParseDriftFeatureName(std::string_view name) {
  for (std::size_t i = 0; i < kFeatureNames.size(); ++i) {
    if (kFeatureNames[i] == name) return i;
  }
  return std::nullopt;
}

DriftFeatures UnknownFeatures() {
  DriftFeatures f;
  f.fill(kNaN);
  return f;
}

bool IsThroughputKind(ProbeKind kind) { return !probes::Traits(kind).ops_figure; }

std::string_view DriftFigureOp(ProbeKind kind) { return probes::Traits(kind).op; }

std::string_view DriftFigureUnit(ProbeKind kind) {
  return IsThroughputKind(kind) ? "bytes/s" : "ops/s";
}

std::optional<double> DriftFigure(const ProbeResult& result) {
  if (!result.success()) return std::nullopt;
  std::optional<double> figure;
  if (IsThroughputKind(result.kind)) {
    figure = result.throughput_bytes_per_second;
  } else {
    const std::string op(DriftFigureOp(result.kind));
    if (auto it = result.ops_per_second.find(op); it != result.ops_per_second.end()) {
      figure = it->second;
    }
  }
  if (!figure || !std::isfinite(*figure) || *figure <= 0) return std::nullopt;
  return figure;
}

DriftFeatures ExtractDriftFeatures(const ProbeResult& r) {
  DriftFeatures f = UnknownFeatures();
  auto set = [&f](DriftFeature which, double v) { f[static_cast<std::size_t>(which)] = v; };
  if (r.uptime_seconds) set(DriftFeature::kUptime, *r.uptime_seconds);
  set(DriftFeature::kMemFree, ContextValue(r, "MemFree"));
  set(DriftFeature::kCached, ContextValue(r, "Cached"));
  set(DriftFeature::kSReclaimable, ContextValue(r, "SReclaimable"));
  set(DriftFeature::kSUnreclaim, ContextValue(r, "SUnreclaim"));
  set(DriftFeature::kDirtyWriteback, ContextValue(r, "Dirty") + ContextValue(r, "Writeback"));
  if (r.fragmentation_index) set(DriftFeature::kFragmentation, *r.fragmentation_index);
  set(DriftFeature::kPsiMemory, StallRatio(r, "memory_some"));
  set(DriftFeature::kPsiIo, StallRatio(r, "io_some"));
  // A kernel without the counters (or a proc root without vmstat) leaves the feature unknown
  // rather than 0: "no data" must not look like "no reclaim".
  bool any_reclaim = false;
  double reclaim = 0;
  for (const auto& [name, delta] : r.vmstat_delta) {
    if (name.starts_with("pgscan") || name.starts_with("pgsteal")) {
      any_reclaim = true;
      reclaim += static_cast<double>(delta);
    }
  }
  if (any_reclaim) set(DriftFeature::kReclaim, reclaim);
  if (auto stalls = VmstatSum(r, "allocstall")) set(DriftFeature::kDirectReclaimStalls, *stalls);
  if (auto it = r.vmstat_delta.find("compact_stall"); it != r.vmstat_delta.end()) {
    set(DriftFeature::kCompactionStalls, static_cast<double>(it->second));
  }
  if (auto it = r.dentry_state.find("negative"); it != r.dentry_state.end()) {
    set(DriftFeature::kDentriesNegative, static_cast<double>(it->second));
  }
  if (const auto& tp = r.time_seconds) {
    // The time parts are the first step's (a readers curve has one per step): per GiB of what
    // that step read, not of the whole run.
    const std::uint64_t timed_bytes = r.readers.empty() ? r.bytes : r.readers.front().bytes;
    if (IsThroughputKind(r.kind) && timed_bytes > 0) {
      const double gib = static_cast<double>(timed_bytes) / (1ull << 30);
      set(DriftFeature::kKernelCpuPerGib, tp->kernel_cpu / gib);
      if (tp->device_busy) set(DriftFeature::kDeviceBusyPerGib, *tp->device_busy / gib);
      if (tp->storage_read_bytes) {
        set(DriftFeature::kReadAmplification,
            *tp->storage_read_bytes / static_cast<double>(timed_bytes));
      }
    }
    if (tp->wall > 0) {
      set(DriftFeature::kKernelCpuRatio, tp->kernel_cpu / tp->wall);
      set(DriftFeature::kWaitRatio, (tp->device_wait.value_or(0) + tp->other) / tp->wall);
      if (tp->runqueue_wait) set(DriftFeature::kRunqueueWaitRatio, *tp->runqueue_wait / tp->wall);
      auto ratio = [&](DriftFeature which, const std::optional<double>& v, double per = 1) {
        if (v) set(which, *v * per / tp->wall);
      };
      ratio(DriftFeature::kBlkioDelayRatio, tp->blkio_delay);
      ratio(DriftFeature::kReclaimDelayRatio, tp->reclaim_delay);
      ratio(DriftFeature::kCompactionDelayRatio, tp->compaction_delay);
      ratio(DriftFeature::kSwapinDelayRatio, tp->swapin_delay);
      ratio(DriftFeature::kThrashingDelayRatio, tp->thrashing_delay);
      // Whole-cgroup wall time during the step, against the readers' summed wall time: each of
      // the step's readers lost it (one step's wall = wall / readers).
      const double readers = r.readers.empty() ? 1.0 : std::max(1u, r.readers.front().readers);
      ratio(DriftFeature::kCpuThrottledRatio, tp->cpu_throttled, readers);
      ratio(DriftFeature::kCgroupMemoryStallRatio, tp->cgroup_memory_stall, readers);
      ratio(DriftFeature::kCgroupIoStallRatio, tp->cgroup_io_stall, readers);
    }
    if (tp->device_others_share) set(DriftFeature::kDeviceOthersRatio, *tp->device_others_share);
    if (tp->page_reported_bytes) set(DriftFeature::kPageReported, *tp->page_reported_bytes);
    if (tp->memory_high_events) set(DriftFeature::kMemoryHighEvents, *tp->memory_high_events);
  }
  return f;
}

std::vector<double> AverageRanks(std::span<const double> values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    // Positions i..j (0-based) share the mean of ranks i+1..j+1.
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j + 1)) / 2;
    for (std::size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

std::optional<double> Spearman(std::span<const double> xs, std::span<const double> ys) {
  if (xs.size() != ys.size()) return std::nullopt;
  std::vector<double> x;
  std::vector<double> y;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (std::isfinite(xs[i]) && std::isfinite(ys[i])) {
      x.push_back(xs[i]);
      y.push_back(ys[i]);
    }
  }
  if (x.size() < kMinCorrelationPoints) return std::nullopt;
  const auto rx = AverageRanks(x);
  const auto ry = AverageRanks(y);
  const double n = static_cast<double>(rx.size());
  const double mean = (n + 1) / 2;  // the mean of average ranks is always (n+1)/2
  double sxy = 0;
  double sxx = 0;
  double syy = 0;
  for (std::size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  if (sxx <= 0 || syy <= 0) return std::nullopt;
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

void DriftWindow::Add(const DriftSample& sample) {
  if (capacity_ == 0) return;
  samples_.push_back(sample);
  while (samples_.size() > capacity_) samples_.pop_front();
}

DriftCorrelations DriftWindow::Correlations() const {
  DriftCorrelations out;
  std::vector<double> figures;
  figures.reserve(samples_.size());
  for (const auto& s : samples_) figures.push_back(s.figure);
  std::vector<double> feature(samples_.size());
  for (std::size_t f = 0; f < kDriftFeatureCount; ++f) {
    for (std::size_t i = 0; i < samples_.size(); ++i) feature[i] = samples_[i].features[f];
    out[f] = Spearman(figures, feature);
  }
  return out;
}

}  // namespace iodrift::analysis
