// ProbeStates: the one owner of every probe's state. Per probe it holds the spec, the last
// result, the run counters, the baseline (with its persisted file, baseline_store.h), the drift
// window and its correlations (drift.h), the history ring (history.h) and the last recovery
// experiment (diagnose.h); nothing else in the
// daemon keeps a copy of any of them or joins them by name.
//
// Life of a probe's state:
//   Define(specs)  the probe set of the config (start and every reload). Each probe gets a
//                  generation: unchanged specs (ProbeSpec's operator==, every field) keep
//                  theirs, new or changed ones get a new one (a changed kind or target also
//                  starts a fresh state), removed probes are
//                  forgotten at once — state, baseline and history. The scheduler is given
//                  these DefinedProbes and stamps every result with the generation it was
//                  started under.
//   Record(result) one scheduler listener feeds every finished run. A result whose generation
//                  is not the probe's current one (its probe was removed or redefined while it
//                  ran) is dropped, never recorded: a removed probe cannot come back.
//   RecordExperimentRun / RecordDiagnosis  the recovery experiment's own record (diagnose.h):
//                  its runs are counted apart and never reach the baseline, the drift window,
//                  the worst ratio or the history; both are dropped for another generation.
//   Verdict        a probe's verdict depends on its state and on its buffered/direct twin's
//                  (verdict.h), so ProbeStates stores it (ProbeState::verdict, ::twin) whenever
//                  either changes, before the change is published: when the probe records a
//                  run, when its twin records one (a follow-up twin run decides a verdict that
//                  waited for it: the probe's stored verdict changes without a run of its own),
//                  on Define (a twin added, removed or redefined) and when baselines load. A
//                  state whose verdict did not change is not copied. So in every snapshot a
//                  probe's stored verdict is VerdictOf(state, FindTwin(snapshot, state)), computed
//                  once, and every output shows the same one.
//   Snapshot()     what every reader (exporter, status page, /api/v1/probes, D-Bus, systemd
//                  status) works from: an immutable list of immutable ProbeStates, swapped
//                  whole after each change. A reader copies one shared_ptr, never a drift window.
//
// Persistence (EnablePersistence): baselines are loaded from `<state_dir>/baselines` for this
// boot and saved after a change, at most once per `min_save_interval` (Flush() at shutdown).
// A load deferred by a transient error (baseline_store.h) is tried again in place of each save,
// and nothing is saved over the file until it loads: then its baselines fill every probe whose
// baseline did not form meanwhile.
// An unwritable state dir keeps everything in memory with one warning; every failed save is
// reported to StateHealth::Process() (iodrift_state_writable, the status page's banner, the
// systemd status line) until a save succeeds again.
//
// Thread-safety: every method may be called from any thread. Saves run outside the lock that
// Snapshot() takes, so a slow fsync never blocks a scrape.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectors/analysis/baseline_store.h"
#include "collectors/analysis/cause.h"
#include "collectors/analysis/diagnose.h"
#include "collectors/analysis/drift.h"
#include "collectors/analysis/history.h"
#include "collectors/probes/probe.h"
#include "collectors/probes/probe_spec.h"

namespace iodrift::analysis {

using probes::ProbeSpec;

inline constexpr std::chrono::seconds kDefaultMinSaveInterval{10};

// A probe of the current set with the generation its results must carry.
struct DefinedProbe {
  ProbeSpec spec;
  std::uint64_t generation = 0;
};

// Ratios kept per probe for the verdict's "lasted" rule (verdict.h kSustainedRuns).
inline constexpr std::size_t kRecentRatios = 3;

// Everything known about one probe, immutable once published.
struct ProbeState {
  ProbeSpec spec;
  std::uint64_t generation = 0;

  // The last result (scheduled or on demand); only meaningful when ran().
  ProbeResult last;
  std::map<Outcome, std::uint64_t> runs;  // every Outcome present, 0 when never seen
  std::uint64_t read_bytes_total = 0;
  LatencyHistogram latency_total;  // cumulative over all runs (a histogram only grows)

  // Baseline (baseline_store.h), in DriftFigureUnit(spec.kind): bytes/s or ops/s.
  std::optional<double> baseline;
  std::vector<double> baseline_samples;  // figures counted so far, until the baseline forms
  std::size_t baseline_runs_needed = kDefaultBaselineRuns;
  DriftFeatures baseline_features = UnknownFeatures();  // feature medians over those runs
  std::optional<double> last_figure;                    // DriftFigure of the last run that had one
  std::optional<double> baseline_ratio;                 // last_figure / baseline
  // baseline_ratio of the last kRecentRatios successful runs that had one, oldest first (the
  // verdict names a cause only for a slowdown that lasted: verdict.h kSustainedRuns).
  std::vector<double> recent_ratios;
  std::optional<double> worst_ratio;      // lowest valid ratio this boot
  std::optional<double> uptime_at_worst;  // uptime (s) at the start of that run

  // The verdict of the last run (verdict.h VerdictOf) and the name of the twin it was decided
  // with (FindTwin; empty when none), stored by ProbeStates (see "Verdict" at the top). Every
  // output reads these; none decides the verdict again.
  Verdict verdict;
  std::string twin;

