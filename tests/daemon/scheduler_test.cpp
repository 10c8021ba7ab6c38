// The scheduler: jitter bounds, one probe at a time per device, the global limit, hung probes
// (a test hook blocks like a dead FUSE read: the call never returns until the test says so),
// on-demand runs that join a run in flight, reloads and prompt shutdown.
#include "daemon/scheduler.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/probes/probe_test_util.h"

namespace iodrift::daemon {
namespace {

using probes::Outcome;
using probes::ProbeResult;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A gate a fake probe blocks on, like a read that never returns. Shared by pointer so a thread
// the scheduler detached can still use it after the test body ends.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> inside{0};
  std::atomic<int> returned{0};
  void Wait() {
    ++inside;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return open; });
    ++returned;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

// Records calls, start times and concurrency per device of fake probes.
struct Recorder {
  std::mutex mu;
  std::map<std::string, int> calls;
  std::map<std::string, std::vector<Clock::time_point>> starts;
  std::map<std::string, int> active_per_device, max_per_device;
  int active = 0, max_active = 0;
};

// The probe states fed as the daemon feeds them: one ordinary listener.
void Feed(Scheduler& s, analysis::ProbeStates& states) {
  s.AddListener([&states](const ProbeResult& r) { states.Record(r); });
}

probes::ProbeSpec Spec(const std::string& name, const std::string& device,
                       std::chrono::milliseconds interval, std::chrono::milliseconds timeout = 5s) {
  probes::ProbeSpec s;
  s.name = name;
  s.kind = probes::ProbeKind::kCached;
  s.target = "/fake/" + device;  // the device key function below maps it back
  s.interval = interval;
  s.timeout = timeout;
  return s;
}

std::string KeyOf(const probes::ProbeSpec& s) { return s.target.substr(6); }

ProbeResult OkResult(const probes::ProbeSpec& spec) {
  ProbeResult r;
  r.name = spec.name;
  r.kind = spec.kind;
  r.target = spec.target;
  r.outcome = Outcome::kOk;
  r.bytes = 100;
  r.throughput_bytes_per_second = 1e6;
  return r;
}

// A fake probe that records itself, sleeps `work`, and blocks on `gate` for probes named in
// `hang`.
ProbeFn FakeProbe(std::shared_ptr<Recorder> rec, std::chrono::milliseconds work,
                  std::shared_ptr<Gate> gate = nullptr, std::set<std::string> hang = {}) {
  return [=](const probes::ProbeSpec& spec, const probes::ProbeEnv&) {
    const std::string dev = KeyOf(spec);
    {
      std::lock_guard<std::mutex> lock(rec->mu);
      ++rec->calls[spec.name];
      rec->starts[spec.name].push_back(Clock::now());
      rec->max_per_device[dev] = std::max(rec->max_per_device[dev], ++rec->active_per_device[dev]);
      rec->max_active = std::max(rec->max_active, ++rec->active);
    }
    if (gate && hang.count(spec.name)) gate->Wait();
    std::this_thread::sleep_for(work);
    {
      std::lock_guard<std::mutex> lock(rec->mu);
      --rec->active_per_device[dev];
      --rec->active;
    }
    return OkResult(spec);
  };
}

SchedulerOptions FastOptions(ProbeFn fn) {
  SchedulerOptions o;
  o.first_run_delay = 0ms;
  o.stagger = 0ms;
  o.run_probe = std::move(fn);
  o.device_key = KeyOf;
  o.seed = 7;
  o.shutdown_grace = 300ms;
  return o;
}

TEST(JitteredInterval, StaysWithinTenPercentAndUsesTheWholeRange) {
  std::mt19937_64 rng(1);
  std::int64_t lo = 1 << 30, hi = 0, sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const auto d = JitteredInterval(1000ms, 0.10, rng).count();
    lo = std::min<std::int64_t>(lo, d);
    hi = std::max<std::int64_t>(hi, d);
    sum += d;
  }
  EXPECT_GE(lo, 900);
  EXPECT_LE(hi, 1100);
  EXPECT_LT(lo, 910);
  EXPECT_GT(hi, 1090);
  EXPECT_NEAR(static_cast<double>(sum) / n, 1000.0, 5.0);
  EXPECT_EQ(JitteredInterval(0ms, 0.1, rng).count(), 1);  // never a zero wait
}

