// Exporter: everything /metrics shows, assembled at scrape time.
//
// It owns the state collectors (built from the config's `collectors:` section), the process
// self-metrics collector and iodrift_build_info, and asks any extra sources (the probe result
// store) for their families. Each collector's run is timed and its outcome exported as
// iodrift_collector_success / iodrift_collector_duration_seconds; a collector that starts
// failing is logged once (warn), and once more when it recovers — never on every scrape.
//
// Thread-safety: Collect()/RenderText() may run concurrently on HTTP threads; Reconfigure() swaps
// the collector set atomically (scrapes in flight finish on the old set).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/common/collector.h"
#include "config/config.h"

namespace iodrift::daemon {

using FamilySource = std::function<void(std::vector<prometheus::MetricFamily>&)>;

class Exporter {
 public:
  Exporter(const ProcRoot& root, const config::CollectorsConfig& collectors);
  ~Exporter();

  // Replaces the proc root and the state collectors.
  void Reconfigure(const ProcRoot& root, const config::CollectorsConfig& collectors);

  // Adds a source of families (called on every scrape, after the collectors).
  void AddSource(FamilySource source);

  std::vector<prometheus::MetricFamily> Collect() const;

  // Prometheus text format 0.0.4 of Collect().
  std::string RenderText() const;

 private:
  struct CollectorSet;
  std::shared_ptr<const CollectorSet> Current() const;

  mutable std::mutex mu_;
  std::shared_ptr<const CollectorSet> set_;
  std::vector<FamilySource> sources_;
};

}  // namespace iodrift::daemon
