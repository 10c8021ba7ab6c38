// iodrift_probe_verdict{kind,probe,target,cause}: the verdict (collectors/analysis/verdict.h) as
// data, so alerts, dashboards and a fleet can see the cause a probe's slowdown is put down to.
//
// One series per probe that has a verdict, value 1, `cause` the current cause (CauseName). A probe
// has a verdict once it has run and has its post-boot baseline; before that (no run, or no baseline
// yet) it has no series, because "undetermined" would claim a comparison that was never made. With
// a baseline the series is always there: "undetermined" when no cause carries the added time,
// including "no slowdown" and a last run that failed.
//
// The verdict of a probe depends on its buffered/direct twin (FindTwin), so it changes when the
// twin runs as well as when the probe does: ProbeStates stores it in both states then
// (ProbeState::verdict, probe_states.h), and this family reads what is stored. Code that prepares
// families when a probe runs must re-prepare this one for the probe *and* its twin.
//
// Thread-safety: pure functions.
#pragma once

#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/analysis/probe_states.h"

namespace iodrift::daemon {

// Appends the iodrift_probe_verdict family when at least one probe of `states` has a verdict.
void AppendVerdictFamily(const analysis::ProbeSnapshot& states,
                         std::vector<prometheus::MetricFamily>& out);

}  // namespace iodrift::daemon
