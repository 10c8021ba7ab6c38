// Probe metrics: the iodrift_probe_* families of ../shared/DESIGN.md, rendered at scrape time
// from the ResultStore (collectors/probes/result_store.h): gauges show the last run ("values are
// from the last scheduled or on-demand run"), counters and the latency histogram are cumulative
// since the daemon started (a histogram must only grow so that rate() and histogram_quantile()
// work across runs). Also from the configuration: iodrift_probe_interval_seconds, the schedule
// interval of each probe (staleness is judged against it: no run for 3 intervals).
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/probes/result_store.h"
#include "config/config.h"

namespace iodrift::daemon {

// Suspect reasons always exported (0 or 1) so alerts can rely on the series existing.
const std::vector<std::string>& KnownSuspectReasons();

// Configured schedule interval in seconds, by probe name.
using ProbeIntervals = std::map<std::string, double>;

// The intervals of `specs` (e.g. Scheduler::Probes()).
ProbeIntervals IntervalsOf(const std::vector<config::ProbeSpec>& specs);

// Appends the iodrift_probe_* and iodrift_page_cache_tax_ratio families for `records` (a
// ResultStore snapshot). Nothing is appended for an empty snapshot. `intervals` gives
// iodrift_probe_interval_seconds for the records whose name it holds (none when empty).
void AppendProbeFamilies(const std::vector<probes::ProbeRecord>& records,
                         std::vector<prometheus::MetricFamily>& out,
                         const ProbeIntervals& intervals = {});

}  // namespace iodrift::daemon
