// Baselines that survive restarts: the pure rules, the state file's format, and ProbeStates with
// persistence on a real directory (restart, new boot, changed size, corrupt and truncated files,
// a write cut short by kill -9, a state dir that cannot be written).
#include "collectors/analysis/baseline_store.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "collectors/analysis/probe_states.h"
#include "collectors/common/state_health.h"
#include "tests/analysis/states_test_util.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
using namespace ::iodrift::analysis;  // NOLINT: tests of the analysis of probe results
namespace {

using testing::TempDir;
using namespace std::chrono_literals;

ProbeResult Result(double throughput, std::uint64_t size = 64ull << 20, double uptime = 100) {
  ProbeResult r;
  r.name = "disk buffered";  // a space: names and targets are percent-encoded
  r.kind = probes::ProbeKind::kBuffered;
  r.target = "/srv/data 100%/probe";
  r.outcome = Outcome::kOk;
  r.spec_size = size;
  r.duration_seconds = 1;
  r.throughput_bytes_per_second = throughput;
  r.uptime_seconds = uptime;
  r.context["SUnreclaim"] = static_cast<std::uint64_t>(throughput / 10);
  return r;
}

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Put(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

std::vector<std::string> CorruptFiles(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (name.rfind("baselines.corrupt-", 0) == 0) out.push_back(name);
  }
  return out;
}

TEST(UpdateBaseline, IsTheMedianOfTheFirstCleanRunsAndSkipsSuspectOnes) {
  ProbeBaseline pb;
  for (double t : {100.0, 300.0, 200.0, 500.0}) EXPECT_TRUE(UpdateBaseline(pb, Result(t)).changed);
  ProbeResult suspect = Result(1.0);
  suspect.suspect = {"cache_not_dropped"};
  EXPECT_FALSE(UpdateBaseline(pb, suspect).changed);
  ProbeResult failed = Result(1.0);
  failed.outcome = Outcome::kError;
  EXPECT_FALSE(UpdateBaseline(pb, failed).changed);
  EXPECT_FALSE(pb.baseline);
  auto update = UpdateBaseline(pb, Result(400));
  ASSERT_TRUE(pb.baseline);
  EXPECT_EQ(*pb.baseline, 300);  // median of 100 300 200 500 400
  EXPECT_EQ(pb.baseline_features[static_cast<std::size_t>(DriftFeature::kSUnreclaim)], 30);
  EXPECT_NEAR(*update.ratio, 400.0 / 300, 1e-12);
  EXPECT_FALSE(pb.worst_ratio);  // the forming run does not count as worst
  EXPECT_TRUE(pb.samples.empty());

  update = UpdateBaseline(pb, Result(150, 64ull << 20, 86400));
  EXPECT_TRUE(update.changed);
  EXPECT_EQ(pb.worst_ratio, 0.5);
  EXPECT_EQ(pb.uptime_at_worst, 86400);
  update = UpdateBaseline(pb, Result(240));
  EXPECT_FALSE(update.worst);  // 0.8 is not worse
  EXPECT_EQ(pb.worst_ratio, 0.5);
  ProbeResult memory_suspect = Result(30);
  memory_suspect.suspect = {"low_free_memory"};  // the drift itself: counts for the worst
  UpdateBaseline(pb, memory_suspect);
  EXPECT_EQ(pb.worst_ratio, 0.1);
  ProbeResult io_suspect = Result(3);
  io_suspect.suspect = {"io_pressure"};  // someone else's I/O: does not
  UpdateBaseline(pb, io_suspect);
  EXPECT_EQ(pb.worst_ratio, 0.1);
}

TEST(UpdateBaseline, RestartsWhenKindTargetOrSizeChanges) {
  ProbeBaseline pb;
  for (int i = 0; i < 5; ++i) UpdateBaseline(pb, Result(100));
  ASSERT_TRUE(pb.baseline);
  ProbeResult bare = Result(100, 0);
  bare.spec_size.reset();  // a result without a size (scheduler `skipped`) keeps it
  bare.outcome = Outcome::kSkipped;
  EXPECT_FALSE(UpdateBaseline(pb, bare).restarted);
  EXPECT_TRUE(UpdateBaseline(pb, Result(100, 1ull << 30)).restarted);
  EXPECT_FALSE(pb.baseline);
  EXPECT_EQ(pb.key.size, 1ull << 30);
  ProbeResult other = Result(100, 1ull << 30);
  other.target = "/elsewhere";
  EXPECT_TRUE(UpdateBaseline(pb, other).restarted);
}

TEST(ForBoot, KeepsTheSameBootAndMovesAnotherToTheHistory) {
  BaselineState s;
  s.boot_id = "boot-a";
  s.boot_time_seconds = 1000;
  UpdateBaseline(s.probes["disk buffered"], Result(100));
  s.probes["disk buffered"].baseline = 100;
  s.probes["disk buffered"].worst_ratio = 0.6;
  s.probes["disk buffered"].uptime_at_worst = 2.6e6;
  EXPECT_EQ(ForBoot(s, "boot-a", 1000).probes.size(), 1u);
  BaselineState next = ForBoot(s, "boot-b", 5000);
  EXPECT_EQ(next.boot_id, "boot-b");
  EXPECT_TRUE(next.probes.empty());
  ASSERT_EQ(next.history.size(), 1u);
  EXPECT_EQ(next.history[0].boot_id, "boot-a");
  EXPECT_EQ(next.history[0].boot_time_seconds, 1000u);
  ASSERT_EQ(next.history[0].probes.size(), 1u);
  EXPECT_EQ(next.history[0].probes[0].worst_ratio, 0.6);
  EXPECT_EQ(next.history[0].probes[0].uptime_at_worst, 2.6e6);
  EXPECT_TRUE(ForBoot(BaselineState{}, "boot-a", 1).history.empty());
}

TEST(ForBoot, KeepsTheLastFiftyBoots) {
  BaselineState s;
  for (int i = 0; i < 60; ++i) s = ForBoot(std::move(s), "boot-" + std::to_string(i), i);
  ASSERT_EQ(s.history.size(), kMaxBootHistory);
  EXPECT_EQ(s.history.front().boot_id, "boot-9");
  EXPECT_EQ(s.history.back().boot_id, "boot-58");
}

TEST(PercentEncode, RoundTripsAnyBytesWithoutSpacesOrNewlines) {
  for (std::string s :
       {std::string(""), std::string("-"), std::string("a b%c\nd\t/é"), std::string("\0x", 2)}) {
    const std::string e = PercentEncode(s);
    EXPECT_EQ(e.find_first_of(" \n\t"), std::string::npos);
    EXPECT_FALSE(e.empty());
    EXPECT_EQ(PercentDecode(e), s);
  }
  EXPECT_FALSE(PercentDecode("%4"));
  EXPECT_FALSE(PercentDecode("%zz"));
}

TEST(ParseBaselineState, RoundTripsEveryField) {
  BaselineState s;
  s.boot_id = "0b6c2e2a-1111-2222-3333-444455556666";
  s.boot_time_seconds = 1764685000;
  ProbeBaseline& done = s.probes["disk buffered"];
  for (int i = 0; i < 5; ++i) UpdateBaseline(done, Result(100 + i));
  UpdateBaseline(done, Result(50, 64ull << 20, 1234.5));
  ProbeResult mem = Result(1e10, 0);
  mem.name = "mem";
  mem.kind = probes::ProbeKind::kMemory;
  mem.target = "";
  UpdateBaseline(s.probes["mem"], mem);  // one sample so far
  s = ForBoot(s, "boot-b", 1764690000);
  s.probes["mem"] = ProbeBaseline{};
  UpdateBaseline(s.probes["mem"], mem);

  const std::string text = SerializeBaselineState(s);
  auto parsed = ParseBaselineState(text);
  ASSERT_TRUE(parsed) << parsed.error().message << "\n" << text;
  EXPECT_EQ(SerializeBaselineState(*parsed), text);
  EXPECT_EQ(parsed->boot_id, "boot-b");
  ASSERT_EQ(parsed->history.size(), 1u);
  EXPECT_EQ(parsed->history[0].probes[0].key.target, "/srv/data 100%/probe");
  EXPECT_EQ(parsed->history[0].probes[0].baseline, 102);
  EXPECT_EQ(parsed->history[0].probes[0].uptime_at_worst, 1234.5);
  ASSERT_EQ(parsed->probes.at("mem").samples.size(), 1u);
  EXPECT_EQ(parsed->probes.at("mem").key.target, "");
}

TEST(ParseBaselineState, RejectsTruncatedForeignAndGarbageText) {
  BaselineState s;
  s.boot_id = "b";
  for (int i = 0; i < 5; ++i) UpdateBaseline(s.probes["p"], Result(100));
  const std::string text = SerializeBaselineState(s);
  ASSERT_TRUE(ParseBaselineState(text));
  for (std::size_t cut = 0; cut < text.size(); ++cut) {
    EXPECT_FALSE(ParseBaselineState(text.substr(0, cut))) << "cut at " << cut;
  }
  std::string v2 = text;
  v2.replace(v2.find(" 1\n"), 3, " 2\n");
  auto foreign = ParseBaselineState(v2);
  ASSERT_FALSE(foreign);
  EXPECT_NE(foreign.error().message.find("version 2"), std::string::npos);
  EXPECT_FALSE(
      ParseBaselineState("\x7f"
                         "ELF\x02\x01\x01\0\0\0"));
  EXPECT_FALSE(ParseBaselineState(text + "probe x\n"));
}

class PersistentStore : public ::testing::Test {
 protected:
  std::unique_ptr<ProbeStates> Open(const std::string& boot_id) {
    auto store = std::make_unique<ProbeStates>();
    store->EnablePersistence(dir_.path(), boot_id, 1764685000, 0s);
    return store;
  }
  std::filesystem::path File() const { return dir_.path() / kBaselineFileName; }
  TempDir dir_;
};

TEST_F(PersistentStore, RestartInTheSameBootKeepsTheBaseline) {
  {
    auto store = Open("boot-a");
    for (double t : {100.0, 110.0, 90.0}) probes::testing::DefineAndRecord(*store, Result(t));
  }
  {
    auto store = Open("boot-a");  // a restart half way: the samples carry on
    EXPECT_EQ(store->Baselines().probes.at("disk buffered").samples.size(), 3u);
    probes::testing::DefineAndRecord(*store, Result(120));
    probes::testing::DefineAndRecord(*store, Result(80));
    auto rec = store->Get("disk buffered");
    ASSERT_TRUE(rec && rec->baseline);
    EXPECT_EQ(*rec->baseline, 100);
    EXPECT_EQ(rec->baseline_bytes_per_second(), 100);
  }
  auto store = Open("boot-a");
  probes::testing::DefineAndRecord(*store, Result(50, 64ull << 20, 7200));
  auto rec = store->Get("disk buffered");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->baseline, 100);
  EXPECT_EQ(rec->baseline_ratio, 0.5);
  EXPECT_EQ(rec->worst_ratio, 0.5);
  EXPECT_EQ(rec->uptime_at_worst, 7200);
  EXPECT_TRUE(CorruptFiles(dir_.path()).empty());
}

