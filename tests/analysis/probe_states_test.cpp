// ProbeStates, the one owner of every probe's state: generations (a result of a removed or
// redefined probe is never recorded), immutable snapshots, history rings, and the reload race
// that let a removed probe come back.
#include "collectors/analysis/probe_states.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/analysis/states_test_util.h"

namespace iodrift::probes {
using namespace ::iodrift::analysis;  // NOLINT: tests of the analysis of probe results
namespace {

probes::ProbeSpec Spec(const std::string& name, const std::string& target = "/dev/vdb") {
  probes::ProbeSpec s;
  s.name = name;
  s.kind = probes::ProbeKind::kBuffered;
  s.target = target;
  return s;
}

ProbeResult Ok(const DefinedProbe& probe, double bps, double t = 1) {
  ProbeResult r;
  r.name = probe.spec.name;
  r.kind = probe.spec.kind;
  r.target = probe.spec.target;
  r.outcome = Outcome::kOk;
  r.start_time_seconds = t;
  r.throughput_bytes_per_second = bps;
  r.spec_size = 0;
  r.generation = probe.generation;
  return r;
}

TEST(ProbeStates, DefineListsEveryProbeInOrderBeforeItRuns) {
  ProbeStates states;
  const auto defined = states.Define({Spec("b"), Spec("a"), Spec("b", "/dev/other")});
  ASSERT_EQ(defined.size(), 2u);  // a duplicate name keeps the first
  auto snapshot = states.Snapshot();
  ASSERT_EQ(snapshot->size(), 2u);
  EXPECT_EQ((*snapshot)[0]->spec.name, "b");
  EXPECT_EQ((*snapshot)[0]->spec.target, "/dev/vdb");
  EXPECT_EQ((*snapshot)[1]->spec.name, "a");
  EXPECT_FALSE((*snapshot)[0]->ran());
  EXPECT_NE(defined[0].generation, defined[1].generation);
}

TEST(ProbeStates, AResultOfARemovedProbeIsDropped) {
  ProbeStates states;
  const auto first = states.Define({Spec("a"), Spec("b")});
  const ProbeResult late = Ok(first[0], 1e8);  // started before the reload, finishes after
  states.Define({Spec("b")});
  EXPECT_FALSE(states.Record(late));
  EXPECT_EQ(states.Get("a"), nullptr);
  const auto snapshot = states.Snapshot();  // held for the loop (C++20 range-for)
  for (const auto& state : *snapshot) EXPECT_NE(state->spec.name, "a");
  EXPECT_TRUE(states.Baselines().probes.count("a") == 0);
}

TEST(ProbeStates, AResultOfAChangedProbeIsDroppedAndAnUnchangedOneKeepsItsGeneration) {
  ProbeStates states;
  const auto first = states.Define({Spec("a"), Spec("b")});
  probes::ProbeSpec changed = Spec("a");
  changed.size = 1 << 20;
  const auto second = states.Define({changed, Spec("b")});
  EXPECT_NE(second[0].generation, first[0].generation);
  EXPECT_EQ(second[1].generation, first[1].generation);
  EXPECT_FALSE(states.Record(Ok(first[0], 1e8)));
  EXPECT_TRUE(states.Record(Ok(first[1], 1e8)));
  EXPECT_TRUE(states.Record(Ok(second[0], 1e8)));
  EXPECT_EQ(states.Get("a")->runs.at(Outcome::kOk), 1u);
}

TEST(ProbeStates, AnotherTargetStartsAFreshState) {
  ProbeStates states(1);
  const auto first = states.Define({Spec("a")});
  ASSERT_TRUE(states.Record(Ok(first[0], 1e8)));
  ASSERT_TRUE(states.Get("a")->baseline);
  const auto second = states.Define({Spec("a", "/dev/vdc")});
  auto state = states.Get("a");
  EXPECT_FALSE(state->ran());
  EXPECT_FALSE(state->baseline);
  EXPECT_TRUE(state->history.empty());
  EXPECT_EQ(state->spec.target, "/dev/vdc");
}

TEST(ProbeStates, ASnapshotNeverChangesUnderItsReader) {
  ProbeStates states;
  const auto defined = states.Define({Spec("a")});
  ASSERT_TRUE(states.Record(Ok(defined[0], 1e8, 1)));
  const auto before = states.Snapshot();
  ASSERT_TRUE(states.Record(Ok(defined[0], 2e8, 2)));
  EXPECT_EQ((*before)[0]->last.start_time_seconds, 1);
  EXPECT_EQ((*before)[0]->history.size(), 1u);
  EXPECT_EQ((*states.Snapshot())[0]->last.start_time_seconds, 2);
  EXPECT_EQ((*states.Snapshot())[0]->history.size(), 2u);
}

TEST(ProbeStates, HistoryIsBoundedStampedAndCanBeTurnedOff) {
  ProbeStates states;
  states.ConfigureHistory(true, 3);
  EXPECT_EQ(states.history_capacity(), 3u);
  const auto defined = states.Define({Spec("a")});
  states.Record(Ok(defined[0], 1e8, 1));
  states.SetBootId("boot-a");
  for (int t = 2; t <= 5; ++t) states.Record(Ok(defined[0], 1e8, t));
  auto h = states.Get("a")->history;
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].time_seconds, 3);
  ASSERT_TRUE(h[0].boot_id);
  EXPECT_EQ(*h[0].boot_id, "boot-a");
  states.ConfigureHistory(true, 0);  // clamped
  EXPECT_EQ(states.history_capacity(), kMinHistoryRuns);
  EXPECT_EQ(states.Get("a")->history.size(), kMinHistoryRuns);
  states.ConfigureHistory(false, 100);
  EXPECT_TRUE(states.Get("a")->history.empty());
  states.Record(Ok(defined[0], 1e8, 6));
  EXPECT_TRUE(states.Get("a")->history.empty());
}

