// `explain`: a one-screen answer for an operator about one probe (iodriftctl explain, D-Bus
// Explain, the status page, /api/v1/probes): first the verdict line (verdict.h: "Verdict: <cause>:
// <figures>"), then the last figure, where the last run's time went (time_parts.h), the ratio to
// the baseline (and how the baseline was formed), the worst ratio of this boot, then the
// memory-state features ranked by |Spearman rho| over the drift window with their value now and at
// baseline time.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>

#include "collectors/analysis/drift.h"
#include "collectors/analysis/probe_states.h"
#include "collectors/analysis/verdict.h"

namespace iodrift::analysis {

// The text. Pure; never fails (says what is missing). The verdict line is the one stored with
// the record (ProbeState::verdict).
std::string ExplainProbe(const ProbeState& record, const DriftWindow& window);

// The numbers behind ExplainProbe, for scripts (D-Bus Explain, `iodriftctl explain --json`):
// last, baseline, ratio, worst_ratio, uptime_at_worst (those that exist), window_runs,
// baseline_runs_needed, baseline_runs_counted, and "rho.<feature>" for every feature with a
// correlation over `window`, and "time.<part>" for the last run's time parts (seconds).
std::map<std::string, double> ExplainFigures(const ProbeState& record, const DriftWindow& window);

}  // namespace iodrift::analysis
