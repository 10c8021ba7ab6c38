// CollectorRunner: a collector read that blocks like a hung FUSE /proc file (the fake collector
// waits on a gate until the test opens it) costs one scrape its deadline, later scrapes fail at
// once without starting another read, and the next scrape after the read returns reads again.
// Other collectors are not held up; the runner's destructor does not wait for a stuck read.
#include "daemon/collector_runner.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "collectors/common/families.h"

namespace iodrift::daemon {
namespace {

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

class FailingCollector final : public Collector {
 public:
  std::string_view Name() const override { return "failing"; }
  Expected<void> Collect(const ProcRoot&, std::vector<prometheus::MetricFamily>&) const override {
    return Fail(ENOENT, "open meminfo: no such file");
  }
};

TEST(CollectorRunner, ReadsAndReturnsFamilies) {
  auto gate = std::make_shared<Gate>();
  CollectorRunner runner(std::make_shared<GatedCollector>(gate), ProcRoot("/nonexistent"));
  EXPECT_EQ(runner.Name(), "gated");
  std::vector<prometheus::MetricFamily> out;
  auto result = runner.Wait(runner.Start(), Clock::now() + 30s, out);
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "gated_value");
}

TEST(CollectorRunner, PassesTheCollectorsErrorOn) {
  CollectorRunner runner(std::make_shared<FailingCollector>(), ProcRoot("/nonexistent"));
  std::vector<prometheus::MetricFamily> out;
  auto result = runner.Wait(runner.Start(), Clock::now() + 30s, out);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ENOENT);
  EXPECT_TRUE(out.empty());
}

TEST(CollectorRunner, HungReadTimesOutThenFailsAtOnceWithoutAnotherRead) {
  auto gate = std::make_shared<Gate>();
  gate->blocking = true;
  CollectorRunner runner(std::make_shared<GatedCollector>(gate), ProcRoot("/nonexistent"));
  std::vector<prometheus::MetricFamily> out;

  const auto start = Clock::now();
  auto first = runner.Wait(runner.Start(), start + 200ms, out);
  const auto took = Clock::now() - start;
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().code, ETIMEDOUT);
  EXPECT_NE(first.error().message.find("did not finish"), std::string::npos);
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 20s);

  // While the read stays blocked: refused at once (no waiting for the deadline), no new read.
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    auto again = runner.Wait(runner.Start(), t0 + 30s, out);
    ASSERT_FALSE(again);
    EXPECT_NE(again.error().message.find("still blocked"), std::string::npos)
        << again.error().message;
    EXPECT_LT(Clock::now() - t0, 5s);
  }
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(runner.ReadsStarted(), 1u);
  EXPECT_EQ(gate->reads.load(), 1);

  // The read returns: its late result is dropped, the next scrape reads again and succeeds.
  gate->Open();
  const auto until = Clock::now() + 30s;
  Expected<void> later = Fail(0, "not tried");
  while (Clock::now() < until) {
    out.clear();
    later = runner.Wait(runner.Start(), Clock::now() + 30s, out);
    if (later) break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(later) << later.error().message;
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(gate->reads.load(), 2);
}

TEST(CollectorRunner, ConcurrentScrapesJoinTheRunningRead) {
  auto gate = std::make_shared<Gate>();
  gate->blocking = true;
  CollectorRunner runner(std::make_shared<GatedCollector>(gate), ProcRoot("/nonexistent"));
  auto first = runner.Start();
  auto second = runner.Start();
  EXPECT_EQ(first.generation, second.generation);
  gate->Open();
  std::vector<prometheus::MetricFamily> a, b;
  ASSERT_TRUE(runner.Wait(first, Clock::now() + 30s, a));
  ASSERT_TRUE(runner.Wait(second, Clock::now() + 30s, b));
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(b.size(), 1u);
  EXPECT_EQ(gate->reads.load(), 1);
}

TEST(CollectorRunner, DestructorDoesNotWaitForAStuckRead) {
  auto gate = std::make_shared<Gate>();
  gate->blocking = true;
  const auto start = Clock::now();
  {
    CollectorRunner runner(std::make_shared<GatedCollector>(gate), ProcRoot("/nonexistent"));
    std::vector<prometheus::MetricFamily> out;
    EXPECT_FALSE(runner.Wait(runner.Start(), Clock::now() + 100ms, out));
  }
  EXPECT_LT(Clock::now() - start, 10s);
  gate->Open();  // the detached worker finishes and exits on its own
}

}  // namespace
}  // namespace iodrift::daemon
