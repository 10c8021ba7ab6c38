#include "daemon/collector_runner.h"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace iodrift::daemon {

namespace {

std::string Seconds(CollectorRunner::Clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count());
}

std::string Milliseconds(CollectorRunner::Clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

}  // namespace

std::uint64_t InFlightReads::Begin(const std::string& key, Clock::time_point started) {
  std::lock_guard lock(mu_);
  const std::uint64_t ticket = ++next_ticket_;
  reads_.emplace(key, std::make_pair(ticket, started));
  return ticket;
}

void InFlightReads::End(const std::string& key, std::uint64_t ticket) {
  std::lock_guard lock(mu_);
  auto [first, last] = reads_.equal_range(key);
  for (auto it = first; it != last; ++it) {
    if (it->second.first == ticket) {
      reads_.erase(it);
      return;
    }
  }
}

std::optional<InFlightReads::Clock::time_point> InFlightReads::OldestBefore(
    const std::string& key, Clock::time_point cutoff) const {
  std::lock_guard lock(mu_);
  std::optional<Clock::time_point> oldest;
  auto [first, last] = reads_.equal_range(key);
  for (auto it = first; it != last; ++it) {
    const auto started = it->second.second;
    if (started <= cutoff && (!oldest || started < *oldest)) oldest = started;
  }
  return oldest;
}

std::size_t InFlightReads::Count() const {
  std::lock_guard lock(mu_);
  return reads_.size();
}

// One scrape's reads: filled in by the workers, taken by the scrapes that joined it.
struct CollectorRunner::Round {
  std::vector<Outcome> outcomes;
  std::vector<char> done;
  std::size_t remaining = 0;  // reads not done (and not given up on) yet
  int waiters = 0;            // scrapes that will take the outcomes
};

// A worker thread: reads its queue one after the other. Abandoned (left to finish the read in
// hand alone, then exit) when that read is too slow.
struct CollectorRunner::Worker {
  std::thread thread;
  std::shared_ptr<Round> round;
  std::deque<std::size_t> queue;  // reads of `round` still to start
  std::size_t current = 0;        // the read in hand, while `reading`
  bool reading = false;
  bool abandoned = false;
};

// Everything the workers touch: owned jointly by the runner and the threads, so a worker
// detached while stuck in the kernel never refers to a destroyed runner.
struct CollectorRunner::Shared {
  struct Slot {
    std::shared_ptr<const Collector> collector;
    std::string key;       // in `in_flight`: proc root and collector name
    bool reading = false;  // a worker is inside its Collect()
    bool stuck = false;    // a scrape gave up on that read
    Clock::time_point started{};
    std::uint64_t reads = 0;
  };

  Shared(std::vector<std::shared_ptr<const Collector>> collectors, ProcRoot r, Clock::duration h,
         std::shared_ptr<InFlightReads> reads)
      : root(std::move(r)),
        hedge(h),
        in_flight(reads ? std::move(reads) : std::make_shared<InFlightReads>()) {
    slots.reserve(collectors.size());
    for (auto& collector : collectors) {
      std::string key = root.root().string() + '\n' + std::string(collector->Name());
      slots.push_back(Slot{std::move(collector), std::move(key)});
    }
  }

  const ProcRoot root;
  const Clock::duration hedge;
  const std::shared_ptr<InFlightReads> in_flight;  // shared with the runners of other reloads

  std::mutex mu;
  std::condition_variable done_cv;  // a round finished (scrapes wait on it)
  std::condition_variable work_cv;  // the current worker has reads to do, or must stop
  bool stopping = false;
  std::vector<Slot> slots;
  std::shared_ptr<Round> round;    // the round in flight, or null
  std::shared_ptr<Worker> worker;  // the worker taking new rounds, or null (made on demand)
  std::uint64_t workers_started = 0;

  // Under `mu`.
  Worker& NewWorker(std::shared_ptr<Shared> self) {
    auto fresh = std::make_shared<Worker>();
    fresh->thread = std::thread([self = std::move(self), fresh] { Work(*self, *fresh); });
    ++workers_started;
    worker = fresh;
    return *fresh;
  }

  // Under `mu`: the current worker is in a read; leave it to that read alone.
  void Abandon() {
    worker->abandoned = true;
    worker->thread.detach();
    worker.reset();
  }

  static void Work(Shared& shared, Worker& self) {
    std::unique_lock lock(shared.mu);
    for (;;) {
      shared.work_cv.wait(lock,
                          [&] { return shared.stopping || self.abandoned || !self.queue.empty(); });
      if (shared.stopping || self.abandoned) return;
      const std::shared_ptr<Round> round = self.round;
      const std::size_t i = self.queue.front();
      self.queue.pop_front();
      Slot& slot = shared.slots[i];
      slot.reading = true;
      slot.started = Clock::now();
      ++slot.reads;
      self.reading = true;
      self.current = i;
      const Clock::time_point started = slot.started;
      const Collector& collector = *slot.collector;
      const std::string& key = slot.key;
      const std::uint64_t ticket = shared.in_flight->Begin(key, started);
      lock.unlock();

      Outcome outcome;
      try {
        outcome.result = collector.Collect(shared.root, outcome.families);
      } catch (const std::exception& e) {
        outcome.result = Fail(0, std::string("collector threw: ") + e.what());
      }
      outcome.took = Clock::now() - started;
      if (!outcome.result) outcome.families.clear();
      shared.in_flight->End(key, ticket);

      lock.lock();
      self.reading = false;
      slot.reading = false;
      slot.stuck = false;
      // A read given up on at the deadline: its late result is dropped.
      if (!round->done[i]) {
        round->outcomes[i] = std::move(outcome);
        round->done[i] = 1;
        if (--round->remaining == 0) {
          if (shared.round == round) shared.round.reset();
          shared.done_cv.notify_all();
        }
      }
      if (self.abandoned) return;
    }
  }

