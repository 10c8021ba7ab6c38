// The verdict: one line that names the cause of a slowdown from the run's time parts
// (collectors/probes/time_parts.h) and the kernel's reasons for the readers' waits, compared
// with the baseline runs', and the buffered/direct pair on the same target. It opens every
// explain text (explain.h) and is the `verdict` of `iodriftctl explain --json`.
//
// Work unit: a GiB for throughput kinds (seconds per GiB), an operation for random and metadata
// (seconds per op; ms in the text). Time per unit = 1 / figure, and the time parts add up to the
// wall time, so the time a slowdown added per unit (1/figure - 1/baseline) is the sum of what each
// part added per unit: part share of wall / figure now, minus the baseline runs' median share /
// baseline figure. Every piece of evidence (a part, or an overlapping figure such as a delay) is
// put per unit the same way. Evidence *carries* the slowdown when it added >= kShareOfAdded of
// the added time, grew >= kPartGrowth x its baseline value per unit, and grew >= kOutgrowRest x
// as much as the rest of the time per unit (a proportional slowdown carries nothing) — except
// for off-CPU and block I/O wait when others moved >= kOthersBusy of the device's bytes and the
// rest added < kAbsent of the added time (a rest of a few ms per run grows by noise;
// verdict_evidence.cpp PerUnit::Carries). Evidence unknown now or at baseline carries nothing.
//
// Rules, in order (docs/reading-drift.md "Reading a slowdown" has the table and measurements):
//   1. no baseline, no figure, no time parts now or at baseline → undetermined (says which);
//   2. figure / baseline >= kSlowdownRatio → undetermined ("no slowdown"); and a slowdown must
//      have lasted: when one of the kSustainedRuns - 1 successful runs before it (those known:
//      ProbeState::recent_ratios) was at or above kSlowdownRatio → undetermined ("a single slow
//      run"). One run's figure scatters (the cause zoo's healthy probes, nothing induced: ratios
//      0.68-1.57 run to run on a loop device over RAM), and a cause named for the scatter is a
//      wrong one: 1-2 of 30 healthy runs named `device` before this rule, none with it;
//   3. memory waits, whatever part they fell in: the readers' reclaim + thrashing + swap-in delay
//      carries → memory_reclaim; compaction delay carries → memory_compaction. Re-reads count
//      here: when the memory waits (reclaim + thrashing + swap-in delay, or the cgroup's memory
//      stall) reach kAbsent of the added time and the readers fetched >= kRereadAmplification x
//      the bytes they delivered, the share 1 - 1/amplification of the block I/O wait re-read
//      pages reclaim took; it stands in for the thrashing delay (both are waits on evicted pages)
//      when larger. Without delay accounting, only with such re-reads: the cgroup's memory stall
//      stands for the reclaim delay and the off-CPU wait for the block I/O wait;
//   4. of the three parts kernel CPU, off-CPU wait (device_wait + other), run-queue wait, the one
//      that added the most must carry, else undetermined with the figures. Then:
//      run-queue wait → cpu_contention;
//      off-CPU wait   → cpu_contention when the cgroup's CPU quota throttling carries and block
//                       I/O wait does not; memory_reclaim when the cgroup hit memory.high
//                       (memory_high_events > 0) and the cgroup's memory stall carries and block
//                       I/O wait does not; on a remote target → remote_filesystem; on a local one
//                       block I/O wait (blkio delay) must carry: the device's bytes during the
//                       step were <= kOthersQuiet others' → device, >= kOthersBusy others' →
//                       device_busy, between or unknown → undetermined; but when the memory
//                       waits (reclaim + thrashing + swap-in delay, compaction delay or the
//                       cgroup's memory stall) now reach kAbsent of the added time →
//                       undetermined: the block I/O may be re-reads of pages reclaim took (the
//                       zoo's memory_high case). Without delay accounting
//                       (the fallback): the off-CPU wait stands for block I/O on a direct probe
//                       (its O_DIRECT reads are its device requests) and on a buffered probe
//                       whose direct twin slowed (< kSlowdownRatio) from the same moment, or
//                       has no such run yet (rule 6); others' share then decides as above.
//                       Else device only when others' share <= kOthersQuiet and the io stall
//                       (PSI: the daemon's cgroup's io.pressure where it has one, else the
//                       system's) covers >= kIoCover of the off-CPU wait, so the wait can be
//                       block I/O; else undetermined naming the missing evidence;
//      kernel CPU     → with delay accounting, reclaim + compaction delays now < kAbsent of the
//                       added time, and the cgroup's memory stall too, rule them out; without it,
//                       no global direct reclaim or compaction stall (vmstat allocstall_*,
//                       compact_stall) during the run and the memory stall (the cgroup's, else PSI)
//                       < kAbsent of the added time: then on a buffered probe page_allocation, or
//                       hypervisor_reclaim when the guest handed free memory back to the host
//                       during the step (free page reporting). Without delay accounting, a direct
//                       reclaim (compaction) stall alone → memory_reclaim (memory_compaction); both
//                       → undetermined. Other kinds allocate no page-cache pages → undetermined;
//   5. device or device_busy on a buffered probe whose direct twin (same target) has a ratio and
//      kept >= kSlowdownRatio of its baseline → undetermined: the device did not slow direct
//      reads. (A direct twin that fell as well is named in the text as the confirmation; a
//      memory verdict names whether direct stayed unchanged.)
//   6. device or device_busy on a buffered probe whose direct twin exists but has no run from the
//      same moment (Contemporaneous below) → undetermined, saying the twin's evidence is missing,
//      with `wants_twin_run` set: the daemon then runs the twin at once (daemon/app.cpp), and the
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
// Code. verdict_rules.cpp holds one function per rule, each returning a finding (a cause named,
// or undetermined with its reason) or "not mine", and DecideVerdict, which walks them in the
// order above; verdict_evidence.cpp gathers the evidence once per decision and holds the one
// formatter of the text. The verdict is computed once per published run, not per output:
// ProbeStates stores it with the probe's state (ProbeState::verdict, StoreVerdict; when it is
// recomputed: probe_states.h) and JSON, D-Bus, /metrics, the status page, explain and the boot
// record read it.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/analysis/cause.h"
#include "collectors/analysis/drift.h"
#include "collectors/analysis/probe_states.h"