TEST(Scheduler, RunsEachProbeAboutEveryIntervalWithinTheJitter) {
  auto rec = std::make_shared<Recorder>();
  analysis::ProbeStates store;
  Scheduler s({}, FastOptions(FakeProbe(rec, 0ms)));
  Feed(s, store);
  s.Apply(store.Define({Spec("p", "a", 100ms)}));
  s.Start();
  std::this_thread::sleep_for(1050ms);
  s.Stop();
  std::lock_guard<std::mutex> lock(rec->mu);
  const auto& starts = rec->starts["p"];
  // First run at once, then every 90–110 ms. Start times are taken on the worker thread, so a
  // late wake-up on a loaded machine shifts single gaps; the median gap is the robust check,
  // the exact bounds are JitteredInterval's (tested above).
  ASSERT_GE(starts.size(), 7u);
  EXPECT_LE(starts.size(), 12u);
  std::vector<double> gaps;
  for (std::size_t i = 1; i < starts.size(); ++i) {
    gaps.push_back(std::chrono::duration<double, std::milli>(starts[i] - starts[i - 1]).count());
    EXPECT_GE(gaps.back(), 60.0) << "run " << i << " came far too early";
  }
  std::sort(gaps.begin(), gaps.end());
  const double median = gaps[gaps.size() / 2];
  EXPECT_GE(median, 89.0);
  EXPECT_LE(median, 115.0);
  auto record = store.Get("p");
  ASSERT_TRUE(record);
  EXPECT_EQ(record->runs.at(Outcome::kOk), starts.size());
  EXPECT_EQ(record->read_bytes_total, 100 * starts.size());
}

TEST(Scheduler, NeverOverlapsProbesOnTheSameDeviceButOverlapsDevices) {
  auto rec = std::make_shared<Recorder>();
  analysis::ProbeStates store;
  auto options = FastOptions(FakeProbe(rec, 40ms));
  options.max_concurrent = 4;
  Scheduler s({}, options);
  Feed(s, store);
  s.Apply(store.Define({Spec("a1", "a", 50ms), Spec("a2", "a", 50ms), Spec("a3", "a", 50ms),
                        Spec("b1", "b", 50ms), Spec("b2", "b", 50ms)}));
  s.Start();
  std::this_thread::sleep_for(800ms);
  s.Stop();
  std::lock_guard<std::mutex> lock(rec->mu);
  EXPECT_EQ(rec->max_per_device["a"], 1);
  EXPECT_EQ(rec->max_per_device["b"], 1);
  EXPECT_EQ(rec->max_active, 2);  // a and b in parallel
  for (const char* name : {"a1", "a2", "a3", "b1", "b2"}) EXPECT_GE(rec->calls[name], 2) << name;
}

TEST(Scheduler, HonoursTheGlobalConcurrencyLimit) {
  auto rec = std::make_shared<Recorder>();
  analysis::ProbeStates store;
  Scheduler s({}, FastOptions(FakeProbe(rec, 20ms)));  // max_concurrent 1 by default
  Feed(s, store);
  s.Apply(store.Define({Spec("a", "a", 30ms), Spec("b", "b", 30ms), Spec("c", "c", 30ms)}));
  s.Start();
  std::this_thread::sleep_for(400ms);
  s.Stop();
  std::lock_guard<std::mutex> lock(rec->mu);
  EXPECT_EQ(rec->max_active, 1);
  for (const char* name : {"a", "b", "c"}) EXPECT_GE(rec->calls[name], 2) << name;
}