  // Under `mu`, at the deadline: gives up on every read of `r` not done yet.
  void GiveUp(Round& r) {
    const auto now = Clock::now();
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (r.done[i]) continue;
      Slot& slot = slots[i];
      if (slot.reading) {
        slot.stuck = true;
        r.outcomes[i].stuck = true;
        r.outcomes[i].took = now - slot.started;
        r.outcomes[i].result =
            Fail(ETIMEDOUT, "read did not finish within " + Milliseconds(now - slot.started) +
                                " ms (blocked in the kernel?); not started again until it returns");
      } else {
        r.outcomes[i].result =
            Fail(ETIMEDOUT, "not started before the scrape's deadline (queued behind a slow read)");
      }
      r.done[i] = 1;
    }
    r.remaining = 0;
    // The current worker (if it worked for this round) is either in a stuck read or about to
    // pick up a read that is already given up on.
    if (worker && worker->round.get() == &r) {
      worker->queue.clear();
      if (worker->reading) Abandon();
    }
    round.reset();
    done_cv.notify_all();
  }
};

CollectorRunner::CollectorRunner(std::vector<std::shared_ptr<const Collector>> collectors,
                                 ProcRoot root, Clock::duration hedge,
                                 std::shared_ptr<InFlightReads> in_flight)
    : shared_(std::make_shared<Shared>(std::move(collectors), std::move(root), hedge,
                                       std::move(in_flight))) {}

CollectorRunner::~CollectorRunner() {
  std::unique_lock lock(shared_->mu);
  shared_->stopping = true;
  std::thread thread;
  bool in_kernel = false;
  if (shared_->worker) {
    in_kernel = shared_->worker->reading;
    thread = std::move(shared_->worker->thread);
  }
  lock.unlock();
  shared_->work_cv.notify_all();
  // A running read may be stuck for good: never wait for it. The thread keeps `shared_` alive.
  if (thread.joinable()) {
    if (in_kernel) {
      thread.detach();
    } else {
      thread.join();
    }
  }
}

std::size_t CollectorRunner::Size() const { return shared_->slots.size(); }

std::string_view CollectorRunner::Name(std::size_t i) const {
  return shared_->slots[i].collector->Name();
}

std::vector<CollectorRunner::Outcome> CollectorRunner::Scrape(Clock::time_point deadline) {
  Shared& s = *shared_;
  std::unique_lock lock(s.mu);
  std::shared_ptr<Round> round = s.round;
  if (!round) {
    round = std::make_shared<Round>();
    round->outcomes.resize(s.slots.size());
    round->done.assign(s.slots.size(), 0);
    std::deque<std::size_t> queue;
    const auto now = Clock::now();
    for (std::size_t i = 0; i < s.slots.size(); ++i) {
      const auto& slot = s.slots[i];
      // Stuck here, or a read of the same file left blocked by the runner a reload replaced.
      const std::optional<Clock::time_point> blocked =
          slot.stuck ? std::optional(slot.started)
                     : s.in_flight->OldestBefore(slot.key, now - s.hedge);
      if (blocked) {
        round->outcomes[i].stuck = true;
        round->outcomes[i].result =
            Fail(ETIMEDOUT, "previous read still blocked for " + Seconds(now - *blocked) +
                                " s (not started again until it returns)");
        round->done[i] = 1;
      } else {
        queue.push_back(i);
      }
    }
    round->remaining = queue.size();
    if (!queue.empty()) {
      Worker& worker = s.worker ? *s.worker : s.NewWorker(shared_);
      worker.round = round;
      worker.queue = std::move(queue);
      s.round = round;
      s.work_cv.notify_all();
    }
  }
  ++round->waiters;
  while (round->remaining > 0) {
    const auto now = Clock::now();
    if (now >= deadline) {
      s.GiveUp(*round);
      break;
    }
    // A slow read with reads queued behind it: move those to a fresh worker.
    auto wake = deadline;
    if (s.worker && s.worker->round == round && !s.worker->queue.empty()) {
      // Not reading yet (about to start): look again a hedge from now.
      const auto hedge_at =
          s.worker->reading ? s.slots[s.worker->current].started + s.hedge : now + s.hedge;
      if (s.worker->reading && now >= hedge_at) {
        std::deque<std::size_t> rest = std::move(s.worker->queue);
        s.worker->queue.clear();
        s.Abandon();
        Worker& fresh = s.NewWorker(shared_);
        fresh.round = round;
        fresh.queue = std::move(rest);
        continue;
      }
      wake = std::min(wake, hedge_at);
    }
    s.done_cv.wait_until(lock, wake);
  }
  std::vector<Outcome> out;
  if (--round->waiters == 0) {
    out = std::move(round->outcomes);
  } else {
    out = round->outcomes;  // another scrape joined this round: it takes the originals
  }
  return out;
}

std::uint64_t CollectorRunner::ReadsStarted(std::size_t i) const {
  std::lock_guard lock(shared_->mu);
  return shared_->slots[i].reads;
}

std::uint64_t CollectorRunner::WorkersStarted() const {
  std::lock_guard lock(shared_->mu);
  return shared_->workers_started;
}

int CollectorRunner::ScrapesWaiting() const {
  std::lock_guard lock(shared_->mu);
  return shared_->round ? shared_->round->waiters : 0;
}

}  // namespace iodrift::daemon