namespace iodrift::analysis {

inline constexpr double kSlowdownRatio = 0.9;
// Runs in a row below kSlowdownRatio (the last one included) before a cause is named.
inline constexpr std::size_t kSustainedRuns = kRecentRatios;
inline constexpr double kShareOfAdded = 0.5;
inline constexpr double kPartGrowth = 1.5;
inline constexpr double kOutgrowRest = 1.25;
inline constexpr double kTwinWindowSeconds = 30;
// Others' share of the device's bytes during the step: at most kOthersQuiet, the device served
// us; at least kOthersBusy, our requests queued behind others'; between, undetermined. Measured
// in the cause zoo (docs/reading-drift.md): 0-0.12 on a device slowed with nobody else on it
// (block throttle, slow backing store, healthy runs), 0.73-0.94 with another reader queued ahead
// on a serialized device; a share of bytes, not of the device's time, so a busy reader whose
// requests are smaller than the other's can read lower (0.37-0.49 seen): undetermined then.
inline constexpr double kOthersQuiet = 0.25;
inline constexpr double kOthersBusy = 0.5;
// Evidence whose time per unit now is below kAbsent x the added time is absent.
inline constexpr double kAbsent = 0.2;
// Read amplification (bytes fetched from storage / bytes delivered) at or above which the share
// 1 - 1/amplification of the block I/O wait counts as re-reads of evicted pages, when reclaim took
// part. 1.5: above a run's own readahead beyond its last read (1.0-1.19 in the cause zoo's healthy
// and block-throttled buffered runs, 1.8-2.8 under a memory cgroup's limit).
inline constexpr double kRereadAmplification = 1.5;
// Without delay accounting, off-CPU wait counts as block I/O only when the io stall share (PSI
// "some": the daemon's cgroup's where it has one, else the system's) of the run is at least
// kIoCover x the readers' off-CPU share. The system's figure is each CPU's stall weighed by its
// busy time: one reader waiting on a 2-CPU machine whose other CPU is busy shows at half (1.00 s
// of a throttled read's 2.0 s block I/O wait, 4 runs of 4; docs/reading-drift.md).
inline constexpr double kIoCover = 0.8;

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
  // Whether the target is on a remote filesystem (TargetInfo::remote); nullopt when unknown.
  std::optional<bool> remote;
  // Ratios of the successful runs before the last one, oldest first (at most kSustainedRuns - 1;
  // fewer when fewer ran since the baseline formed: only those are checked).
  std::vector<double> previous_ratios;
};

// The rules above, in their order (verdict_rules.cpp: one function per rule).
Verdict DecideVerdict(const VerdictInput& in);

// Whether `other` is `state`'s twin: the buffered probe for a direct one and the reverse, on the
// same target, that ran. The one pairing rule.
bool IsTwinOf(const ProbeState& state, const ProbeState& other);
// The first of `all` that IsTwinOf `state`; else null.
const ProbeState* FindTwin(const ProbeSnapshot& all, const ProbeState& state);

// The twin rule (top of this file): `twin_run` starts at or after `run` started and at most
// kTwinWindowSeconds after `run` ended.
bool Contemporaneous(const ProbeResult& run, const ProbeResult& twin_run);

// DecideVerdict on a probe's state (its last run vs its baseline) and its twin (may be null).
Verdict VerdictOf(const ProbeState& state, const ProbeState* twin);

// Stores VerdictOf(state, twin) and the twin's name in `state` (ProbeState::verdict, ::twin).
// ProbeStates calls it when a run is published (probe_states.h says when); every output reads
// what it stored.
void StoreVerdict(ProbeState& state, const ProbeState* twin);
// The twin `state` stored (ProbeState::twin) as it is in `all`; null when none.
const ProbeState* StoredTwin(const ProbeSnapshot& all, const ProbeState& state);

}  // namespace iodrift::analysis
