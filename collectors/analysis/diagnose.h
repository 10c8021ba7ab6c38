// The recovery experiment ("would a reboot help?", issue 15 item 3): the pure part — the ladder
// of steps, what one step's re-measurement says, when the ladder stops, the refusal rules and
// the one-line answer. The I/O (running the probe, writing /proc/sys/vm/*, touching memory) is
// daemon/diagnose.h's.
//
// Ladder: measure, then after each reversible intervention re-measure: drop_caches (drop clean
// page cache, drop_caches 1), drop_slab (reclaimable slab, drop_caches 2), compact
// (compact_memory), warm_free_memory (touch and release a bounded amount of free memory so pages
// the hypervisor took back are backed again). The first step whose figure is within
// kRecoveredRatio of the baseline ends the ladder.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/probes/probe.h"

namespace iodrift::probes {

// A figure at or above this share of the baseline counts as restored ("within 10 %").
inline constexpr double kRecoveredRatio = 0.9;
// The direct twin "moved" when its figure differs from its first measurement by more than this.
inline constexpr double kDirectMovedShare = 0.15;

// The ladder in order; "measure" is the first, un-intervened measurement.
inline constexpr const char* kDiagnoseSteps[] = {"measure", "drop_caches", "drop_slab", "compact",
                                                 "warm_free_memory"};

// What one step did and what the probe read afterwards.
struct DiagnoseStep {
  std::string step;              // one of kDiagnoseSteps
  std::string status = "ok";     // ok | skipped (with reason) | failed (with reason)
  std::string reason;            // why skipped/failed; empty when ok
  std::optional<double> figure;  // the probe's figure after the step (DriftFigure units)
  std::optional<double> ratio;   // figure / baseline
  // Memory state at the start of this re-measurement minus at the start of the first one
  // (bytes; MemFree, MemAvailable, Cached, SReclaimable, AnonPages).
  std::map<std::string, std::int64_t> memory_delta;
  // Time parts of the re-measurement: wall, cpu_system, cpu_user (seconds) and, for throughput
  // kinds, cpu_system_per_gib; plus every `time_*` figure the run carries in `extra`.
  std::map<std::string, double> time_parts;
  std::optional<double> direct_figure;  // the direct twin's figure after the step, if any
  bool direct_moved = false;            // vs its first measurement (kDirectMovedShare)
  std::uint64_t warmed_bytes = 0;       // warm_free_memory only
};

struct DiagnoseReport {
  std::string probe;
  std::string direct_twin;  // name of the direct probe on the same target; "" when none
  double start_time_seconds = 0;
  double finish_time_seconds = 0;
  std::optional<double> baseline;
  std::vector<DiagnoseStep> steps;
  std::string outcome;       // recovered | not_recovered | not_slow | failed
  std::string recovered_by;  // the step that restored the figure; "" when none
  std::string text;          // DiagnoseText(): the one-line answer
};

// Whether `ratio` counts as restored (kRecoveredRatio).
bool Restored(std::optional<double> ratio);

// Memory-state delta between two runs' meminfo contexts (see DiagnoseStep::memory_delta).
std::map<std::string, std::int64_t> MemoryDelta(const ProbeResult& first, const ProbeResult& now);

// The time parts of one run (see DiagnoseStep::time_parts).
std::map<std::string, double> StepTimeParts(const ProbeResult& run);

// Fills figure/ratio/memory_delta/time_parts of `step` from `run` (and `first`, the first
// measurement; the same run for step 0) against `baseline`.
void FillStep(DiagnoseStep& step, const ProbeResult& run, const ProbeResult& first,
              std::optional<double> baseline);

// The safety rules: nullopt when an experiment may run, else why not. Refused when PSI memory
// some avg10 is above `max_memory_some_avg10` (percent) or MemAvailable is below
// `min_available_bytes`.
std::optional<std::string> RefuseReason(std::optional<std::uint64_t> mem_available_bytes,
                                        std::optional<double> memory_some_avg10,
                                        std::uint64_t min_available_bytes,
                                        double max_memory_some_avg10);

// Sets outcome/recovered_by and text from the steps: e.g. "recovered by warming free memory:
// ratio 0.31 → 0.97; dropping caches, dropping slab and compaction did not help; direct
// unchanged".
void Conclude(DiagnoseReport& report);

// The multi-line text `iodriftctl diagnose` prints: the answer, then one line per step.
std::string DiagnoseDetails(const DiagnoseReport& report);

// Flat figures for D-Bus and scripts: baseline, recovered (0/1), ratio.STEP, figure.STEP,
// direct.STEP, direct_moved.STEP, start_time, finish_time (keys without a value left out).
std::map<std::string, double> DiagnoseFigures(const DiagnoseReport& report);

}  // namespace iodrift::probes
