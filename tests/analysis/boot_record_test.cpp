// The boot record (collectors/analysis/boot_record.h): fixed-uptime ratios taken once as
// reached, the last ratio, the worst with its verdict, roll-over to a new boot, 20 boots per
// probe, old-format files and corrupt record fields.
#include "collectors/analysis/boot_record.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "collectors/analysis/probe_states.h"
#include "tests/analysis/states_test_util.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
using namespace ::iodrift::analysis;  // NOLINT: tests of the analysis of probe results
namespace {

using testing::TempDir;
using namespace std::chrono_literals;

ProbeResult BootRun(double throughput, double uptime, const std::string& name = "disk") {
  ProbeResult r;
  r.name = name;
  r.kind = probes::ProbeKind::kBuffered;
  r.target = "/srv/probe";
  r.outcome = Outcome::kOk;
  r.spec_size = 64ull << 20;
  r.duration_seconds = 1;
  r.throughput_bytes_per_second = throughput;
  r.uptime_seconds = uptime;
  return r;
}

// A baseline of 100 formed by five runs in the first minutes of the boot.
ProbeBaseline Formed() {
  ProbeBaseline pb;
  for (int i = 0; i < 5; ++i) UpdateBaseline(pb, BootRun(100, 60 + i));
  return pb;
}

TEST(BootRecord, TakesEachFixedUptimeOnceAsReached) {
  ProbeBaseline pb = Formed();
  EXPECT_FALSE(pb.record.at[0]);  // an hour not reached yet
  UpdateBaseline(pb, BootRun(90, 3599));
  EXPECT_FALSE(pb.record.at[0]);
  UpdateBaseline(pb, BootRun(80, 3600));  // at the mark: taken
  UpdateBaseline(pb, BootRun(70, 4000));  // after it: the first run stays
  EXPECT_EQ(pb.record.at[0], 0.8);
  EXPECT_FALSE(pb.record.at[1]);
  UpdateBaseline(pb, BootRun(60, 86400 * 8));  // past 1 d's window (2 d), inside 7 d's
  EXPECT_EQ(pb.record.at[0], 0.8);
  EXPECT_FALSE(pb.record.at[1]);  // no run between 1 d and 2 d: not the ratio at 1 d
  EXPECT_EQ(pb.record.at[2], 0.6);
  EXPECT_FALSE(pb.record.at[3]);
  EXPECT_EQ(pb.record.last_ratio, 0.6);
  EXPECT_EQ(pb.record.last_uptime, 86400 * 8);
}

TEST(BootRecord, ADaemonStartedLateTakesOnlyTheMarkWhoseWindowItIsIn) {
  ProbeBaseline pb;
  for (int i = 0; i < 5; ++i) UpdateBaseline(pb, BootRun(100, 90000 + i));  // started at 25 h
  UpdateBaseline(pb, BootRun(70, 90010));
  EXPECT_FALSE(pb.record.at[0]);    // 1 h passed long ago: left absent, not filled with 25 h
  EXPECT_EQ(pb.record.at[1], 1.0);  // the run that formed the baseline, inside [1 d, 2 d)
  EXPECT_FALSE(pb.record.at[2]);
  EXPECT_EQ(pb.record.last_ratio, 0.7);
}

TEST(BootRecord, LastRatioFollowsTheLatestCountedRunOnly) {
  ProbeBaseline pb = Formed();
  UpdateBaseline(pb, BootRun(50, 200));
  UpdateBaseline(pb, BootRun(120, 300));
  EXPECT_EQ(pb.record.last_ratio, 1.2);
  EXPECT_EQ(pb.worst_ratio, 0.5);  // the last is not the worst
  ProbeResult cold = BootRun(10, 400);
  cold.suspect = {"cache_not_dropped"};  // not a valid figure: neither last nor worst
  UpdateBaseline(pb, cold);
  EXPECT_EQ(pb.record.last_ratio, 1.2);
  EXPECT_EQ(pb.record.last_uptime, 300);
  ProbeResult failed = BootRun(0, 500);
  failed.outcome = Outcome::kError;
  failed.throughput_bytes_per_second.reset();
  UpdateBaseline(pb, failed);
  EXPECT_EQ(pb.record.last_ratio, 1.2);
}

TEST(BootRecord, TheWorstRunKeepsTheVerdictNamedThen) {
  TempDir dir;
  ProbeStates states;
  states.EnablePersistence(dir.path(), "boot-a", 1764685000, 0s);
  for (int i = 0; i < 5; ++i) testing::DefineAndRecord(states, BootRun(100, 60 + i));
  testing::DefineAndRecord(states, BootRun(95, 200));  // no slowdown: the verdict says so
  auto pb = states.Baselines().probes.at("disk");
  EXPECT_EQ(pb.worst_ratio, 0.95);
  EXPECT_EQ(pb.record.worst_verdict, "undetermined");
  testing::DefineAndRecord(states, BootRun(99, 300));  // not the worst: the verdict stays
  EXPECT_EQ(states.Baselines().probes.at("disk").record.worst_verdict, "undetermined");
  EXPECT_EQ(states.Baselines().probes.at("disk").record.last_ratio, 0.99);
}

TEST(BootRecord, RollsOverToANewBootWithTheRecord) {
  BaselineState s;
  s.boot_id = "boot-a";
  s.boot_time_seconds = 1000;
  s.probes["disk"] = Formed();
  UpdateBaseline(s.probes["disk"], BootRun(40, 7000));
  s.probes["disk"].record.worst_verdict = "device";
  BaselineState next = ForBoot(s, "boot-b", 9000);
  EXPECT_TRUE(next.probes.empty());
  ASSERT_EQ(next.history.size(), 1u);
  const PastProbe& past = next.history[0].probes.at(0);
  EXPECT_EQ(past.record.at[0], 0.4);
  EXPECT_EQ(past.record.last_ratio, 0.4);
  EXPECT_EQ(past.record.worst_verdict, "device");
  next.probes["disk"] = Formed();
  const auto rows = BootsOf(next, "disk");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].current);
  EXPECT_EQ(rows[0].boot_id, "boot-b");
  EXPECT_FALSE(rows[0].record.at[0]);  // the new boot starts empty
  EXPECT_EQ(rows[1].boot_id, "boot-a");
  EXPECT_EQ(rows[1].record.worst_verdict, "device");
  EXPECT_EQ(BootProbeNames(next), std::vector<std::string>{"disk"});
}