  DriftWindow window;              // last kDriftWindowSize valid figures + features
  DriftCorrelations correlations;  // window.Correlations() after the last sample
  HistoryRing history;             // the last runs of every outcome (empty when history is off)
  // The last recovery experiment (daemon/diagnose.h) on this probe; null when none ran.
  std::shared_ptr<const DiagnoseReport> diagnosis;
  // Runs made by recovery experiments on this probe (as the probe or as a direct twin). They are
  // counted here only: never in `runs`, the baseline, the window, the worst ratio or history.
  std::uint64_t experiment_runs = 0;

  bool ran() const;
  // The baseline in bytes/s for throughput kinds (cached, buffered, direct, memory), else
  // nullopt; the baseline in ops/s for random and metadata, else nullopt.
  std::optional<double> baseline_bytes_per_second() const;
  std::optional<double> baseline_ops_per_second() const;
  // Clean runs that went into the baseline: all it needs once formed, else those so far.
  std::size_t baseline_runs_counted() const;
};

// Every probe of the current set in Define order, ran or not.
using ProbeSnapshot = std::vector<std::shared_ptr<const ProbeState>>;

class ProbeStates {
 public:
  // `baseline_runs`: clean runs whose median forms a baseline (at least 1).
  explicit ProbeStates(std::size_t baseline_runs = kDefaultBaselineRuns);
  ~ProbeStates();  // Flush()
  ProbeStates(const ProbeStates&) = delete;
  ProbeStates& operator=(const ProbeStates&) = delete;

  // Loads `<state_dir>/baselines` for this boot and saves there from now on. Call once, before
  // the first Record(). Without a boot id persistence stays off, with a warning. Never fails: a
  // corrupt file is set aside, an unwritable dir leaves the baselines in memory. Blocks for I/O.
  void EnablePersistence(
      const std::filesystem::path& state_dir, const std::optional<std::string>& boot_id,
      const std::optional<std::uint64_t>& boot_time_seconds,
      std::chrono::steady_clock::duration min_save_interval = kDefaultMinSaveInterval);

  // Writes unsaved baseline changes now (shutdown). No-op without persistence or changes.
  void Flush();

  // The probe set (see the top of this file). Duplicate names keep the first. Returns the set
  // with generations, in order, for Scheduler::Apply.
  std::vector<DefinedProbe> Define(const std::vector<ProbeSpec>& specs);

  // Records one finished run (see the top of this file). Returns false when it was dropped.
  bool Record(const ProbeResult& result);

  // Stores the last recovery experiment of probe `name`, begun on `generation` (ignored when
  // the probe is not in the set or has another generation now: a reload replaced it).
  void RecordDiagnosis(const std::string& name, std::uint64_t generation, DiagnoseReport report);
  // Counts one run made by a recovery experiment (see ProbeState::experiment_runs); the result
  // itself goes nowhere. Same generation rule.
  void RecordExperimentRun(const std::string& name, std::uint64_t generation);

  // The current set (see the top of this file).
  std::shared_ptr<const ProbeSnapshot> Snapshot() const;
  // One probe's state; null when the probe is not in the current set.
  std::shared_ptr<const ProbeState> Get(const std::string& name) const;

  // History rings: on, with at most `capacity` runs per probe (clamped to kMinHistoryRuns …
  // kMaxHistoryRuns), or off (every ring emptied, nothing kept).
  void ConfigureHistory(bool enabled, std::size_t capacity);
  std::size_t history_capacity() const;
  // The boot id stamped on history points from now on.
  void SetBootId(std::optional<std::string> boot_id);

  // The persisted part (current boot's baselines and the history of past boots).
  BaselineState Baselines() const;

 private:
  struct Slot {
    std::uint64_t generation = 0;
    std::shared_ptr<const ProbeState> state;
  };
  void PublishLocked();
  // The twin of `state` among the slots now (verdict.h FindTwin's rule, in Define order).
  const ProbeState* TwinLocked(const ProbeState& state) const;
  // Stores the verdict of the probe in `slot` (verdict.h StoreVerdict) with its twin among the
  // slots now; a new state only when the verdict or the twin changed.
  void StoreVerdictLocked(Slot& slot);
  // StoreVerdictLocked for every probe (Define, baselines loaded).
  void StoreVerdictsLocked();
  void MaybeSave(bool force);
  // Loads a state file whose first load was deferred (LoadedBaselines::deferred); true when
  // there is none (any more), false while it still cannot be read.
  bool LoadDeferred();

  const std::size_t baseline_runs_;
  mutable std::mutex mu_;
  std::vector<std::string> order_;  // Define order
  std::map<std::string, Slot> slots_;
  std::uint64_t next_generation_ = 1;
  std::shared_ptr<const ProbeSnapshot> published_ = std::make_shared<const ProbeSnapshot>();
  bool history_enabled_ = true;
  std::size_t history_capacity_ = kDefaultHistoryRuns;
  std::shared_ptr<const std::string> boot_id_;

  // Baseline persistence (under mu_ unless noted).
  BaselineState state_;
  bool persist_ = false;
  std::filesystem::path state_dir_;
  std::chrono::steady_clock::duration min_save_interval_{};
  std::chrono::steady_clock::time_point last_save_{};
  bool load_deferred_ = false;  // the state file exists but could not be read yet
  std::string boot_id_for_load_;
  std::uint64_t boot_time_for_load_ = 0;
  bool dirty_ = false;
  std::uint64_t save_seq_ = 0;
  std::mutex save_mu_;             // taken without mu_ held
  std::uint64_t written_seq_ = 0;  // under save_mu_: the newest state on disk
  bool save_failing_ = false;      // under save_mu_: warned once
};

}  // namespace iodrift::analysis