TEST(Scheduler, TimesOutAHungProbeAndNeverPilesMoreOntoItsDevice) {
  auto rec = std::make_shared<Recorder>();
  auto gate = std::make_shared<Gate>();
  analysis::ProbeStates store;
  std::mutex mu;
  std::optional<Clock::time_point> timeout_seen;
  auto options = FastOptions(FakeProbe(rec, 0ms, gate, {"hang"}));
  Scheduler s({}, options);  // global limit 1: the stuck probe must not hold it
  Feed(s, store);
  s.AddListener([&](const ProbeResult& r) {
    std::lock_guard<std::mutex> lock(mu);
    if (r.name == "hang" && r.outcome == Outcome::kTimeout && !timeout_seen)
      timeout_seen = Clock::now();
  });
  s.Apply(store.Define({Spec("hang", "fuse", 100ms, 200ms), Spec("same-dev", "fuse", 100ms),
                        Spec("other", "disk", 100ms)}));
  const auto t0 = Clock::now();
  s.Start();
  std::this_thread::sleep_for(1200ms);

  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_TRUE(timeout_seen) << "no timeout recorded";
    // The first run starts at once; its timeout is recorded at 200 ms (+ slack), not later.
    EXPECT_LE(std::chrono::duration_cast<std::chrono::milliseconds>(*timeout_seen - t0).count(),
              200 + 300);
  }
  auto hang = store.Get("hang");
  ASSERT_TRUE(hang);
  EXPECT_EQ(hang->runs.at(Outcome::kTimeout), 1u);
  EXPECT_GE(hang->runs.at(Outcome::kSkipped), 3u);  // due again every ~100 ms, not run
  EXPECT_NE(hang->last.error.find("blocked in the kernel"), std::string::npos) << hang->last.error;
  auto same = store.Get("same-dev");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->runs.at(Outcome::kOk), 0u);
  EXPECT_GE(same->runs.at(Outcome::kSkipped), 3u);
  auto other = store.Get("other");
  ASSERT_TRUE(other);
  EXPECT_GE(other->runs.at(Outcome::kOk), 5u);  // the other device kept its schedule (~11)
  {
    std::lock_guard<std::mutex> lock(rec->mu);
    EXPECT_EQ(rec->calls["hang"], 1);  // one thread stuck, no pile-up
    EXPECT_EQ(rec->calls["same-dev"], 0);
  }
  EXPECT_EQ(gate->inside.load(), 1);

  // Shutdown does not wait for the call stuck in the "kernel".
  const auto stop_start = Clock::now();
  s.Stop();
  EXPECT_LT(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - stop_start).count(),
      1000);
  EXPECT_EQ(gate->returned.load(), 0);
  gate->Open();  // let the detached worker finish (it owns only shared state)
  for (int i = 0; i < 100 && gate->returned.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(gate->returned.load(), 1);
}

TEST(Scheduler, UsesADeviceAgainOnceItsStuckCallReturns) {
  auto rec = std::make_shared<Recorder>();
  auto gate = std::make_shared<Gate>();
  analysis::ProbeStates store;
  Scheduler s({}, FastOptions(FakeProbe(rec, 0ms, gate, {"hang"})));
  Feed(s, store);
  s.Apply(store.Define({Spec("hang", "fuse", 100ms, 150ms)}));
  s.Start();
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(store.Get("hang")->runs.at(Outcome::kTimeout), 1u);
  gate->Open();  // the call returns (late result dropped); later runs pass the gate
  std::this_thread::sleep_for(400ms);
  s.Stop();
  auto hang = store.Get("hang");
  EXPECT_EQ(hang->runs.at(Outcome::kTimeout), 1u);
  EXPECT_GE(hang->runs.at(Outcome::kOk), 2u);
  std::lock_guard<std::mutex> lock(rec->mu);
  EXPECT_GE(rec->calls["hang"], 3);
}

