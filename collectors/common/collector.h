// Collector: one source of kernel state turned into Prometheus metric families at scrape time.
//
// One word names a collector everywhere (node_exporter's rule): the file
// (`collectors/proc/meminfo_collector.cpp`), the config key (`collectors.meminfo`), the metric
// subsystem (`iodrift_meminfo_…`) and the `collector` label of `iodrift_collector_success`.
// A collector reads its source through a ProcRoot on every Collect() call; it keeps no state
// between scrapes except what it documents. "The kernel lacks this file" is returned as an
// error value; the Exporter (daemon/exporter.h) turns it into success 0 and logs once.
//
// Thread-safety: Collect() may be called from several HTTP threads at once; implementations
// must be safe for that (they are stateless or guard their state).
#pragma once

#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"

namespace iodrift {

class Collector {
 public:
  virtual ~Collector() = default;

  // The collector's one word: "meminfo", "vmstat", ...
  virtual std::string_view Name() const = 0;

  // Appends this collector's families to `out`. On error nothing partial is appended for a
  // source that could not be read at all; a partly malformed source is still exported.
  virtual Expected<void> Collect(const ProcRoot& root,
                                 std::vector<prometheus::MetricFamily>& out) const = 0;
};

}  // namespace iodrift
