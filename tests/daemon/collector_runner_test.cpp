// CollectorRunner: a collector read that blocks like a hung FUSE /proc file (the fake collector
// waits on a gate until the test opens it) costs one scrape its deadline, later scrapes fail at
// once without starting another read, and the next scrape after the read returns reads again.
// Other collectors are not held up (they move to a fresh worker); the common path reads every
// collector on one worker thread; the runner's destructor does not wait for a stuck read.
// A read left blocked by a runner stays known to the runners that replace it (reloads) through
// their shared InFlightReads: reported stuck at once, never read a second time, no thread added.
#include "daemon/collector_runner.h"

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "collectors/common/families.h"
#include "tests/daemon/process_threads.h"

namespace iodrift::daemon {
namespace {

using testing::ProcessThreads;

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Shared by pointer so a detached worker can still use it after the test body ends.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool blocking = false;
  std::atomic<int> reads{0};
  void Open() {
    std::lock_guard lock(mu);
    blocking = false;
    cv.notify_all();
  }
};

class GatedCollector final : public Collector {
 public:
  explicit GatedCollector(std::shared_ptr<Gate> gate) : gate_(std::move(gate)) {}
  std::string_view Name() const override { return "gated"; }
  Expected<void> Collect(const ProcRoot&,
                         std::vector<prometheus::MetricFamily>& out) const override {
    ++gate_->reads;
    std::unique_lock lock(gate_->mu);
    gate_->cv.wait(lock, [&] { return !gate_->blocking; });
    auto family = MakeFamily("gated_value", "test", prometheus::MetricType::Gauge);
    AddSample(family, 1);
    out.push_back(std::move(family));
    return {};
  }

 private:
  std::shared_ptr<Gate> gate_;
};

// Records the thread it ran on.
class ThreadCollector final : public Collector {
 public:
  explicit ThreadCollector(std::string name) : name_(std::move(name)) {}
  std::string_view Name() const override { return name_; }
  Expected<void> Collect(const ProcRoot&,
                         std::vector<prometheus::MetricFamily>& out) const override {
    {
      std::lock_guard lock(mu_);
      threads_.insert(std::this_thread::get_id());
    }
    auto family = MakeFamily(name_ + "_value", "test", prometheus::MetricType::Gauge);
    AddSample(family, 1);
    out.push_back(std::move(family));
    return {};
  }
  std::set<std::thread::id> Threads() const {
    std::lock_guard lock(mu_);
    return threads_;
  }

 private:
  std::string name_;
  mutable std::mutex mu_;
  mutable std::set<std::thread::id> threads_;
};

using Collectors = std::vector<std::shared_ptr<const Collector>>;

class FailingCollector final : public Collector {
 public:
  std::string_view Name() const override { return "failing"; }
  Expected<void> Collect(const ProcRoot&, std::vector<prometheus::MetricFamily>&) const override {
    return Fail(ENOENT, "open meminfo: no such file");
  }
};

TEST(CollectorRunner, ReadsAndReturnsFamilies) {
  auto gate = std::make_shared<Gate>();
  CollectorRunner runner(Collectors{std::make_shared<GatedCollector>(gate)},
                         ProcRoot("/nonexistent"));
  ASSERT_EQ(runner.Size(), 1u);
  EXPECT_EQ(runner.Name(0), "gated");
  auto out = runner.Scrape(Clock::now() + 30s);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].result) << out[0].result.error().message;
  ASSERT_EQ(out[0].families.size(), 1u);
  EXPECT_EQ(out[0].families[0].name, "gated_value");
}

TEST(CollectorRunner, PassesTheCollectorsErrorOn) {
  CollectorRunner runner(Collectors{std::make_shared<FailingCollector>()},
                         ProcRoot("/nonexistent"));
  auto out = runner.Scrape(Clock::now() + 30s);
  ASSERT_FALSE(out[0].result);
  EXPECT_EQ(out[0].result.error().code, ENOENT);
  EXPECT_TRUE(out[0].families.empty());
}

