// Probe metrics: the iodrift_probe_* families of ../shared/DESIGN.md, rendered at scrape time
// from the ResultStore (collectors/probes/result_store.h): gauges show the last run ("values are
// from the last scheduled or on-demand run"), counters and the latency histogram are cumulative
// since the daemon started (a histogram must only grow so that rate() and histogram_quantile()
// work across runs).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/probes/result_store.h"

namespace iodrift::daemon {

// Suspect reasons always exported (0 or 1) so alerts can rely on the series existing.
const std::vector<std::string>& KnownSuspectReasons();

// Appends the iodrift_probe_* and iodrift_page_cache_tax_ratio families for `records` (a
// ResultStore snapshot). Nothing is appended for an empty snapshot.
void AppendProbeFamilies(const std::vector<probes::ProbeRecord>& records,
                         std::vector<prometheus::MetricFamily>& out);

}  // namespace iodrift::daemon
