// The recovery experiment ("would a reboot help?"): the pure part — the ladder of steps, the
// control, what k repeats of one step say, which step comes next, the limits (gates) and the
// one-line answer. The I/O (running the probe, touching memory, reading pressure and cgroup
// files) is daemon/diagnose.h's; the privileged interventions (writing /proc/sys/vm/*) are the
// root caller's (`iodriftctl diagnose`).
//
// Ladder: control (the unchanged state, measured kDiagnoseRepeats times to know the noise), then
// per step, each measured kDiagnoseRepeats times with the intervention made again right before
// every repeat: drop_caches (clean page cache, drop_caches 1; root), drop_slab (reclaimable
// slab, drop_caches 2; root), compact (compact_memory; root), warm_free_memory (touch and release
// free memory so pages the hypervisor took back are backed again; the daemon does it itself).
// A step recovers when its median is within 10 % of the baseline (kRecoveredRatio) AND every one
// of its figures is above the control's highest (it clears the control's spread): a noisy but
// unchanged figure cannot be credited to a step. The first recovering step ends the ladder.
//
// Why k = 3: the median of 3 survives one outlier, and for an unchanged (exchangeable) figure
// the chance that all 3 step figures land above all 3 control figures is 1 / C(6,3) = 5 %, per
// step; k = 5 would take it to 0.4 % but doubles the machine-wide cost (every repeat of a root
// step drops the whole page cache again). The 10 % rule must hold as well, so a slow state that
// merely wobbles is not credited.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/probes/probe.h"
#include "collectors/proc/cgroup_memory.h"

