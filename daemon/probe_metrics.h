// Probe metrics: the iodrift_probe_* families of ../shared/DESIGN.md, rendered at scrape time
// from the probe states' snapshot (collectors/analysis/probe_states.h): gauges show the last run
// ("values are from the last scheduled or on-demand run"), counters and the latency histogram are
// cumulative since the daemon started (a histogram must only grow so that rate() and
// histogram_quantile() work across runs). Also from the probe's spec:
// iodrift_probe_interval_seconds, the schedule interval of each probe (staleness is judged against
// it: no run for 3 intervals).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/analysis/probe_states.h"

namespace iodrift::daemon {

// Suspect reasons always exported (0 or 1) so alerts can rely on the series existing.
const std::vector<std::string>& KnownSuspectReasons();

// Appends the iodrift_probe_* and iodrift_page_cache_tax_ratio families for the probes of
// `states` that ran at least once (or have a recovery experiment's record). Nothing is appended
// when none did.
void AppendProbeFamilies(const analysis::ProbeSnapshot& states,
                         std::vector<prometheus::MetricFamily>& out);

}  // namespace iodrift::daemon