TEST_F(PersistentStore, ANewBootStartsFreshAndKeepsTheOldOneInTheHistory) {
  {
    auto store = Open("boot-a");
    for (int i = 0; i < 5; ++i) probes::testing::DefineAndRecord(*store, Result(100));
    probes::testing::DefineAndRecord(*store, Result(60, 64ull << 20, 3e6));
  }
  auto store = Open("boot-b");
  const BaselineState state = store->Baselines();
  EXPECT_TRUE(state.probes.empty());
  ASSERT_EQ(state.history.size(), 1u);
  EXPECT_EQ(state.history[0].boot_id, "boot-a");
  ASSERT_EQ(state.history[0].probes.size(), 1u);
  EXPECT_EQ(state.history[0].probes[0].baseline, 100);
  EXPECT_EQ(state.history[0].probes[0].worst_ratio, 0.6);
  probes::testing::DefineAndRecord(*store, Result(100));
  EXPECT_FALSE(store->Get("disk buffered")->baseline);
  // The move is on disk at once, before any probe completes.
  EXPECT_NE(Slurp(File()).find("past boot-a"), std::string::npos);
}

TEST_F(PersistentStore, AChangedSizeRestartsTheBaseline) {
  auto store = Open("boot-a");
  for (int i = 0; i < 5; ++i) probes::testing::DefineAndRecord(*store, Result(100));
  ASSERT_TRUE(store->Get("disk buffered")->baseline);
  probes::testing::DefineAndRecord(*store, Result(100, 1ull << 30));
  auto rec = store->Get("disk buffered");
  EXPECT_FALSE(rec->baseline);
  EXPECT_EQ(rec->baseline_samples.size(), 1u);
  EXPECT_EQ(rec->runs.at(Outcome::kOk), 6u);  // totals are kept: same kind and target
}

