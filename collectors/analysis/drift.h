// Drift analysis, pure part: which figure of a probe result is compared with its baseline, which
// memory-state features are taken from the same result, a bounded window of (figure, features)
// per probe, Spearman rank correlation over that window, and the `explain` text.
//
// Every probe result carries the memory state of its own moment (probe.h), so the correlation is
// exact: each figure is paired with the state at the start of (or the change during) its own run,
// not with a scrape that happened seconds away. collectors/analysis/probe_states.h keeps one
// DriftWindow per probe and the baselines (baseline_store.h); daemon/probe_metrics.cpp exports the
// correlations as iodrift_probe_correlation{probe,kind,target,feature}.
//
// Features (DriftFeatureName; NaN when the result lacks the input):
//   uptime_seconds          /proc/uptime at the start of the run
//   mem_free_bytes          MemFree at the start
//   cached_bytes            Cached at the start
//   sreclaimable_bytes      SReclaimable at the start
//   sunreclaim_bytes        SUnreclaim at the start
//   dirty_writeback_bytes   Dirty + Writeback at the start
//   fragmentation_index     share of free memory in buddy blocks below order 4 at the start
//                           (context.h FragmentationIndex)
//   psi_memory_stall_ratio  PSI memory "some" stall during the run / run duration
//   psi_io_stall_ratio      PSI io "some" stall during the run / run duration
//   reclaim_pages           sum of the pgscan_* and pgsteal_* deltas over the run
//   dentries_negative       negative dentries (/proc/sys/fs/dentry-state) at the start
//   kernel_cpu_seconds_per_gib   time part kernel_cpu per GiB read (time_parts.h; throughput
//                                kinds with bytes > 0)
//   device_busy_seconds_per_gib  time part device_busy per GiB read (same)
//   kernel_cpu_ratio        time part kernel_cpu / wall (every kind)
//   wait_ratio              (device_wait + other) / wall: off-CPU and not runnable (every kind)
//   runqueue_wait_ratio     runqueue_wait / wall (every kind)
// The kernel's reasons for the readers' waits, each / wall (time_parts.h; NaN where the machine
// could not measure them, e.g. kernel.task_delayacct=0):
//   blkio_delay_ratio       delay accounting: waiting for block I/O
//   reclaim_delay_ratio     delay accounting: direct reclaim (global or a memory cgroup's)
//   compaction_delay_ratio  delay accounting: direct compaction
//   swapin_delay_ratio      delay accounting: waiting for swap-in
//   thrashing_delay_ratio   delay accounting: waiting on refaults of recently evicted pages
//   cpu_throttled_ratio     the daemon's cgroup CPU quota throttling / the step's wall time
//   cgroup_memory_stall_ratio  the daemon's cgroup memory.pressure "some" / the step's wall time
//   cgroup_io_stall_ratio   the daemon's cgroup io.pressure "some" / the step's wall time
// Evidence in other units:
//   device_others_ratio     share of the device's bytes during the step that were not the
//                           readers' (time_parts.h device_others_share)
//   page_reported_bytes     free memory handed back to the hypervisor during the step
//   memory_high_events      the daemon's cgroup memory.events "high" delta
//   direct_reclaim_stalls   sum of the allocstall_* deltas over the run (global direct reclaim;
//                           a memory cgroup's reclaim is not counted there)
//   compaction_stalls       compact_stall delta over the run
//   read_amplification      bytes the readers fetched from storage (time part
//                           storage_read_bytes) / bytes the step delivered (throughput kinds):
//                           above 1 when pages were read twice (readahead evicted before use)
// The time parts and the reasons are the run's: their medians over the baseline runs
// (ProbeState::baseline_features) are the baseline the verdict (verdict.h) compares with.
//
// Thread-safety: pure functions and plain values.
#pragma once

#include <array>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/probes/probe.h"

