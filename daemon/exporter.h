// Exporter: everything /metrics shows, assembled at scrape time.
//
// Collector reads run on a worker thread (daemon/collector_runner.h), one after the other, never on
// the HTTP thread: a read still running `collector_timeout` after the scrape started is reported
// as iodrift_collector_success 0, and while it stays blocked later scrapes report that collector
// failed at once without starting another read. A hung /proc file thus costs one scrape at most
// `collector_timeout` and the others nothing; /-/healthy and shutdown are not affected.
//
// It owns the state collectors (built from the config's `collectors:` section), the process
// self-metrics collector and iodrift_build_info, and asks any extra sources (the probe result
// store) for their families. Each collector's run is timed and its outcome exported as
// iodrift_collector_success / iodrift_collector_duration_seconds; a collector that starts
// failing is logged once (warn), and once more when it recovers — never on every scrape.
//
// A collector whose read is blocked is exported as iodrift_collector_stuck 1. Reconfigure() (a
// reload) keeps the collector set when neither the proc root nor the `collectors:` section
// changed; otherwise the new runner shares the old one's InFlightReads, so a read still blocked
// from before is neither started again nor waited for, whatever the number of reloads.
//
// Thread-safety: Collect()/RenderText() may run concurrently on HTTP threads; Reconfigure() swaps
// the collector set atomically (scrapes in flight finish on the old set).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/common/collector.h"
#include "config/config.h"
#include "daemon/collector_runner.h"
#include "daemon/prepared_body.h"

namespace iodrift::daemon {

// Text already in the exposition format (prepared families), sent after the collectors' text.
using TextSource = std::function<std::shared_ptr<const PreparedBody>()>;

class Exporter {
 public:
  Exporter(const ProcRoot& root, const config::CollectorsConfig& collectors,
           std::chrono::milliseconds collector_timeout = kDefaultCollectorTimeout);
  ~Exporter();

  // Replaces the proc root and the state collectors (keeps them when both are unchanged).
  void Reconfigure(const ProcRoot& root, const config::CollectorsConfig& collectors);

  // Adds a source of prepared text, appended after Collect()'s families on every scrape.
  void AddTextSource(TextSource source);

  std::vector<prometheus::MetricFamily> Collect() const;

  // Prometheus text format 0.0.4: Collect()'s families (daemon/exposition.h) in `head`, then
  // the text sources' parts, left apart so that a gzip response reuses their deflate blocks.
  struct Rendered {
    std::string head;
    PreparedParts tail;
  };
  Rendered Render() const;
  // head + the tail's texts, one string.
  std::string RenderText() const;

 private:
  struct CollectorSet;
  std::shared_ptr<const CollectorSet> Current() const;

  const std::chrono::milliseconds collector_timeout_;
  // Collector reads in flight, shared by the runners of every reload.
  const std::shared_ptr<InFlightReads> in_flight_ = std::make_shared<InFlightReads>();
  mutable std::mutex mu_;
  std::shared_ptr<const CollectorSet> set_;
  std::vector<TextSource> text_sources_;
  mutable std::atomic<std::size_t> last_text_size_{0};
};

}  // namespace iodrift::daemon