TEST_F(PersistentStore, ATruncatedOrGarbageFileIsSetAsideAndReplaced) {
  {
    auto store = Open("boot-a");
    for (int i = 0; i < 5; ++i) probes::testing::DefineAndRecord(*store, Result(100));
  }
  const std::string good = Slurp(File());
  for (const std::string& bad : {good.substr(0, good.size() / 2), std::string("\x01\x02garbage\n"),
                                 std::string("iodrift-baselines 99\nboot x 1\nend 2\n")}) {
    for (const auto& name : CorruptFiles(dir_.path())) std::filesystem::remove(dir_.path() / name);
    Put(File(), bad);
    auto store = Open("boot-a");
    const auto aside = CorruptFiles(dir_.path());
    ASSERT_EQ(aside.size(), 1u);
    EXPECT_EQ(Slurp(dir_.path() / aside[0]), bad);  // kept for a post-mortem, not deleted
    EXPECT_TRUE(store->Baselines().probes.empty());
    EXPECT_TRUE(ParseBaselineState(Slurp(File())));  // replaced by a valid file at once
    for (int i = 0; i < 5; ++i) probes::testing::DefineAndRecord(*store, Result(200));
    EXPECT_EQ(store->Get("disk buffered")->baseline, 200);  // and the daemon carries on
  }
}