TEST(CollectorRunner, CommonPathReadsEveryCollectorOnOneWorker) {
  auto a = std::make_shared<ThreadCollector>("a");
  auto b = std::make_shared<ThreadCollector>("b");
  auto c = std::make_shared<ThreadCollector>("c");
  CollectorRunner runner(Collectors{a, b, c}, ProcRoot("/nonexistent"));
  for (int i = 0; i < 5; ++i) {
    auto out = runner.Scrape(Clock::now() + 30s);
    ASSERT_EQ(out.size(), 3u);
    for (const auto& o : out) {
      ASSERT_TRUE(o.result);
      EXPECT_EQ(o.families.size(), 1u);
    }
  }
  EXPECT_EQ(runner.WorkersStarted(), 1u);
  std::set<std::thread::id> all;
  for (const auto& collector : {a, b, c}) {
    auto threads = collector->Threads();
    all.insert(threads.begin(), threads.end());
  }
  EXPECT_EQ(all.size(), 1u) << "the reads ran on " << all.size() << " threads";
  EXPECT_EQ(all.count(std::this_thread::get_id()), 0u) << "a read ran on the scraping thread";
  EXPECT_EQ(runner.ReadsStarted(0), 5u);
}

TEST(CollectorRunner, HungReadTimesOutThenFailsAtOnceWithoutAnotherRead) {
  auto gate = std::make_shared<Gate>();
  gate->blocking = true;
  CollectorRunner runner(Collectors{std::make_shared<GatedCollector>(gate)},
                         ProcRoot("/nonexistent"));

  const auto start = Clock::now();
  auto first = runner.Scrape(start + 200ms);
  const auto took = Clock::now() - start;
  ASSERT_FALSE(first[0].result);
  EXPECT_EQ(first[0].result.error().code, ETIMEDOUT);
  EXPECT_NE(first[0].result.error().message.find("did not finish"), std::string::npos);
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 20s);

  // While the read stays blocked: refused at once (no waiting for the deadline), no new read.
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    auto again = runner.Scrape(t0 + 30s);
    ASSERT_FALSE(again[0].result);
    EXPECT_NE(again[0].result.error().message.find("still blocked"), std::string::npos)
        << again[0].result.error().message;
    EXPECT_LT(Clock::now() - t0, 5s);
    EXPECT_TRUE(again[0].families.empty());
  }
  EXPECT_EQ(runner.ReadsStarted(0), 1u);
  EXPECT_EQ(gate->reads.load(), 1);

  // The read returns: its late result is dropped, the next scrape reads again and succeeds.
  gate->Open();
  const auto until = Clock::now() + 30s;
  std::vector<CollectorRunner::Outcome> later;
  while (Clock::now() < until) {
    later = runner.Scrape(Clock::now() + 30s);
    if (later[0].result) break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(later[0].result) << later[0].result.error().message;
  EXPECT_EQ(later[0].families.size(), 1u);
  EXPECT_EQ(gate->reads.load(), 2);
}

TEST(CollectorRunner, HungReadDoesNotHoldUpTheOthers) {
  auto gate = std::make_shared<Gate>();
  gate->blocking = true;
  auto before = std::make_shared<ThreadCollector>("before");
  auto after = std::make_shared<ThreadCollector>("after");
  CollectorRunner runner(Collectors{before, std::make_shared<GatedCollector>(gate), after},
                         ProcRoot("/nonexistent"), 50ms);
  auto first = runner.Scrape(Clock::now() + 3s);
  ASSERT_TRUE(first[0].result);
  ASSERT_FALSE(first[1].result);
  EXPECT_EQ(first[1].result.error().code, ETIMEDOUT);
  // The read queued behind the hung one moved to a fresh worker and made it in time.
  ASSERT_TRUE(first[2].result) << first[2].result.error().message;
  EXPECT_EQ(first[2].families.size(), 1u);
  EXPECT_EQ(runner.WorkersStarted(), 2u);

  // Later scrapes: the stuck one fails at once, the others are read, no thread piles up.
  for (int i = 0; i < 3; ++i) {
    const auto t0 = Clock::now();
    auto again = runner.Scrape(t0 + 30s);
    EXPECT_LT(Clock::now() - t0, 5s);
    EXPECT_TRUE(again[0].result);
    EXPECT_FALSE(again[1].result);
    EXPECT_TRUE(again[2].result);
  }
  EXPECT_EQ(runner.ReadsStarted(1), 1u);
  EXPECT_EQ(runner.WorkersStarted(), 2u);
  gate->Open();
}