// The reload race: a run in flight while a reload removes its probe, recorded by
// one thread while another redefines the set over and over. A removed probe must never appear.
TEST(ProbeStates, ConcurrentReloadsNeverBringARemovedProbeBack) {
  ProbeStates states;
  std::atomic<bool> stop{false};
  std::atomic<int> seen_removed{0};
  std::vector<DefinedProbe> current = states.Define({Spec("keep"), Spec("flip")});
  std::mutex mu;
  std::thread recorder([&] {
    while (!stop) {
      std::vector<DefinedProbe> copy;
      {
        std::lock_guard<std::mutex> lock(mu);
        copy = current;
      }
      for (const auto& probe : copy) states.Record(Ok(probe, 1e8));
    }
  });
  std::thread reader([&] {
    while (!stop) {
      // After a Define without "flip", the snapshot must not show it until the next Define adds
      // it: checked by the main thread below; here we only stress concurrent reads.
      (void)states.Snapshot();
    }
  });
  // At least 2000 reloads, and on until the recorder has recorded (a busy machine may not have
  // scheduled it yet), within 30 s.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto keep_runs = [&] {
    auto keep = states.Get("keep");
    return keep ? keep->runs.at(Outcome::kOk) : 0;
  };
  for (int i = 0; i < 2000 || (keep_runs() < 100 && std::chrono::steady_clock::now() < give_up);
       ++i) {
    const bool with_flip = i % 2 == 1;
    std::vector<probes::ProbeSpec> specs = {Spec("keep")};
    if (with_flip) specs.push_back(Spec("flip"));
    {
      std::lock_guard<std::mutex> lock(mu);
      current = states.Define(specs);
    }
    if (!with_flip) {
      // Hold the snapshot: `for (… : *states.Snapshot())` frees it while looping (C++20).
      const auto snapshot = states.Snapshot();
      for (const auto& state : *snapshot) {
        if (state->spec.name == "flip") ++seen_removed;
      }
      if (states.Get("flip")) ++seen_removed;
    }
  }
  stop = true;
  recorder.join();
  reader.join();
  EXPECT_EQ(seen_removed.load(), 0);
  EXPECT_GE(keep_runs(), 100u);
}

}  // namespace
}  // namespace iodrift::probes
