#include "daemon/verdict_metrics.h"

#include <algorithm>
#include <string>

#include "collectors/analysis/verdict.h"
#include "collectors/common/families.h"

namespace iodrift::daemon {
namespace {

// "device, device_busy, …": the cause list, walked from AllCauses() so it never drifts.
std::string CauseList() {
  std::string out;
  for (analysis::Cause cause : analysis::AllCauses()) {
    if (!out.empty()) out += ", ";
    out += analysis::CauseName(cause);
  }
  return out;
}

bool HasVerdict(const analysis::ProbeState& state) {
  return state.ran() && state.baseline && *state.baseline > 0;
}

}  // namespace

void AppendVerdictFamily(const analysis::ProbeSnapshot& states,
                         std::vector<prometheus::MetricFamily>& out) {
  auto family =
      MakeFamily("iodrift_probe_verdict",
                 "The cause the probe's verdict names for its last run against its post-boot "
                 "baseline (1 on the current cause; one series per probe with a baseline): " +
                     CauseList() +
                     ". Evidence for each: docs/reading-drift.md, \"Reading a "
                     "slowdown\".",
                 prometheus::MetricType::Gauge);
  for (const auto& state : states) {
    if (!state || !HasVerdict(*state)) continue;
    const analysis::Verdict& verdict = state->verdict;  // stored when the run was published
    Labels labels = {{"cause", std::string(analysis::CauseName(verdict.cause))},
                     {"kind", std::string(probes::ProbeKindName(state->last.kind))},
                     {"probe", state->last.name},
                     {"target", state->last.target}};
    AddSample(family, 1, std::move(labels));
  }
  if (!family.metric.empty()) out.push_back(std::move(family));
}

}  // namespace iodrift::daemon
