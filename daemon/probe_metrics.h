// Probe metrics: the iodrift_probe_* families of ../shared/DESIGN.md, rendered from the history
// of probe results.
//
// ProbeMetrics is fed every finished ProbeResult (scheduled or on demand) and keeps, per probe:
// the last result (what the gauges show — "values are from the last run"), run counters per
// outcome, cumulative bytes read, and a cumulative latency histogram (a Prometheus histogram must
// only grow, so rate()/histogram_quantile() work across runs). Probes removed by a reload are
// dropped from the output.
//
// Thread-safety: Record() and Collect() may be called from any thread.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/probes/probe.h"

namespace iodrift::daemon {

// Everything exported about one probe.
struct ProbeSeries {
  probes::ProbeResult last;
  std::map<probes::Outcome, std::uint64_t> runs;
  std::uint64_t read_bytes_total = 0;
  probes::LatencyHistogram latency_total;  // cumulative over all runs (bucket_counts, count, sum)
};

// Suspect reasons always exported (0 or 1) so alerts can rely on the series existing.
const std::vector<std::string>& KnownSuspectReasons();

class ProbeMetrics {
 public:
  void Record(const probes::ProbeResult& result);

  // Keeps only probes named in `names` (after a reload).
  void Retain(const std::set<std::string>& names);

  void Collect(std::vector<prometheus::MetricFamily>& out) const;

  std::vector<ProbeSeries> Snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, ProbeSeries> series_;
};

// Pure rendering of `series` (exposed for tests).
void AppendProbeFamilies(const std::vector<ProbeSeries>& series,
                         std::vector<prometheus::MetricFamily>& out);

}  // namespace iodrift::daemon