TEST(CollectorRunner, ConcurrentScrapesJoinTheRunningRound) {
  auto gate = std::make_shared<Gate>();
  gate->blocking = true;
  CollectorRunner runner(Collectors{std::make_shared<GatedCollector>(gate)},
                         ProcRoot("/nonexistent"));
  std::vector<CollectorRunner::Outcome> a, b;
  std::thread first([&] { a = runner.Scrape(Clock::now() + 60s); });
  std::thread second([&] { b = runner.Scrape(Clock::now() + 60s); });
  const auto until = Clock::now() + 30s;
  while (runner.ScrapesWaiting() < 2 && Clock::now() < until) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(runner.ScrapesWaiting(), 2);
  gate->Open();
  first.join();
  second.join();
  ASSERT_TRUE(a[0].result);
  ASSERT_TRUE(b[0].result);
  EXPECT_EQ(a[0].families.size(), 1u);
  EXPECT_EQ(b[0].families.size(), 1u);
  EXPECT_EQ(gate->reads.load(), 1);
}

TEST(CollectorRunner, DestructorDoesNotWaitForAStuckRead) {
  auto gate = std::make_shared<Gate>();
  gate->blocking = true;
  const auto start = Clock::now();
  {
    CollectorRunner runner(Collectors{std::make_shared<GatedCollector>(gate)},
                           ProcRoot("/nonexistent"));
    EXPECT_FALSE(runner.Scrape(Clock::now() + 100ms)[0].result);
  }
  EXPECT_LT(Clock::now() - start, 10s);
  gate->Open();  // the detached worker finishes and exits on its own
}

// Waits (bounded) until `in_flight` holds `count` reads.
bool WaitForInFlight(const InFlightReads& in_flight, std::size_t count) {
  const auto until = Clock::now() + 30s;
  while (in_flight.Count() != count && Clock::now() < until) std::this_thread::sleep_for(5ms);
  return in_flight.Count() == count;
}

TEST(CollectorRunner, BlockedReadStaysKnownToTheRunnerThatReplacesIt) {
  auto gate = std::make_shared<Gate>();
  gate->blocking = true;
  auto in_flight = std::make_shared<InFlightReads>();
  const ProcRoot root("/nonexistent");
  {
    CollectorRunner old(
        Collectors{std::make_shared<ThreadCollector>("a"), std::make_shared<GatedCollector>(gate)},
        root, 50ms, in_flight);
    auto first = old.Scrape(Clock::now() + 200ms);
    ASSERT_FALSE(first[1].result);
    EXPECT_TRUE(first[1].stuck);
    EXPECT_FALSE(first[0].stuck);
  }  // a reload: the old runner goes, its read stays blocked
  ASSERT_EQ(in_flight->Count(), 1u);

  // The new runner's collectors are new objects (a reload rebuilds them), same names and root.
  CollectorRunner runner(
      Collectors{std::make_shared<ThreadCollector>("a"), std::make_shared<GatedCollector>(gate)},
      root, 50ms, in_flight);
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    auto out = runner.Scrape(t0 + 30s);
    EXPECT_LT(Clock::now() - t0, 5s) << "waited for the deadline of a read known to be stuck";
    ASSERT_TRUE(out[0].result);
    ASSERT_FALSE(out[1].result);
    EXPECT_TRUE(out[1].stuck);
    EXPECT_EQ(out[1].result.error().code, ETIMEDOUT);
    EXPECT_NE(out[1].result.error().message.find("still blocked"), std::string::npos)
        << out[1].result.error().message;
  }
  EXPECT_EQ(runner.ReadsStarted(1), 0u);
  EXPECT_EQ(gate->reads.load(), 1);

  // The old read returns: its thread leaves the registry, the new runner reads again.
  gate->Open();
  ASSERT_TRUE(WaitForInFlight(*in_flight, 0));
  auto later = runner.Scrape(Clock::now() + 30s);
  ASSERT_TRUE(later[1].result) << later[1].result.error().message;
  EXPECT_FALSE(later[1].stuck);
  EXPECT_EQ(gate->reads.load(), 2);
}