// Set-aside copies of any kind (corrupt, unreadable) in dir.
std::vector<std::string> SetAsideFiles(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (name.rfind("baselines.corrupt-", 0) == 0 || name.rfind("baselines.unreadable-", 0) == 0) {
      out.push_back(name);
    }
  }
  return out;
}

// Every start with a corrupt (or unreadable) file sets it aside; only the newest 3 copies stay.
TEST_F(PersistentStore, ManyStartsWithABadFileKeepAtMostThreeSetAsideCopies) {
  for (int start = 0; start < 8; ++start) {
    if (start == 5) {
      std::filesystem::remove(File());
      ASSERT_EQ(mkfifo(File().c_str(), 0600), 0);  // unreadable: not a regular file
    } else {
      Put(File(), "garbage " + std::to_string(start) + "\n");
    }
    auto store = Open("boot-a");
    EXPECT_LE(SetAsideFiles(dir_.path()).size(), 3u) << "after start " << start;
  }
  const auto aside = SetAsideFiles(dir_.path());
  ASSERT_EQ(aside.size(), 3u);
  // The newest are kept: the last two garbage files and the FIFO.
  std::vector<std::string> kept;
  for (const auto& name : aside) {
    if (std::filesystem::is_regular_file(dir_.path() / name))
      kept.push_back(Slurp(dir_.path() / name));
  }
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<std::string>{"garbage 6\n", "garbage 7\n"}));
  EXPECT_TRUE(ParseBaselineState(Slurp(File())));
}