TEST(Scheduler, RunNowJoinsTheRunInFlight) {
  auto rec = std::make_shared<Recorder>();
  auto gate = std::make_shared<Gate>();
  analysis::ProbeStates store;
  auto options = FastOptions(FakeProbe(rec, 0ms, gate, {"slow"}));
  options.periodic = false;
  Scheduler s({}, options);
  Feed(s, store);
  s.Apply(store.Define({Spec("slow", "a", 1h)}));
  auto not_started = s.RunNow("slow");
  ASSERT_FALSE(not_started);
  EXPECT_EQ(not_started.error().code, ESHUTDOWN);
  s.Start();
  auto unknown = s.RunNow("nope");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ENOENT);

  auto f1 = s.RunNow("slow");
  ASSERT_TRUE(f1);
  for (int i = 0; i < 200 && gate->inside.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(gate->inside.load(), 1);
  auto f2 = s.RunNow("slow");  // already running: the same run
  ASSERT_TRUE(f2);
  EXPECT_EQ(f2->wait_for(50ms), std::future_status::timeout);
  gate->Open();
  ASSERT_EQ(f1->wait_for(2s), std::future_status::ready);
  ASSERT_EQ(f2->wait_for(2s), std::future_status::ready);
  EXPECT_EQ(f1->get().outcome, Outcome::kOk);
  EXPECT_EQ(f2->get().name, "slow");
  {
    std::lock_guard<std::mutex> lock(rec->mu);
    EXPECT_EQ(rec->calls["slow"], 1);
  }
  EXPECT_EQ(store.Get("slow")->runs.at(Outcome::kOk), 1u);
  // Not periodic: nothing else runs by itself.
  std::this_thread::sleep_for(100ms);
  s.Stop();
  std::lock_guard<std::mutex> lock(rec->mu);
  EXPECT_EQ(rec->calls["slow"], 1);
}

// The recovery experiment's runs (issue: experiment runs are not ordinary runs): a run of its
// own after the prelude, never to the listeners (baseline, history), bound to a generation, and
// resolved `skipped` when a reload changes the probe before it starts.
TEST(Scheduler, ExperimentRunsReachNoListenerAndAreBoundToTheGeneration) {
  auto rec = std::make_shared<Recorder>();
  auto gate = std::make_shared<Gate>();
  analysis::ProbeStates store;
  auto options = FastOptions(FakeProbe(rec, 0ms, gate, {"slow"}));
  options.periodic = false;
  Scheduler s({}, options);
  Feed(s, store);
  std::atomic<int> heard{0};
  s.AddListener([&heard](const ProbeResult&) { ++heard; });
  auto defined = store.Define({Spec("p", "a", 1h), Spec("slow", "a", 1h)});
  s.Apply(defined);
  s.Start();
  const std::uint64_t gen = store.Get("p")->generation;

  std::atomic<bool> prelude_ran{false};
  auto run = s.RunExperiment("p", gen, [&] {
    std::lock_guard<std::mutex> lock(rec->mu);
    prelude_ran = rec->calls["p"] == 0;  // before the run itself
    return std::string();
  });
  ASSERT_TRUE(run);
  ASSERT_EQ(run->wait_for(2s), std::future_status::ready);
  EXPECT_TRUE(prelude_ran);
  EXPECT_EQ(run->get().outcome, Outcome::kOk);
  EXPECT_EQ(run->get().generation, gen);
  // A prelude that refuses: the probe does not run.
  auto refused = s.RunExperiment("p", gen, [] { return std::string("too much pressure"); });
  ASSERT_TRUE(refused);
  ASSERT_EQ(refused->wait_for(2s), std::future_status::ready);
  EXPECT_EQ(refused->get().outcome, Outcome::kSkipped);
  EXPECT_EQ(refused->get().error, "too much pressure");
  {
    std::lock_guard<std::mutex> lock(rec->mu);
    EXPECT_EQ(rec->calls["p"], 1);
  }
  EXPECT_EQ(heard.load(), 0);
  EXPECT_FALSE(store.Get("p")->ran());  // no runs, no baseline sample, no history
  EXPECT_TRUE(store.Get("p")->history.empty());

  auto stale = s.RunExperiment("p", gen + 100, {});
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, ESTALE);

  // Queued behind a hung run on the same device, then the probe changes: skipped, never run.
  auto blocker = s.RunNow("slow");
  ASSERT_TRUE(blocker);
  for (int i = 0; i < 200 && gate->inside.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  auto queued = s.RunExperiment("p", gen, {});
  ASSERT_TRUE(queued);
  auto changed = Spec("p", "a", 1h);
  changed.size = 4096;
  s.Apply(store.Define({changed, Spec("slow", "a", 1h)}));
  ASSERT_EQ(queued->wait_for(2s), std::future_status::ready);
  EXPECT_EQ(queued->get().outcome, Outcome::kSkipped);
  EXPECT_EQ(queued->get().error, "probe changed by a reload");
  gate->Open();
  ASSERT_EQ(blocker->wait_for(2s), std::future_status::ready);
  s.Stop();
  std::lock_guard<std::mutex> lock(rec->mu);
  EXPECT_EQ(rec->calls["p"], 1);
}