TEST(CollectorRunner, ReconfigurationsAddNoThreadOrReadForAStuckCollector) {
  auto gate = std::make_shared<Gate>();
  gate->blocking = true;
  auto in_flight = std::make_shared<InFlightReads>();
  const ProcRoot root("/nonexistent");
  auto make = [&] {
    return std::make_unique<CollectorRunner>(
        Collectors{std::make_shared<GatedCollector>(gate), std::make_shared<ThreadCollector>("b")},
        root, 50ms, in_flight);
  };
  auto runner = make();
  ASSERT_FALSE(runner->Scrape(Clock::now() + 200ms)[0].result);
  runner = make();  // the first reload and scrape
  ASSERT_TRUE(runner->Scrape(Clock::now() + 30s)[1].result);
  const int threads = ProcessThreads();
  ASSERT_GT(threads, 0);
  for (int i = 0; i < 100; ++i) {
    runner = make();
    const auto t0 = Clock::now();
    auto out = runner->Scrape(t0 + 30s);
    EXPECT_LT(Clock::now() - t0, 5s);
    EXPECT_TRUE(out[0].stuck);
    EXPECT_TRUE(out[1].result);
    EXPECT_EQ(runner->ReadsStarted(0), 0u);
    EXPECT_EQ(runner->WorkersStarted(), 1u);  // the one for `b`; none for the stuck file
  }
  EXPECT_EQ(gate->reads.load(), 1) << "a stuck file was read again after a reconfiguration";
  EXPECT_EQ(in_flight->Count(), 1u);
  // (At most: a thread an earlier test freed may still have been exiting at the first count.)
  EXPECT_LE(ProcessThreads(), threads);
  runner.reset();
  gate->Open();
  EXPECT_TRUE(WaitForInFlight(*in_flight, 0)) << "the stuck read's thread did not finish";
}

TEST(CollectorRunner, AStuckReadUnderAnotherRootDoesNotBlockTheSameCollector) {
  auto stuck_gate = std::make_shared<Gate>();
  stuck_gate->blocking = true;
  auto in_flight = std::make_shared<InFlightReads>();
  {
    CollectorRunner old(Collectors{std::make_shared<GatedCollector>(stuck_gate)},
                        ProcRoot("/old-root"), 50ms, in_flight);
    ASSERT_FALSE(old.Scrape(Clock::now() + 200ms)[0].result);
  }
  auto gate = std::make_shared<Gate>();
  CollectorRunner runner(Collectors{std::make_shared<GatedCollector>(gate)}, ProcRoot("/new-root"),
                         50ms, in_flight);
  auto out = runner.Scrape(Clock::now() + 30s);
  ASSERT_TRUE(out[0].result) << out[0].result.error().message;
  EXPECT_FALSE(out[0].stuck);
  EXPECT_EQ(gate->reads.load(), 1);
  stuck_gate->Open();
  EXPECT_TRUE(WaitForInFlight(*in_flight, 0));
}

TEST(InFlightReads, OldestBeforeSeesOnlyReadsOfTheKeyStartedByTheCutoff) {
  InFlightReads reads;
  const auto t = Clock::now();
  const auto a = reads.Begin("root\na", t);
  const auto b = reads.Begin("root\na", t + 1s);
  reads.Begin("root\nb", t - 5s);
  EXPECT_EQ(reads.OldestBefore("root\na", t - 1s), std::nullopt);
  EXPECT_EQ(reads.OldestBefore("root\na", t), t);
  EXPECT_EQ(reads.OldestBefore("root\na", t + 2s), t);
  reads.End("root\na", a);
  EXPECT_EQ(reads.OldestBefore("root\na", t + 2s), t + 1s);
  reads.End("root\na", b);
  EXPECT_EQ(reads.OldestBefore("root\na", t + 2s), std::nullopt);
  EXPECT_EQ(reads.Count(), 1u);
}

}  // namespace
}  // namespace iodrift::daemon
