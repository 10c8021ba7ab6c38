#include "daemon/collector_runner.h"

#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace iodrift::daemon {

// Everything the worker thread touches: owned jointly by the runner and the thread, so a worker
// detached while stuck in the kernel never refers to a destroyed runner.
struct CollectorRunner::Shared {
  Shared(std::shared_ptr<const Collector> c, ProcRoot r)
      : collector(std::move(c)), root(std::move(r)) {}

  const std::shared_ptr<const Collector> collector;
  const ProcRoot root;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::uint64_t requested = 0;  // generation of the newest requested read
  std::uint64_t done = 0;       // generation of the newest finished read
  bool running = false;
  bool stuck = false;  // a scrape gave up on the running read
  Clock::time_point started{};
  // The newest finished read's outcome (generation `done`).
  Expected<void> result{};
  std::shared_ptr<const std::vector<prometheus::MetricFamily>> families;
  std::thread thread;
};

CollectorRunner::CollectorRunner(std::shared_ptr<const Collector> collector, ProcRoot root)
    : shared_(std::make_shared<Shared>(std::move(collector), std::move(root))) {
  shared_->thread = std::thread([shared = shared_] { Work(shared); });
}

CollectorRunner::~CollectorRunner() {
  std::unique_lock lock(shared_->mu);
  shared_->stopping = true;
  const bool in_kernel = shared_->running;
  std::thread thread = std::move(shared_->thread);
  lock.unlock();
  shared_->cv.notify_all();
  // A running read may be stuck for good: never wait for it. The thread keeps `shared_` alive.
  if (in_kernel) {
    thread.detach();
  } else {
    thread.join();
  }
}

std::string_view CollectorRunner::Name() const { return shared_->collector->Name(); }

void CollectorRunner::Work(const std::shared_ptr<Shared>& shared) {
  std::unique_lock lock(shared->mu);
  for (;;) {
    shared->cv.wait(lock, [&] { return shared->stopping || shared->requested > shared->done; });
    if (shared->stopping) return;
    const std::uint64_t generation = shared->requested;
    shared->running = true;
    shared->started = Clock::now();
    lock.unlock();
    auto families = std::make_shared<std::vector<prometheus::MetricFamily>>();
    Expected<void> result;
    try {
      result = shared->collector->Collect(shared->root, *families);
    } catch (const std::exception& e) {
      result = Fail(0, std::string("collector threw: ") + e.what());
    }
    if (!result) families->clear();
    lock.lock();
    shared->result = std::move(result);
    shared->families = std::move(families);
    shared->done = generation;
    shared->running = false;
    shared->stuck = false;
    shared->cv.notify_all();
  }
}

CollectorRunner::Ticket CollectorRunner::Start() {
  std::lock_guard lock(shared_->mu);
  if (shared_->stuck) {
    const auto blocked =
        std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - shared_->started);
    return {0,
            Error{ETIMEDOUT, "previous read still blocked for " + std::to_string(blocked.count()) +
                                 " s (not started again until it returns)"}};
  }
  if (!shared_->running && shared_->requested == shared_->done) {
    ++shared_->requested;
    shared_->cv.notify_all();
  }
  return {shared_->requested, std::nullopt};
}

Expected<void> CollectorRunner::Wait(const Ticket& ticket, Clock::time_point deadline,
                                     std::vector<prometheus::MetricFamily>& out) {
  if (ticket.refused) return tl::unexpected(*ticket.refused);
  std::unique_lock lock(shared_->mu);
  if (!shared_->cv.wait_until(lock, deadline, [&] { return shared_->done >= ticket.generation; })) {
    shared_->stuck = true;
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - shared_->started);
    return Fail(ETIMEDOUT, "read did not finish within " + std::to_string(waited.count()) +
                               " ms (blocked in the kernel?); not started again until it returns");
  }
  if (!shared_->result) return tl::unexpected(shared_->result.error());
  auto families = shared_->families;
  lock.unlock();
  out.insert(out.end(), families->begin(), families->end());
  return {};
}

std::uint64_t CollectorRunner::ReadsStarted() const {
  std::lock_guard lock(shared_->mu);
  return shared_->requested;
}

}  // namespace iodrift::daemon