TEST(Scheduler, StopResolvesOpenRequestsAndReturnsPromptly) {
  auto rec = std::make_shared<Recorder>();
  auto gate = std::make_shared<Gate>();
  analysis::ProbeStates store;
  auto options = FastOptions(FakeProbe(rec, 0ms, gate, {"stuck"}));
  options.periodic = false;
  options.shutdown_grace = 200ms;
  Scheduler s({}, options);
  Feed(s, store);
  s.Apply(store.Define({Spec("stuck", "a", 1h, 1h), Spec("queued", "a", 1h)}));
  s.Start();
  auto running = s.RunNow("stuck");
  for (int i = 0; i < 200 && gate->inside.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  auto queued = s.RunNow("queued");  // waits for the busy device
  ASSERT_TRUE(running && queued);
  const auto t0 = Clock::now();
  s.Stop();
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count(), 1000);
  ASSERT_EQ(running->wait_for(0ms), std::future_status::ready);
  ASSERT_EQ(queued->wait_for(0ms), std::future_status::ready);
  EXPECT_EQ(running->get().outcome, Outcome::kSkipped);
  EXPECT_EQ(queued->get().error, "scheduler stopped");
  EXPECT_FALSE(s.RunNow("queued"));
  gate->Open();
  for (int i = 0; i < 100 && gate->returned.load() == 0; ++i) std::this_thread::sleep_for(5ms);
}

TEST(Scheduler, ApplyReplacesTheProbeSetAtomically) {
  auto rec = std::make_shared<Recorder>();
  analysis::ProbeStates store;
  auto options = FastOptions(FakeProbe(rec, 0ms));
  options.max_concurrent = 3;
  Scheduler s({}, options);
  Feed(s, store);
  s.Apply(store.Define({Spec("a", "x", 50ms), Spec("b", "y", 50ms)}));
  s.Start();
  std::this_thread::sleep_for(200ms);
  s.Apply(store.Define({Spec("b", "y", 50ms), Spec("c", "z", 50ms)}));
  int a_calls;
  {
    std::lock_guard<std::mutex> lock(rec->mu);
    a_calls = rec->calls["a"];
  }
  std::this_thread::sleep_for(300ms);
  s.Stop();
  std::lock_guard<std::mutex> lock(rec->mu);
  EXPECT_GE(a_calls, 2);
  EXPECT_LE(rec->calls["a"], a_calls + 1);  // at most one run already in flight
  EXPECT_GE(rec->calls["c"], 2);
  EXPECT_GE(rec->calls["b"], 5);  // unchanged probe kept its timetable (~10 runs)
  EXPECT_EQ(store.Get("a"), nullptr);
  ASSERT_NE(store.Get("c"), nullptr);
  EXPECT_TRUE(store.Get("c")->ran());
  const auto probes = s.Probes();
  ASSERT_EQ(probes.size(), 2u);
  EXPECT_EQ(probes[0].name, "b");
  EXPECT_EQ(probes[1].name, "c");
}

