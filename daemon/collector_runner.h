// CollectorRunner: runs the state collectors' reads off the HTTP threads, so that a read that
// hangs in the kernel (a stuck lxcfs /proc/meminfo, a FUSE file that never answers, a dying NFS
// --proc-root) cannot take an HTTP thread — and with it /metrics, /-/healthy and shutdown — along.
//
// Model (the probe scheduler's stuck-lane model, daemon/scheduler.h, for collectors):
// - One worker thread runs a scrape's reads one after the other ("a round"), on request. The
//   common path costs one hand-off to the worker and one back, and the families are moved, not
//   copied, to the scrape. A scrape that arrives while a round is running joins that round
//   instead of starting another.
// - A read running longer than `hedge` (far above any healthy /proc read) no longer holds up the
//   others: its worker is left to finish that one read alone (detached; it exits afterwards) and
//   a fresh worker takes the reads still queued behind it. So a hung file costs the other
//   collectors at most `hedge`, and threads are only made when a read is that slow.
// - A read still running at the scrape's deadline is reported failed ("did not finish within …")
//   and its collector is marked stuck: while that read is inside the kernel, every later scrape
//   reports the collector failed at once ("previous read still blocked for N s") and no other
//   read of it is started — threads do not pile up on a hung file. When the read finally
//   returns, its late result is dropped and the next scrape reads it again.
// - The destructor never waits for a stuck read: a worker in a read is detached; it owns only
//   shared state (the collectors and the proc root), so shutdown and reloads return at once.
// - Stuck reads outlive the runner: every read is entered in an InFlightReads registry under its
//   proc root and collector name, and runners built by a reload share their predecessor's
//   registry. A collector with a read of the same key in flight longer than `hedge` (left blocked
//   by an earlier runner) is reported stuck at once and not read again until that read returns —
//   so no number of reloads adds a thread or a deadline wait for one hung file. The detached
//   thread leaves the registry and exits when its read finally returns.
//
// Thread-safety: Scrape() may be called from any number of threads at once; InFlightReads is
// thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
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
// A read this slow gets the reads queued behind it moved to a fresh worker.
inline constexpr std::chrono::milliseconds kDefaultCollectorHedge{250};

// The collector reads in flight, across runners: (proc root, collector name) -> start times.
class InFlightReads {
 public:
  using Clock = std::chrono::steady_clock;

  // Enters a read of `key` started at `started`; returns its ticket for End().
  std::uint64_t Begin(const std::string& key, Clock::time_point started);
  // The read with `ticket` returned.
  void End(const std::string& key, std::uint64_t ticket);
  // Start of the oldest read of `key` still in flight that started at or before `cutoff`, if any.
  std::optional<Clock::time_point> OldestBefore(const std::string& key,
                                                Clock::time_point cutoff) const;
  // Reads in flight now (for tests and the stuck-read bound).
  std::size_t Count() const;

 private:
  mutable std::mutex mu_;
  std::uint64_t next_ticket_ = 0;
  std::multimap<std::string, std::pair<std::uint64_t, Clock::time_point>> reads_;
};

class CollectorRunner {
 public:
  using Clock = std::chrono::steady_clock;

  // `in_flight`: the registry shared with the runners this one replaces (null: a fresh one).
  CollectorRunner(std::vector<std::shared_ptr<const Collector>> collectors, ProcRoot root,
                  Clock::duration hedge = kDefaultCollectorHedge,
                  std::shared_ptr<InFlightReads> in_flight = nullptr);
  ~CollectorRunner();
  CollectorRunner(const CollectorRunner&) = delete;
  CollectorRunner& operator=(const CollectorRunner&) = delete;

  std::size_t Size() const;
  std::string_view Name(std::size_t i) const;

  // One collector's part of a scrape.
  struct Outcome {
    // ETIMEDOUT when the read was not done by the deadline or the collector is stuck; else the
    // collector's own result.
    Expected<void> result;
    // The collector's read is blocked: it missed this deadline, or an earlier read of it (also
    // one a replaced runner started) still has not returned. Implies !result.
    bool stuck = false;
    std::chrono::duration<double> took{0};  // the read's own time (or the time waited for it)
    std::vector<prometheus::MetricFamily> families;  // empty unless result is ok
  };

  // Reads every collector (or joins the round in flight) and waits until `deadline` at most.
  // Returns one outcome per collector, in construction order.
  std::vector<Outcome> Scrape(Clock::time_point deadline);

  // Reads of collector `i` started so far (for tests: no read piles onto a stuck collector).
  std::uint64_t ReadsStarted(std::size_t i) const;
  // Worker threads started so far (for tests: one for the common path).
  std::uint64_t WorkersStarted() const;
  // Scrapes waiting for the round in flight (for tests: a second scrape joined it).
  int ScrapesWaiting() const;

 private:
  struct Shared;
  struct Worker;
  struct Round;

  std::shared_ptr<Shared> shared_;
};

}  // namespace iodrift::daemon