// Copies made while the clock was 30 days ahead or behind (no RTC battery, NTP not synced yet)
// carry "future" and "past" times in their names: the order is their sequence number, so the
// file just set aside is kept (its name says it was set aside: it must exist) and the oldest go.
TEST_F(PersistentStore, SetAsideCopiesArePrunedBySequenceNeverByTheClockInTheirNames) {
  const auto now = static_cast<std::uint64_t>(std::time(nullptr));
  const std::uint64_t future = now + 30 * 86400, past = now - 30 * 86400;
  const std::string legacy_future = "baselines.corrupt-" + std::to_string(future);
  const std::string s1 = "baselines.corrupt-s1-" + std::to_string(future);
  const std::string s2 = "baselines.unreadable-s2-" + std::to_string(past);
  const std::string s3 = "baselines.corrupt-s3-" + std::to_string(future);
  for (const auto& name : {legacy_future, s1, s2, s3}) Put(dir_.path() / name, name + "\n");
  Put(File(), "garbage newest\n");
  auto store = Open("boot-a");
  auto aside = SetAsideFiles(dir_.path());
  std::sort(aside.begin(), aside.end());
  ASSERT_EQ(aside.size(), 3u) << ::testing::PrintToString(aside);
  EXPECT_EQ(aside[0], s3);
  EXPECT_EQ(aside[1].rfind("baselines.corrupt-s4-", 0), 0u) << aside[1];
  EXPECT_EQ(Slurp(dir_.path() / aside[1]), "garbage newest\n");
  EXPECT_EQ(aside[2], s2);
  // Again, with only numbered copies left: s5 joins, s2 (the oldest) goes.
  Put(File(), "garbage 5\n");
  store = Open("boot-a");
  aside = SetAsideFiles(dir_.path());
  std::sort(aside.begin(), aside.end());
  ASSERT_EQ(aside.size(), 3u);
  EXPECT_EQ(aside[0], s3);
  EXPECT_EQ(aside[2].rfind("baselines.corrupt-s5-", 0), 0u) << aside[2];
}

// A probe whose file lines are as long as a config allows: a 64-character name and a 4095-byte
// target of bytes that are percent-encoded (3 bytes each in the file).
ProbeResult LongResult(int index, double throughput) {
  ProbeResult r = Result(throughput);
  r.name = std::string(58, 'p') + "-" + std::to_string(1000 + index);
  r.target = "/" + std::string(4094, ' ');
  r.target.replace(1, std::to_string(index).size(), std::to_string(index));
  return r;
}

// The state of `boot_id` with `probes` long probes (with baselines) and `past` past boots of as
// many long probes.
BaselineState LongState(const std::string& boot_id, int probes, int past) {
  BaselineState state;
  state.boot_id = boot_id;
  state.boot_time_seconds = 1764685000;
  for (int b = 0; b < past; ++b) {
    PastBoot pb;
    pb.boot_id = "past-" + std::to_string(b);
    pb.boot_time_seconds = 1000 + b;
    for (int i = 0; i < probes; ++i) {
      pb.probes.push_back(PastProbe{KeyOf(LongResult(i, 1)), 1e8, 0.5, 100, {}});
    }
    state.history.push_back(std::move(pb));
  }
  for (int i = 0; i < probes; ++i) {
    ProbeBaseline pb;
    pb.key = KeyOf(LongResult(i, 1));
    pb.baseline = 1e8;
    pb.worst_ratio = 0.5;
    state.probes[pb.key.name] = pb;
  }
  return state;
}

