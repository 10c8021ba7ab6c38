// ResultStore: the last result of every probe plus running totals, baselines and the drift
// window, shared by the scheduler (writer) and the exporter, `--once` and D-Bus (readers).
//
// Per probe it keeps the last ProbeResult (scheduled or on-demand), the number of runs per
// outcome (iodrift_probe_runs_total{result}), the cumulative bytes read
// (iodrift_probe_read_bytes_total), the post-boot baseline with the last and worst ratio
// (baseline_store.h: median DriftFigure of the first `baseline_runs` clean runs after boot) and
// the last kDriftWindowSize (figure, features) samples with their Spearman correlations
// (drift.h).
//
// Persistence. Without EnablePersistence() baselines live in memory only (`--once`, tests).
// With it, the store loads `<state_dir>/baselines` for the current boot (same boot id: the
// baselines carry on; another boot: the old one moves to the history) and saves the file after
// a change to a baseline, its samples or a worst ratio — at most once per `min_save_interval`
// (a change inside the interval is saved with the next result after it, or by Flush()). A state
// dir that cannot be written keeps everything in memory with one warning. The drift window is
// not persisted (it refills within kDriftWindowSize runs).
//
// Thread-safety: all methods are safe to call concurrently; readers get copies. Saves run
// outside the lock readers take, so a slow fsync never blocks a scrape.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collectors/probes/baseline_store.h"
#include "collectors/probes/drift.h"
#include "collectors/probes/probe.h"

namespace iodrift::probes {

// Kept for callers of the old in-memory store; the baseline now forms from
// kDefaultBaselineRuns runs (or the constructor's argument).
inline constexpr std::size_t kBaselineRuns = kDefaultBaselineRuns;
inline constexpr std::chrono::seconds kDefaultMinSaveInterval{10};

struct ProbeRecord {
  ProbeResult last;
  std::map<Outcome, std::uint64_t> runs;  // every Outcome present, 0 when never seen
  std::uint64_t read_bytes_total = 0;
  LatencyHistogram latency_total;  // cumulative over all runs (a histogram only grows)

  // Baseline (baseline_store.h), in DriftFigureUnit(last.kind): bytes/s or ops/s.
  std::optional<double> baseline;
  // The same value for throughput kinds (cached, buffered, direct, memory); nullopt for random
  // and metadata, whose baseline is in ops/s.
  std::optional<double> baseline_bytes_per_second;
  std::vector<double> baseline_samples;  // figures counted so far, until the baseline forms
  std::size_t baseline_runs_needed = kDefaultBaselineRuns;
  DriftFeatures baseline_features = UnknownFeatures();  // feature medians over those runs
  std::optional<double> last_figure;                    // DriftFigure of the last run that had one
  std::optional<double> baseline_ratio;                 // last_figure / baseline
  std::optional<double> worst_ratio;                    // lowest valid ratio this boot
  std::optional<double> uptime_at_worst;                // uptime (s) at the start of that run

  DriftWindow window;              // last kDriftWindowSize valid figures + features
  DriftCorrelations correlations;  // window.Correlations() after the last sample
};

// Clean runs that went into the baseline: all it needs once formed, else those counted so far.
inline std::size_t BaselineRunsCounted(const ProbeRecord& record) {
  return record.baseline ? record.baseline_runs_needed : record.baseline_samples.size();
}

class ResultStore {
 public:
  // `baseline_runs`: clean runs whose median forms a baseline (at least 1).
  explicit ResultStore(std::size_t baseline_runs = kDefaultBaselineRuns);
  ~ResultStore();  // Flush()
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  // Loads `<state_dir>/baselines` for this boot and saves there from now on (see above). Call
  // once, before the first Record(). Without a boot id (boot_id nullopt or empty) baselines
  // cannot be told apart by boot: persistence stays off, with a warning. Never fails: a corrupt
  // file is set aside, an unwritable dir leaves the store in memory. Blocks for the file I/O.
  void EnablePersistence(
      const std::filesystem::path& state_dir, const std::optional<std::string>& boot_id,
      const std::optional<std::uint64_t>& boot_time_seconds,
      std::chrono::steady_clock::duration min_save_interval = kDefaultMinSaveInterval);

  // Writes unsaved baseline changes now (shutdown). No-op without persistence or changes.
  void Flush();

  // Stores `result` as the last one of `result.name` and updates its totals, baseline and drift
  // window. A result whose kind or target differs from the stored one (the probe was redefined
  // by a reload) starts a fresh record; one whose configured size differs restarts the baseline
  // and the window: totals and baseline must never mix two different measurements.
  void Record(const ProbeResult& result);

  // The record of one probe; nullopt when it never ran.
  std::optional<ProbeRecord> Get(const std::string& name) const;

  // All records, ordered by probe name.
  std::vector<ProbeRecord> Snapshot() const;

  // Forgets every probe not in `names` (after a reload removed them), baselines included.
  void Retain(const std::set<std::string>& names);

  // The persisted part (current boot's baselines and the boot history), e.g. for `explain`
  // from the state dir or tests.
  BaselineState Baselines() const;

 private:
  // Serialises the state when due (or `force`) under mu_, then writes it under save_mu_.
  void MaybeSave(bool force);

  const std::size_t baseline_runs_;
  mutable std::mutex mu_;
  std::map<std::string, ProbeRecord> records_;
  BaselineState state_;
  bool persist_ = false;
  std::filesystem::path state_dir_;
  std::chrono::steady_clock::duration min_save_interval_{};
  std::chrono::steady_clock::time_point last_save_{};
  bool dirty_ = false;
  std::uint64_t save_seq_ = 0;  // bumped per serialisation, under mu_

  std::mutex save_mu_;             // taken without mu_ held
  std::uint64_t written_seq_ = 0;  // under save_mu_: the newest state on disk
  bool save_failing_ = false;      // under save_mu_: warned once
};

}  // namespace iodrift::probes
