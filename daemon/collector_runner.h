// CollectorRunner: runs one state collector's reads on its own worker thread, so that a read that
// hangs in the kernel (a stuck lxcfs /proc/meminfo, a FUSE file that never answers, a dying NFS
// --proc-root) cannot take an HTTP thread — and with it /metrics, /-/healthy and shutdown — along.
//
// Model (the probe scheduler's stuck-lane model, daemon/scheduler.h, for collectors):
// - One worker thread per collector runs Collector::Collect on request, one read at a time.
// - A scrape calls Start() for every collector (the reads run in parallel) and then Wait() with
//   one deadline for the whole scrape (`timeout` after its start). A scrape that arrives while a
//   read is running joins that read instead of starting another.
// - A read still running at a scrape's deadline is reported failed ("did not finish within …")
//   and the collector is marked stuck: while that read is inside the kernel, every later scrape
//   reports the collector failed at once ("previous read still blocked for N s") and no other
//   read is started — threads do not pile up on a hung file. When the read finally returns, its
//   late result is dropped and the next scrape reads again.
// - The destructor never waits for a stuck read: it detaches the worker, which owns only shared
//   state (the collector and the proc root), so shutdown and reloads return at once.
//
// Thread-safety: Start()/Wait() may be called from any number of threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/common/collector.h"
#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"

namespace iodrift::daemon {

// Default deadline of one scrape's collector reads: under Prometheus's default 10 s
// scrape_timeout, far above any healthy /proc read (slabinfo of a big host: ~50 ms).
inline constexpr std::chrono::milliseconds kDefaultCollectorTimeout{4000};

class CollectorRunner {
 public:
  using Clock = std::chrono::steady_clock;

  CollectorRunner(std::shared_ptr<const Collector> collector, ProcRoot root);
  ~CollectorRunner();
  CollectorRunner(const CollectorRunner&) = delete;
  CollectorRunner& operator=(const CollectorRunner&) = delete;

  std::string_view Name() const;

  // A read to wait for, or the reason none was started (the collector is stuck).
  struct Ticket {
    std::uint64_t generation = 0;
    std::optional<Error> refused;  // set: stuck, fail at once with this
  };
  // Starts a read unless one is running (then the ticket joins it) or the collector is stuck.
  Ticket Start();

  // Waits for the ticket's read until `deadline` and appends its families to `out`. Fails with
  // ETIMEDOUT when the read is not done by then (the collector is then stuck), with the ticket's
  // refusal, or with the collector's own error.
  Expected<void> Wait(const Ticket& ticket, Clock::time_point deadline,
                      std::vector<prometheus::MetricFamily>& out);

  // Reads started so far (for tests: no read piles onto a stuck collector).
  std::uint64_t ReadsStarted() const;

 private:
  struct Shared;
  static void Work(const std::shared_ptr<Shared>& shared);

  std::shared_ptr<Shared> shared_;
};

}  // namespace iodrift::daemon