// At the cap: a file as large as the daemon reads back (50 past boots of long probes), then a
// new boot whose config has more probes. The daemon must never write a file it then refuses at
// the next start (set aside, this boot's baselines lost): the oldest past boot goes instead.
TEST_F(PersistentStore, AStateAtTheSizeCapIsSavedSoThatItLoadsBack) {
  // Probes per boot so that the file of boot-a (50 past boots + boot-a's own) just fits.
  const std::size_t one = SerializeBaselineState(LongState("boot-a", 1, kMaxBootHistory)).size();
  const std::size_t two = SerializeBaselineState(LongState("boot-a", 2, kMaxBootHistory)).size();
  const int n = static_cast<int>((kMaxBaselineFileBytes - one) / (two - one)) + 1;
  const std::string loaded = SerializeBaselineState(LongState("boot-a", n, kMaxBootHistory));
  ASSERT_LE(loaded.size(), kMaxBaselineFileBytes);
  Put(File(), loaded);
  {
    ProbeStates store;
    store.EnablePersistence(dir_.path(), std::string("boot-b"), 1764690000, std::chrono::hours(1));
    ASSERT_EQ(store.Baselines().history.size(), kMaxBootHistory);
    ASSERT_TRUE(SetAsideFiles(dir_.path()).empty());
    std::vector<ProbeSpec> specs;
    for (int i = 0; i < 3 * n; ++i) specs.push_back(probes::testing::SpecOf(LongResult(i, 1)));
    const auto defined = store.Define(specs);
    for (const auto& d : defined) {
      for (double t : {100.0, 110.0, 90.0, 100.0, 105.0}) {
        ProbeResult r = LongResult(std::stoi(d.spec.name.substr(59)) - 1000, t);
        r.generation = d.generation;
        ASSERT_TRUE(store.Record(r));
      }
    }
    // The state now exceeds what a file may hold: this is the case under test.
    ASSERT_GT(SerializeBaselineState(store.Baselines()).size(), kMaxBaselineFileBytes);
    store.Flush();
  }
  EXPECT_LE(std::filesystem::file_size(File()), kMaxBaselineFileBytes);
  ProbeStates again;
  again.EnablePersistence(dir_.path(), std::string("boot-b"), 1764690000, std::chrono::hours(1));
  EXPECT_TRUE(SetAsideFiles(dir_.path()).empty()) << "the daemon refused its own file";
  const BaselineState state = again.Baselines();
  EXPECT_EQ(state.probes.size(), static_cast<std::size_t>(3 * n));  // this boot's are all kept
  for (const auto& [name, pb] : state.probes) EXPECT_EQ(pb.baseline, 100) << name;
  ASSERT_FALSE(state.history.empty());
  EXPECT_LT(state.history.size(), kMaxBootHistory);   // the oldest went
  EXPECT_EQ(state.history.back().boot_id, "boot-a");  // the newest stayed
}

TEST(FitBaselineState, DropsOldestBootsThenFormingSamplesThenProbesUntilItFits) {
  BaselineState state = LongState("boot-a", 40, kMaxBootHistory);  // ~25 MB as text
  ASSERT_GT(SerializeBaselineState(state).size(), kMaxBaselineFileBytes);
  const Compaction dropped = FitBaselineState(state);
  EXPECT_GT(dropped.past_boots, 0u);
  EXPECT_EQ(dropped.samples + dropped.probes, 0u);
  const std::string text = SerializeBaselineState(state);
  EXPECT_LE(text.size(), kMaxBaselineFileBytes);
  EXPECT_EQ(state.history.back().boot_id, "past-49");
  EXPECT_EQ(state.probes.size(), 40u);
  auto parsed = ParseBaselineState(text);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->history.size(), state.history.size());
  // A state that fits is untouched.
  BaselineState small = LongState("boot-a", 2, 3);
  EXPECT_FALSE(FitBaselineState(small).any());
  EXPECT_EQ(small.history.size(), 3u);
  // Without history: forming samples go before whole probes.
  BaselineState forming = LongState("boot-a", 3, 0);
  for (auto& [name, pb] : forming.probes) {
    pb.baseline.reset();
    pb.samples.assign(4, 1e8);
    pb.sample_features.assign(4, UnknownFeatures());
  }
  const std::size_t without_samples = SerializeBaselineState(LongState("boot-a", 3, 0)).size();
  const Compaction c = FitBaselineState(forming, without_samples + 10);
  EXPECT_EQ(c.probes, 0u);
  EXPECT_GT(c.samples, 0u);
  EXPECT_EQ(forming.probes.size(), 3u);
  const Compaction d = FitBaselineState(forming, 200);
  EXPECT_EQ(d.probes, 3u);
  EXPECT_LE(SerializeBaselineState(forming).size(), 200u);
}