namespace iodrift::analysis {

// The analysis reads what the probes measured; those types live in iodrift::probes.
using probes::LatencyHistogram;
using probes::Outcome;
using probes::ProbeKind;
using probes::ProbeResult;
using probes::TimeParts;

enum class DriftFeature {
  kUptime,
  kMemFree,
  kCached,
  kSReclaimable,
  kSUnreclaim,
  kDirtyWriteback,
  kFragmentation,
  kPsiMemory,
  kPsiIo,
  kReclaim,
  kDentriesNegative,
  kKernelCpuPerGib,
  kDeviceBusyPerGib,
  kKernelCpuRatio,
  kWaitRatio,
  kRunqueueWaitRatio,
  kBlkioDelayRatio,
  kReclaimDelayRatio,
  kCompactionDelayRatio,
  kSwapinDelayRatio,
  kThrashingDelayRatio,
  kCpuThrottledRatio,
  kCgroupMemoryStallRatio,
  kDeviceOthersRatio,
  kPageReported,
  kMemoryHighEvents,
  kDirectReclaimStalls,
  kCompactionStalls,
  kReadAmplification,
  kCgroupIoStallRatio,
};
inline constexpr std::size_t kDriftFeatureCount = 30;

// Results kept per probe for the correlation (the `window` in the metric's HELP).
inline constexpr std::size_t kDriftWindowSize = 64;
// Fewer finite (figure, feature) pairs than this give no correlation: with 8 points a rank
// correlation of ±0.74 is needed for p < 0.05; fewer points mean next to nothing.
inline constexpr std::size_t kMinCorrelationPoints = 8;

using DriftFeatures = std::array<double, kDriftFeatureCount>;  // NaN = unknown
using DriftCorrelations = std::array<std::optional<double>, kDriftFeatureCount>;

// "uptime_seconds", "mem_free_bytes", ... (the `feature` label; see the table above).
std::string_view DriftFeatureName(std::size_t index);
std::optional<std::size_t> ParseDriftFeatureName(std::string_view name);

// All features NaN.
DriftFeatures UnknownFeatures();

// The figure a probe's baseline is made of: throughput (bytes/s) for cached, buffered, direct and
// memory; ops_per_second["read"] for random; ops_per_second["create"] for metadata. nullopt when
// the result did not succeed or lacks the figure, or the figure is not finite and positive.
std::optional<double> DriftFigure(const ProbeResult& result);
// The op of that figure: "read" for random, "create" for metadata, "" for throughput kinds.
std::string_view DriftFigureOp(ProbeKind kind);
// "bytes/s" or "ops/s".
std::string_view DriftFigureUnit(ProbeKind kind);
bool IsThroughputKind(ProbeKind kind);

DriftFeatures ExtractDriftFeatures(const ProbeResult& result);

// Average ranks (1-based; tied values share the mean of their ranks).
std::vector<double> AverageRanks(std::span<const double> values);

// Spearman's rho: the Pearson correlation of the average ranks of the pairs in which both values
// are finite. nullopt for fewer than kMinCorrelationPoints such pairs, for a constant series, or
// when xs and ys differ in length.
std::optional<double> Spearman(std::span<const double> xs, std::span<const double> ys);

struct DriftSample {
  double figure = 0;
  DriftFeatures features = UnknownFeatures();
};

// The last `capacity` samples of one probe, oldest first.
class DriftWindow {
 public:
  DriftWindow() = default;
  explicit DriftWindow(std::size_t capacity) : capacity_(capacity) {}

  void Add(const DriftSample& sample);
  void Clear() { samples_.clear(); }
  std::size_t size() const { return samples_.size(); }
  std::size_t capacity() const { return capacity_; }
  const std::deque<DriftSample>& samples() const { return samples_; }

  // Spearman(figure, feature) for every feature (nullopt where Spearman gives none).
  DriftCorrelations Correlations() const;

 private:
  std::size_t capacity_ = kDriftWindowSize;
  std::deque<DriftSample> samples_;
};

// ExplainProbe and ExplainFigures, which read a whole probe state, are in
// collectors/analysis/explain.h.

}  // namespace iodrift::analysis
