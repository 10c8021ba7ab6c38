#include "collectors/analysis/verdict.h"

#include <algorithm>
#include <string>

#include "collectors/probes/kinds.h"

namespace iodrift::analysis {

using namespace probes;  // NOLINT: reads what the probes measured

bool IsTwinOf(const ProbeState& state, const ProbeState& other) {
  const std::optional<ProbeKind> want = probes::Traits(state.spec.kind).twin;
  return want && other.spec.kind == *want && other.spec.target == state.spec.target && other.ran();
}

const ProbeState* FindTwin(const ProbeSnapshot& all, const ProbeState& state) {
  for (const auto& other : all) {
    if (other && IsTwinOf(state, *other)) return other.get();
  }
  return nullptr;
}

bool Contemporaneous(const ProbeResult& run, const ProbeResult& twin_run) {
  const double run_end = run.start_time_seconds + std::max(0.0, run.duration_seconds);
  return twin_run.start_time_seconds >= run.start_time_seconds &&
         twin_run.start_time_seconds <= run_end + kTwinWindowSeconds;
}

Verdict VerdictOf(const ProbeState& state, const ProbeState* twin) {
  VerdictInput in;
  in.kind = state.spec.kind;
  in.baseline = state.baseline;
  if (!state.ran()) {
    return Verdict{};  // "Verdict: undetermined: no run yet"
  }
  if (state.last.success()) {
    in.figure = DriftFigure(state.last);
    in.now = ExtractDriftFeatures(state.last);
    // With a baseline_ratio (else rule 1 decides), recent_ratios ends with the last run's and
    // holds at most kSustainedRuns: the ones before it are the previous runs'.
    const auto& recent = state.recent_ratios;
    if (state.baseline_ratio && !recent.empty()) {
      in.previous_ratios.assign(recent.begin(), recent.end() - 1);
    }
  }
  in.base = state.baseline_features;
  const auto& target = state.last.target_info;
  if (target.remote == "1") {
    in.remote = true;
  } else if (target.remote == "0" || !target.device.empty()) {
    in.remote = false;
  }
  if (twin) {
    in.twin_kind = twin->spec.kind;
    if (twin->last.generation == twin->generation && Contemporaneous(state.last, twin->last)) {
      if (twin->last.success()) in.twin_ratio = twin->baseline_ratio;
    } else {
      in.twin_stale_offset_seconds = twin->last.start_time_seconds - state.last.start_time_seconds;
    }
  }
  if (!state.last.success()) {
    return Verdict{Cause::kUndetermined, "Verdict: undetermined: the last run did not succeed (" +
                                             std::string(OutcomeName(state.last.outcome)) + ")"};
  }
  return DecideVerdict(in);
}

void StoreVerdict(ProbeState& state, const ProbeState* twin) {
  state.verdict = VerdictOf(state, twin);
  state.twin = twin ? twin->spec.name : std::string();
}

const ProbeState* StoredTwin(const ProbeSnapshot& all, const ProbeState& state) {
  if (state.twin.empty()) return nullptr;
  for (const auto& other : all) {
    if (other && other->spec.name == state.twin) return other.get();
  }
  return nullptr;
}

}  // namespace iodrift::analysis