// Calls `f` on every field of `spec`, in declaration order. The structured binding names every
// field: a field added to ProbeSpec stops this from compiling until it is listed here, and a
// field of a new type until Changed() below knows how to change it.
template <class F>
void ForEachField(probes::ProbeSpec& spec, F&& f) {
  auto& [name, kind, target, interval, size, files, requests, timeout, time_budget, members,
         readers, remote, given] = spec;
  f(name);
  f(kind);
  f(target);
  f(interval);
  f(size);
  f(files);
  f(requests);
  f(timeout);
  f(time_budget);
  f(members);
  f(readers);
  f(remote);
  f(given);
}

// Another valid value of the same field.
void Changed(std::string& v) { v += "x"; }
void Changed(probes::ProbeKind& v) {
  v = v == probes::ProbeKind::kCached ? probes::ProbeKind::kBuffered : probes::ProbeKind::kCached;
}
void Changed(std::chrono::milliseconds& v) { v += 1s; }
void Changed(std::uint64_t& v) { v += 4096; }
void Changed(std::uint32_t& v) { v += 1; }
void Changed(bool& v) { v = !v; }
void Changed(std::vector<std::uint32_t>& v) { v.push_back(v.empty() ? 2 : v.back() + 1); }
void Changed(std::optional<bool>& v) { v = v ? std::optional<bool>(!*v) : true; }
void Changed(probes::GivenKeys& v) { v.size = !v.size; }

// Each key of a probe, changed alone on a reload, reaches both the probe's state and the
// scheduler's entry (a reload of `readers:` or `members:` alone used to be kept out as "the
// same spec").
TEST(Scheduler, AReloadThatChangesAnyOneFieldOfAProbeIsApplied) {
  probes::ProbeSpec base = Spec("a", "x", 1h);
  base.kind = probes::ProbeKind::kBuffered;
  std::size_t fields = 0;
  ForEachField(base, [&](auto&) { ++fields; });
  ASSERT_GE(fields, 13u);
  for (std::size_t i = 0; i < fields; ++i) {
    probes::ProbeSpec changed = base;
    std::size_t at = 0;
    ForEachField(changed, [&](auto& field) {
      if (at++ == i) Changed(field);
    });
    ASSERT_NE(changed, base) << "field " << i;
    auto rec = std::make_shared<Recorder>();
    analysis::ProbeStates store;
    Scheduler s({}, FastOptions(FakeProbe(rec, 0ms)));
    s.Apply(store.Define({base}));
    s.Apply(store.Define({changed}));
    const auto state = store.Get(changed.name);
    ASSERT_NE(state, nullptr) << "field " << i;
    EXPECT_EQ(state->spec, changed) << "field " << i << ": ProbeStates kept the old spec";
    const auto probes = s.Probes();
    ASSERT_EQ(probes.size(), 1u) << "field " << i;
    EXPECT_EQ(probes[0], changed) << "field " << i << ": the scheduler kept the old spec";
  }
}

TEST(Scheduler, RunsTheRealProbeEngineOnDemand) {
  analysis::ProbeStates store;
  SchedulerOptions options;
  options.periodic = false;
  Scheduler s(probes::testing::MakeEnv(""), options);
  Feed(s, store);
  auto spec = probes::testing::MakeSpec("mem", probes::ProbeKind::kMemory, "", 16 << 20);
  spec.time_budget = 20ms;
  s.Apply(store.Define({spec}));
  s.Start();
  auto f = s.RunNow("mem");
  ASSERT_TRUE(f);
  ASSERT_EQ(f->wait_for(5s), std::future_status::ready);
  const ProbeResult r = f->get();
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_TRUE(r.context.count("MemFree"));
  s.Stop();
  EXPECT_EQ(store.Get("mem")->last.name, "mem");
}

}  // namespace
}  // namespace iodrift::daemon