namespace iodrift::analysis {

// The analysis reads what the probes measured; those types live in iodrift::probes.
using probes::ProbeKind;
using probes::ProbeResult;

// A figure at or above this share of the baseline counts as restored ("within 10 %").
inline constexpr double kRecoveredRatio = 0.9;
// The direct twin "moved" when its median differs from its control median by more than this.
inline constexpr double kDirectMovedShare = 0.15;
// Measurements of the control and of every step (see the top of this file).
inline constexpr std::size_t kDiagnoseRepeats = 3;
// Share of the control-to-baseline gap a step must close to count as a partial recovery.
inline constexpr double kPartlyShare = 0.25;

// The ladder in order; "control" is the un-intervened state.
inline constexpr const char* kDiagnoseSteps[] = {"control", "drop_caches", "drop_slab", "compact",
                                                 "warm_free_memory"};

// Whether `step` writes to /proc/sys/vm (root only; made by the caller, never the daemon).
bool StepNeedsRoot(const std::string& step);

// What one step did and what the probe read afterwards (kDiagnoseRepeats runs).
struct DiagnoseStep {
  std::string step;              // one of kDiagnoseSteps
  std::string status = "ok";     // ok | skipped (with reason) | failed (with reason)
  std::string reason;            // why skipped/failed; empty when ok
  std::vector<double> figures;   // one per repeat (DriftFigure units), in order
  std::optional<double> figure;  // their median
  std::optional<double> spread;  // highest - lowest
  std::optional<double> ratio;   // figure / baseline
  bool cleared = false;          // every figure above the control's highest (not for control)
  // Memory state at the start of the median run minus at the start of the control's first run
  // (bytes; MemFree, MemAvailable, Cached, SReclaimable, AnonPages).
  std::map<std::string, std::int64_t> memory_delta;
  // Time parts of the median run: wall, cpu_system, cpu_user (seconds) and, for throughput
  // kinds, cpu_system_per_gib; plus the run's time_* parts (time_parts.h).
  std::map<std::string, double> time_parts;
  std::vector<double> direct_figures;   // the direct twin's, one per repeat, if any
  std::optional<double> direct_figure;  // their median
  bool direct_moved = false;            // vs the control's (kDirectMovedShare)
  std::uint64_t warmed_bytes = 0;       // warm_free_memory only (the last repeat's)
};

struct DiagnoseReport {
  std::string probe;
  std::string direct_twin;  // name of the direct probe on the same target; "" when none
  bool root = false;        // the caller may run the root steps
  double start_time_seconds = 0;
  double finish_time_seconds = 0;
  std::optional<double> baseline;
  std::vector<DiagnoseStep> steps;  // control first, then the ladder steps reached
  std::string aborted;              // why the experiment stopped early ("" when it did not)
  std::string verdict;              // the probe's verdict cause when it began (verdict.h)
  std::uint64_t runs = 0;           // experiment runs made (probe and twin)
  std::string outcome;       // recovered | improved | not_recovered | not_slow | aborted | failed
  std::string recovered_by;  // the step that restored (or improved) the figure; "" when none
  std::string text;          // Conclude(): the one-line answer
};

// Whether `ratio` counts as restored (kRecoveredRatio).
bool Restored(std::optional<double> ratio);

// Memory-state delta between two runs' meminfo contexts (see DiagnoseStep::memory_delta).
std::map<std::string, std::int64_t> MemoryDelta(const ProbeResult& first, const ProbeResult& now);

// The time parts of one run (see DiagnoseStep::time_parts).
std::map<std::string, double> StepTimeParts(const ProbeResult& run);

// Fills figures/figure/spread/ratio/memory_delta/time_parts of `step` from its `runs` (the
// first one that failed makes the step failed) against `baseline`; `first` is the control's
// first run. With `control` (every step but the control itself) also `cleared`.
void FillStep(DiagnoseStep& step, const std::vector<ProbeResult>& runs, const ProbeResult& first,
              std::optional<double> baseline, const DiagnoseStep* control);
// Sets direct_figure (median of direct_figures) and direct_moved against the control's.
void FillDirect(DiagnoseStep& step, const DiagnoseStep* control);

// A step recovers: restored and clears the control (see the top of this file).
bool Recovering(const DiagnoseStep& step);
// A step "helped partly": it clears the control and its median closes at least kPartlyShare of
// the gap between the control's median and the baseline (0.02 → 0.03 of a baseline is noise
// that happened to clear a narrow control, not a partial recovery).
bool ClosesPartOfTheGap(const DiagnoseStep& step, const DiagnoseStep& control, double baseline);

// The step to measure next ("" when the experiment is over): the control until it has its
// repeats, "" when the control is not slow or failed, or a step recovered; else the next ladder
// step not yet in `report.steps` (root steps included: for a caller who is not root the daemon
// records them skipped instead of naming them).
std::string NextStep(const DiagnoseReport& report);

// The gates, re-read before every run of an experiment.
struct DiagnoseGates {
  std::optional<std::uint64_t> mem_available_bytes;
  std::optional<double> memory_some_avg10;  // PSI, percent
  std::optional<double> io_some_avg10;      // PSI, percent
};
struct DiagnoseLimits {
  std::uint64_t min_available_bytes = 512ULL << 20;
  double max_memory_some_avg10 = 10;
  double max_io_some_avg10 = 20;
};
// nullopt when a run may go ahead, else which limit applies and the figures.
std::optional<std::string> RefuseReason(const DiagnoseGates& now, const DiagnoseLimits& limits);

// How much free memory warm_free_memory touches (bytes), or nullopt with `why` when it cannot
// warm at least `run_bytes` (what the run will allocate) safely. Wanted: max(run_bytes,
// min(cap, MemAvailable / 4)); allowed: at most MemAvailable / 2 and MemAvailable −
// min_available on the host, and half of `cgroup_headroom` (what the daemon's cgroup still
// allows before memory.high / memory.max; nullopt: no limit), and `cap`.
std::optional<std::uint64_t> WarmBytes(std::uint64_t run_bytes, std::uint64_t cap,
                                       std::uint64_t mem_available, std::uint64_t min_available,
                                       std::optional<std::uint64_t> cgroup_headroom,
                                       std::string& why);

// The cgroup parsers live with the cgroup's memory room (collectors/proc/cgroup_memory.h).
using proc::CgroupV2Path;
using proc::ParseMemoryLimit;

// Sets outcome/recovered_by and text from the steps, e.g. "recovered by warming free memory:
// ratio 0.31 → 0.97 (control 0.29–0.33); dropping caches did not help; direct unchanged;
// agrees with the verdict (page_allocation)".
void Conclude(DiagnoseReport& report);

// The multi-line text `iodriftctl diagnose` prints: the answer, then one line per step.
std::string DiagnoseDetails(const DiagnoseReport& report);

// Flat figures for D-Bus and scripts: baseline, recovered (0/1), runs, start_time,
// finish_time, and per step: ratio.STEP, figure.STEP (medians), spread.STEP, cleared.STEP,
// direct.STEP, direct_moved.STEP, cpu_system_per_gib.STEP, time.PART.STEP (keys without a
// value left out).
std::map<std::string, double> DiagnoseFigures(const DiagnoseReport& report);

}  // namespace iodrift::analysis
