// Probe metrics: the iodrift_probe_* families of docs/metrics.md, rendered at scrape time
// from the probe states' snapshot (collectors/analysis/probe_states.h): gauges show the last run
// ("values are from the last scheduled or on-demand run"), counters and the latency histogram are
// cumulative since the daemon started (a histogram must only grow so that rate() and
// histogram_quantile() work across runs). Also from the probe's spec:
// iodrift_probe_interval_seconds, the schedule interval of each probe (staleness is judged against
// it: no run for 3 intervals).
//
// The families are a function of the snapshot alone, and every change of a probe's state (its run,
// its twin's run, which moves the twin-derived figures, a reload, a recorded recovery experiment)
// publishes a new snapshot. PreparedProbeFamilies keeps their text for the last snapshot it saw,
// made when a run is recorded (the daemon's scheduler listener calls Prepare) or, for the other
// events, at the first scrape after them; a scrape copies those bytes instead of building ~40
// families per probe again. Keyed on the snapshot itself, so no event can leave stale text.
//
// Thread-safety: AppendProbeFamilies is a pure function; PreparedProbeFamilies may be used from
// any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/analysis/probe_states.h"
#include "daemon/prepared_body.h"

namespace iodrift::daemon {

// Appends the iodrift_probe_* and iodrift_page_cache_tax_ratio families for the probes of
// `states` that ran at least once (or have a recovery experiment's record). Nothing is appended
// when none did.
void AppendProbeFamilies(const analysis::ProbeSnapshot& states,
                         std::vector<prometheus::MetricFamily>& out);

// The text (format 0.0.4, daemon/exposition.h) of AppendProbeFamilies for one snapshot, kept.
class PreparedProbeFamilies {
 public:
  using Snapshot = std::shared_ptr<const analysis::ProbeSnapshot>;

  // Makes the text of `snapshot` now unless it is the snapshot already prepared.
  void Prepare(const Snapshot& snapshot);
  // The text of `snapshot`: the prepared one when it is this snapshot's, else made now (and
  // kept for the next scrape).
  std::shared_ptr<const PreparedBody> Body(const Snapshot& snapshot);
  // Appends Body(snapshot)'s text to `out`.
  void AppendText(const Snapshot& snapshot, std::string& out);
  // How many times the text was made (tests, benchmarks).
  std::uint64_t renders() const { return renders_.load(std::memory_order_relaxed); }

 private:
  struct Text {
    Snapshot snapshot;  // held: its address cannot be reused by a later snapshot
    std::shared_ptr<const PreparedBody> body;
  };
  std::shared_ptr<const Text> Current() const;
  std::shared_ptr<const Text> Make(const Snapshot& snapshot);

  mutable std::mutex mu_;
  std::shared_ptr<const Text> prepared_;
  std::atomic<std::uint64_t> renders_{0};
};

}  // namespace iodrift::daemon