TEST(SaveBaselines, NeverWritesMoreThanItReadsBack) {
  TempDir dir;
  const BaselineState big = LongState("boot-a", 40, kMaxBootHistory);
  ASSERT_TRUE(SaveBaselines(dir.path(), big));
  EXPECT_LE(std::filesystem::file_size(dir.path() / kBaselineFileName), kMaxBaselineFileBytes);
  const LoadedBaselines loaded = LoadBaselines(dir.path(), "boot-a", 1764685000);
  EXPECT_FALSE(loaded.set_aside);
  EXPECT_EQ(loaded.state.probes.size(), 40u);
  // The raw writer refuses contents over the limit, leaving the file as it was.
  const std::string before = Slurp(dir.path() / kBaselineFileName);
  EXPECT_FALSE(WriteFileAtomically(dir.path(), kBaselineFileName,
                                   std::string(kMaxBaselineFileBytes + 1, 'x')));
  EXPECT_EQ(Slurp(dir.path() / kBaselineFileName), before);
}

TEST_F(PersistentStore, APartialTempFileFromAKilledWriteNeverMakesTheStateUnreadable) {
  {
    auto store = Open("boot-a");
    for (int i = 0; i < 5; ++i) probes::testing::DefineAndRecord(*store, Result(100));
  }
  const std::string good = Slurp(File());
  // kill -9 between write() and rename(): the temporary file holds half a state.
  Put(dir_.path() / (std::string(kBaselineFileName) + ".tmp"), good.substr(0, good.size() / 3));
  auto store = Open("boot-a");
  EXPECT_EQ(store->Baselines().probes.at("disk buffered").baseline, 100);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / (std::string(kBaselineFileName) + ".tmp")));
  EXPECT_TRUE(CorruptFiles(dir_.path()).empty());
}

TEST_F(PersistentStore, AnUnwritableStateDirKeepsBaselinesInMemory) {
  // A regular file where the directory should be: fails for root too.
  const auto not_a_dir = dir_.path() / "file";
  Put(not_a_dir, "x");
  ProbeStates store;
  store.EnablePersistence(not_a_dir, std::string("boot-a"), 1, 0s);
  for (int i = 0; i < 5; ++i) probes::testing::DefineAndRecord(store, Result(100));
  store.Flush();
  EXPECT_EQ(store.Get("disk buffered")->baseline, 100);
  EXPECT_EQ(Slurp(not_a_dir), "x");
}

// Every failed save is a health signal (iodrift_state_writable 0, the banner, the status line)
// for as long as saves fail; the first save that succeeds clears it.
TEST_F(PersistentStore, AnUnwritableStateDirIsReportedUntilASaveSucceeds) {
  const auto state_dir = dir_.path() / "state";
  Put(state_dir, "x");  // a regular file where the directory should be: fails for root too
  ProbeStates store;
  store.EnablePersistence(state_dir, std::string("boot-a"), 1, 0s);
  for (int i = 0; i < 5; ++i) probes::testing::DefineAndRecord(store, Result(100));
  const StateHealthView failing = StateHealth::Process().View();
  EXPECT_FALSE(failing.writable);
  EXPECT_EQ(failing.failing_writer, "baselines");
  EXPECT_GE(failing.save_errors_total, 2u);  // every attempt counts, not only the first
  std::filesystem::remove(state_dir);
  std::filesystem::create_directories(state_dir);
  store.Flush();
  EXPECT_TRUE(StateHealth::Process().View().writable);
  EXPECT_TRUE(ParseBaselineState(Slurp(state_dir / kBaselineFileName)));
}

// Takes every free fd but `spare` under a lowered RLIMIT_NOFILE: the opens after those fail
// with EMFILE, as in a unit restarted under a low LimitNOFILE=. Restored on destruction.
class FdExhaustion {
 public:
  explicit FdExhaustion(int spare) {
    getrlimit(RLIMIT_NOFILE, &old_);
    int highest = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
      highest = std::max(highest, std::stoi(e.path().filename().string()));
    }
    rlimit low = old_;
    low.rlim_cur = static_cast<rlim_t>(highest + 16);
    setrlimit(RLIMIT_NOFILE, &low);
    for (int fd; (fd = dup(0)) >= 0;) held_.push_back(fd);
    for (int i = 0; i < spare && !held_.empty(); ++i) {
      close(held_.back());
      held_.pop_back();
    }
  }
  ~FdExhaustion() {
    for (int fd : held_) close(fd);
    setrlimit(RLIMIT_NOFILE, &old_);
  }

 private:
  rlimit old_{};
  std::vector<int> held_;
};

