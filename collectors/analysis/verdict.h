// The verdict: one line that names the cause of a slowdown from the run's time parts
// (collectors/probes/time_parts.h) compared with the baseline runs' parts, and the buffered/direct
// pair on the same target. It opens every explain text (explain.h) and is the `verdict` of
// `iodriftctl explain --json`.
//
// Work unit: a GiB for throughput kinds (seconds per GiB), an operation for random and metadata
// (seconds per op; ms in the text). Time per unit = 1 / figure, and the time parts add up to the
// wall time, so the time a slowdown added per unit (1/figure - 1/baseline) is the sum of what each
// part added per unit: part share of wall / figure now, minus the baseline runs' median share /
// baseline figure. The parts compared:
//   kernel CPU      kernel_cpu_ratio     → memory_management (allocating and reclaiming pages)
//   off-CPU wait    wait_ratio           → device (device_wait + other: waiting for I/O,
//                                          including a throttle that holds requests back)
//   run-queue wait  runqueue_wait_ratio  → cpu_contention
// Rules, in order (thresholds kSlowdownRatio, kShareOfAdded, kPartGrowth, kOutgrowRest;
// docs/reading-drift.md "Reading a slowdown" has the measurements behind them):
//   1. no baseline, no figure, no time parts now or at baseline → undetermined (says which);
//   2. figure / baseline >= kSlowdownRatio → undetermined ("no slowdown");
//   3. the part that added the most time per unit must carry >= kShareOfAdded of the added time
//      and have grown >= kPartGrowth x its baseline value per unit and >= kOutgrowRest x as much
//      as the rest of the time per unit (a proportional slowdown names no part), else
//      undetermined;
//   4. device on a buffered probe whose direct twin (same target) has a ratio and kept
//      >= kSlowdownRatio of its baseline → undetermined: the device did not slow direct reads.
//      (A direct twin that fell as well is named in the text as the confirmation; a
//      memory_management verdict names whether direct stayed unchanged.)
//   5. device on a buffered probe whose direct twin exists but has no run from the same moment
//      (Contemporaneous below) → undetermined, saying the twin's evidence is missing, with
//      `wants_twin_run` set: the daemon then runs the twin at once (daemon/app.cpp), and the
//      verdict after that run is decided on evidence measured under the same conditions.
//
// The twin rule. A twin's run is evidence for a probe's run only when it was measured under the
// same conditions: it starts at or after the start of the probe's run and at most
// kTwinWindowSeconds after its end, under the twin's current spec (generation). Probes on one
// device never overlap (daemon/scheduler.h), so a twin run on the same target "closely follows":
// the daemon's follow-up run starts as soon as the probe's run frees the device lane (a gap of
// milliseconds); 30 s leaves room for one other probe queued on that lane (a default-sized run
// takes seconds) while keeping out runs from before a change of conditions (a throttle, a
// squeeze, another workload) that happened minutes earlier — the case of a direct twin from
// before a block throttle was applied, which read as "direct reads did not slow: not the device".
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/analysis/drift.h"
#include "collectors/analysis/probe_states.h"

namespace iodrift::analysis {

inline constexpr double kSlowdownRatio = 0.9;
inline constexpr double kShareOfAdded = 0.5;
inline constexpr double kPartGrowth = 1.5;
inline constexpr double kOutgrowRest = 1.25;
inline constexpr double kTwinWindowSeconds = 30;

// The causes a verdict can name (iodrift_probe_verdict{cause}, JSON/D-Bus `cause`). Names are
// lower-case words with '_'; docs/reading-drift.md lists the evidence each needs.
enum class Cause {
  kDevice,             // "device": the device serves our requests more slowly
  kDeviceBusy,         // "device_busy": our requests queued behind other I/O on the device
  kMemoryReclaim,      // "memory_reclaim": the reader waited in or spent CPU on reclaim
  kMemoryCompaction,   // "memory_compaction": high-order allocation / compaction
  kPageAllocation,     // "page_allocation": kernel CPU allocating and zeroing page-cache pages
  kHypervisorReclaim,  // "hypervisor_reclaim": page allocation from memory the host took back
                       //   (free page reporting / balloon)
  kMemoryManagement,   // "memory_management": kernel CPU grew, no finer evidence (legacy)
  kCpuContention,      // "cpu_contention": run-queue wait, cgroup CPU quota throttling
  kRemoteFilesystem,   // "remote_filesystem": a network filesystem's server or network
  kUndetermined,       // "undetermined": no cause carries most of the added time
};
std::string_view CauseName(Cause cause);
// Every cause, in the order above (metrics export one series per probe for the current one).
const std::vector<Cause>& AllCauses();
std::optional<Cause> ParseCauseName(std::string_view name);

struct VerdictInput {
  ProbeKind kind = ProbeKind::kBuffered;
  std::optional<double> figure;            // last run's figure (bytes/s or ops/s)
  std::optional<double> baseline;          // same unit
  DriftFeatures now = UnknownFeatures();   // last run's features (the *_ratio time parts used)
  DriftFeatures base = UnknownFeatures();  // baseline runs' medians
  // The buffered/direct twin on the same target: its kind and figure / its baseline.
  std::optional<ProbeKind> twin_kind;
  std::optional<double> twin_ratio;
  // Set when the twin exists but its last run is not contemporaneous (twin_ratio is then unset):
  // the twin run's start minus this run's start, in seconds (negative: it ran before).
  std::optional<double> twin_stale_offset_seconds;
};

struct Verdict {
  Cause cause = Cause::kUndetermined;
  std::string line;  // "Verdict: <cause>: <figures>" (no newline)
  // Undetermined only for want of a contemporaneous twin run (rule 5): running the twin now
  // would decide it.
  bool wants_twin_run = false;
};

Verdict DecideVerdict(const VerdictInput& in);

// The buffered probe for a direct one and the reverse, on the same target, that ran; else null.
// The one place that pairs twins (verdict, explain, D-Bus, status page, /api/v1/probes).
const ProbeState* FindTwin(const ProbeSnapshot& all, const ProbeState& state);

// The twin rule (top of this file): `twin_run` starts at or after `run` started and at most
// kTwinWindowSeconds after `run` ended.
bool Contemporaneous(const ProbeResult& run, const ProbeResult& twin_run);

// The twin whose run now would decide `state`'s verdict (VerdictOf(...).wants_twin_run); null when
// none is needed. The daemon runs it as soon as `state`'s run is recorded.
const ProbeState* TwinToRunNow(const ProbeSnapshot& all, const ProbeState& state);

// DecideVerdict on a probe's state (its last run vs its baseline) and its twin (may be null).
Verdict VerdictOf(const ProbeState& state, const ProbeState* twin);

}  // namespace iodrift::analysis