TEST(BootRecord, TheTwentyFirstBootDropsTheOldest) {
  BaselineState s;
  for (int b = 0; b < 21; ++b) {
    s = ForBoot(std::move(s), "boot-" + std::to_string(b), 1000 + b);
    s.probes["disk"] = Formed();
    UpdateBaseline(s.probes["disk"], BootRun(10 + b, 7200));
  }
  auto rows = BootsOf(s, "disk");
  ASSERT_EQ(rows.size(), kMaxBootRecords);
  EXPECT_EQ(rows.front().boot_id, "boot-20");
  EXPECT_EQ(rows.back().boot_id, "boot-1");  // boot-0 dropped
  for (const auto& row : rows) EXPECT_TRUE(row.record.last_ratio) << row.boot_id;
  // In the file, boot-0 keeps its baseline and worst ratio but no record fields.
  s = ForBoot(std::move(s), "boot-21", 2000);
  ASSERT_EQ(s.history.front().boot_id, "boot-0");
  EXPECT_TRUE(s.history.front().probes[0].record.empty());
  EXPECT_TRUE(s.history.front().probes[0].worst_ratio);
  EXPECT_TRUE(s.history[1].probes[0].record.empty());  // boot-1 now the 20th past boot
  EXPECT_FALSE(s.history[2].probes[0].record.empty());
  auto parsed = ParseBaselineState(SerializeBaselineState(s));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(BootsOf(*parsed, "disk").size(), kMaxBootRecords - 1);  // no current entry yet
}

TEST(BootRecord, RoundTripsAndAnOldFormatFileLoads) {
  BaselineState s;
  s.boot_id = "boot-a";
  s.probes["disk"] = Formed();
  UpdateBaseline(s.probes["disk"], BootRun(40, 86400));
  s.probes["disk"].record.worst_verdict = "memory_reclaim";
  s = ForBoot(std::move(s), "boot-b", 5000);
  s.probes["disk"] = Formed();
  const std::string text = SerializeBaselineState(s);
  auto parsed = ParseBaselineState(text);
  ASSERT_TRUE(parsed) << parsed.error().message << "\n" << text;
  EXPECT_EQ(SerializeBaselineState(*parsed), text);
  EXPECT_EQ(parsed->history[0].probes[0].record, s.history[0].probes[0].record);
  EXPECT_EQ(parsed->probes.at("disk").record, s.probes.at("disk").record);

  // A file written before the record existed: 8-field probe and pastprobe lines.
  const std::string old =
      "iodrift-baselines 1\n"
      "boot boot-b 5000\n"
      "probe disk buffered /srv/probe 67108864 100 0.5 7200\n"
      "past boot-a 1000\n"
      "pastprobe disk buffered /srv/probe 67108864 100 0.4 86400\n"
      "end 5\n";
  auto loaded = ParseBaselineState(old);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_TRUE(loaded->probes.at("disk").record.empty());
  EXPECT_EQ(loaded->history[0].probes[0].worst_ratio, 0.4);
  const auto rows = BootsOf(*loaded, "disk");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].worst_ratio, 0.4);
  EXPECT_FALSE(rows[1].record.last_ratio);
  // Written back without record fields: still an 8-field line.
  EXPECT_NE(SerializeBaselineState(*loaded).find(
                "\npastprobe disk buffered /srv/probe 67108864 100 0.40000000000000002 86400\n"),
            std::string::npos);
}

TEST(BootRecord, ACorruptRecordFieldSetsTheFileAside) {
  const std::string good =
      "iodrift-baselines 1\n"
      "boot boot-b 5000\n"
      "past boot-a 1000\n"
      "pastprobe disk buffered /srv/probe 67108864 100 0.4 86400 device 0.9 0.4 - - 0.4 90000\n"
      "end 4\n";
  ASSERT_TRUE(ParseBaselineState(good));
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"device", "gremlins"},     // an unknown cause
           {" 0.9 ", " 0.9x "},        // a bad number
           {" 90000\n", "\n"},         // a record cut short
           {" 90000\n", " 90000 1\n"}  // one field too many
       }) {
    std::string bad = good;
    bad.replace(bad.find(from), from.size(), to);
    EXPECT_FALSE(ParseBaselineState(bad)) << bad;
  }
  TempDir dir;
  std::string bad = good;
  bad.replace(bad.find("device"), 6, "gremlins");
  std::ofstream(dir.path() / kBaselineFileName) << bad;
  LoadedBaselines loaded = LoadBaselines(dir.path(), "boot-b", 5000);
  EXPECT_TRUE(loaded.set_aside);
  EXPECT_TRUE(loaded.state.history.empty());
  std::ifstream in(loaded.corrupt_path);
  std::stringstream kept;
  kept << in.rdbuf();
  EXPECT_EQ(kept.str(), bad);  // the history in it survives, set aside
}

}  // namespace
}  // namespace iodrift::probes