// EMFILE while opening the state file says nothing about the file: it is never set aside nor
// saved over; once fds are back it loads (baselines of the earlier run carry on) and the next
// start loads it too.
TEST_F(PersistentStore, ATransientOpenErrorNeverSetsAValidFileAside) {
  {
    auto store = Open("boot-a");
    for (int i = 0; i < 5; ++i) probes::testing::DefineAndRecord(*store, Result(100));
  }
  const std::string good = Slurp(File());
  std::unique_ptr<ProbeStates> store;
  {
    FdExhaustion exhausted(1);  // the directory opens, the file does not
    const LoadedBaselines loaded = LoadBaselines(dir_.path(), "boot-a", 1764685000, 2);
    ASSERT_TRUE(loaded.deferred);
    EXPECT_EQ(loaded.deferred->code, EMFILE);
    EXPECT_FALSE(loaded.set_aside);
    store = Open("boot-a");
    EXPECT_FALSE(store->Baselines().probes.count("disk buffered"));
    EXPECT_FALSE(StateHealth::Process().View().writable);
    store->Flush();  // still out of fds: nothing written over the file
  }
  EXPECT_TRUE(SetAsideFiles(dir_.path()).empty());
  EXPECT_EQ(Slurp(File()), good);
  probes::testing::DefineAndRecord(*store, Result(50));  // the load is retried before the save
  EXPECT_EQ(store->Get("disk buffered")->baseline, 100);
  store->Flush();
  EXPECT_TRUE(StateHealth::Process().View().writable);
  store.reset();
  EXPECT_EQ(Open("boot-a")->Baselines().probes.at("disk buffered").baseline, 100);
  EXPECT_TRUE(SetAsideFiles(dir_.path()).empty());
}

TEST(LoadBaselines, OnlyErrorsOfTheFileItselfSetItAside) {
  for (int code : {EINVAL, ELOOP, EFBIG, EACCES, EPERM}) EXPECT_TRUE(IsFaultOfTheFile(code));
  for (int code : {EMFILE, ENFILE, EINTR, ENOMEM, EAGAIN, EIO, ENOBUFS}) {
    EXPECT_FALSE(IsFaultOfTheFile(code)) << code;
  }
  for (int code : {EMFILE, ENFILE, EINTR, ENOMEM, EAGAIN}) EXPECT_TRUE(IsTransientError(code));
}

TEST_F(PersistentStore, SavesAtMostOncePerIntervalButFlushWritesEverything) {
  ProbeStates store;
  store.EnablePersistence(dir_.path(), std::string("boot-a"), 1, std::chrono::hours(1));
  probes::testing::DefineAndRecord(
      store, Result(100));  // within the interval of the initial save: not written yet
  EXPECT_EQ(Slurp(File()).find("sample "), std::string::npos);
  store.Flush();
  EXPECT_NE(Slurp(File()).find("sample "), std::string::npos);
}

TEST(ProbeStates, WithoutABootIdStaysInMemory) {
  TempDir dir;
  ProbeStates store(3);
  store.EnablePersistence(dir.path(), std::nullopt, std::nullopt);
  for (double t : {1.0, 2.0, 3.0}) probes::testing::DefineAndRecord(store, Result(t));
  EXPECT_EQ(store.Get("disk buffered")->baseline, 2);
  store.Flush();
  EXPECT_FALSE(std::filesystem::exists(dir.path() / kBaselineFileName));
}

TEST(ProbeStates, BaselinesForOpsKindsAreInOpsPerSecond) {
  ProbeStates store;
  for (int i = 0; i < 5; ++i) {
    ProbeResult r = Result(0);
    r.kind = probes::ProbeKind::kRandom;
    r.throughput_bytes_per_second.reset();
    r.ops_per_second["read"] = 1000 + i;
    probes::testing::DefineAndRecord(store, r);
  }
  auto rec = store.Get("disk buffered");
  EXPECT_EQ(rec->baseline, 1002);
  EXPECT_FALSE(rec->baseline_bytes_per_second());
  EXPECT_EQ(rec->baseline_ratio, 1004.0 / 1002);
}

}  // namespace
}  // namespace iodrift::probes
