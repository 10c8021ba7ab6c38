// The recovery experiment's pure decision: control and repeats (a noisy but unchanged figure
// credits no step), the ladder order, the verdict note, the gates and the warm size.
#include "collectors/analysis/diagnose.h"

#include <gtest/gtest.h>

namespace iodrift::probes {
using namespace ::iodrift::analysis;  // NOLINT: tests of the analysis of probe results
namespace {

ProbeResult Buffered(double bytes_per_second, double sys_seconds = 0.1,
                     std::uint64_t mem_free = 5000) {
  ProbeResult r;
  r.name = "b";
  r.kind = ProbeKind::kBuffered;
  r.outcome = Outcome::kOk;
  r.bytes = 1ULL << 30;
  r.duration_seconds = static_cast<double>(r.bytes) / bytes_per_second;
  r.throughput_bytes_per_second = bytes_per_second;
  r.cpu_system_seconds = sys_seconds;
  r.context = {{"MemFree", mem_free}, {"Cached", 1000}};
  return r;
}

std::vector<ProbeResult> Runs(std::initializer_list<double> figures) {
  std::vector<ProbeResult> out;
  for (double f : figures) out.push_back(Buffered(f));
  return out;
}

// A report whose control measured `control` against baseline 1000.
DiagnoseReport WithControl(std::initializer_list<double> control, bool root = true) {
  DiagnoseReport r;
  r.probe = "b";
  r.baseline = 1000;
  r.root = root;
  DiagnoseStep c;
  c.step = "control";
  const auto runs = Runs(control);
  FillStep(c, runs, runs.front(), r.baseline, nullptr);
  r.steps.push_back(c);
  return r;
}

void AddStep(DiagnoseReport& r, const char* name, std::initializer_list<double> figures) {
  DiagnoseStep s;
  s.step = name;
  const auto runs = Runs(figures);
  FillStep(s, runs, Buffered(300), r.baseline, &r.steps.front());
  r.steps.push_back(s);
}

TEST(Diagnose, ANoisyButUnchangedFigureCreditsNoStep) {
  // The control wobbles between 0.50 and 0.95 of the baseline; every step draws from the same
  // range. One run per step (the old ladder) would have credited drop_caches with its 0.93.
  DiagnoseReport r = WithControl({700, 500, 950});
  EXPECT_FALSE(Restored(r.steps[0].ratio));  // median 0.70
  EXPECT_EQ(NextStep(r), "drop_caches");
  AddStep(r, "drop_caches", {930, 920, 940});  // median 0.93 but within the control's range
  EXPECT_TRUE(Restored(r.steps[1].ratio));
  EXPECT_FALSE(r.steps[1].cleared);
  EXPECT_FALSE(Recovering(r.steps[1]));
  EXPECT_EQ(NextStep(r), "drop_slab");
  AddStep(r, "drop_slab", {600, 940, 800});
  AddStep(r, "compact", {520, 710, 900});
  AddStep(r, "warm_free_memory", {940, 960, 930});  // its lowest is below the control's 950
  EXPECT_EQ(NextStep(r), "");
  Conclude(r);
  EXPECT_EQ(r.outcome, "not_recovered");
  EXPECT_EQ(r.recovered_by, "");
  EXPECT_NE(r.text.find("not recovered: ratio 0.70 (control 0.50–0.95); no step cleared the "
                        "control's spread (best: warming free memory 0.94)"),
            std::string::npos)
      << r.text;
  EXPECT_EQ(DiagnoseFigures(r).at("recovered"), 0);
  EXPECT_EQ(DiagnoseFigures(r).at("cleared.drop_caches"), 0);
  EXPECT_NEAR(DiagnoseFigures(r).at("spread.control"), 450, 1e-9);
}

TEST(Diagnose, AStepThatClearsTheControlAndRestoresIsCredited) {
  DiagnoseReport r = WithControl({310, 290, 330});
  r.direct_twin = "d";
  r.verdict = "hypervisor_reclaim";
  AddStep(r, "drop_caches", {320, 300, 340});
  AddStep(r, "drop_slab", {300, 310, 305});
  AddStep(r, "compact", {500, 480, 520});  // clears, still slow: partly
  EXPECT_EQ(NextStep(r), "warm_free_memory");
  AddStep(r, "warm_free_memory", {970, 960, 990});
  EXPECT_TRUE(Recovering(r.steps.back()));
  EXPECT_EQ(NextStep(r), "");
  Conclude(r);
  EXPECT_EQ(r.outcome, "recovered");
  EXPECT_EQ(r.recovered_by, "warm_free_memory");
  EXPECT_EQ(r.text,
            "recovered by warming free memory: ratio 0.31 (control 0.29–0.33) → 0.97; dropping "
            "caches did not help, dropping slab did not help and compaction helped partly; "
            "direct unchanged; agrees with the verdict (hypervisor_reclaim)");
  const auto figures = DiagnoseFigures(r);
  EXPECT_EQ(figures.at("recovered"), 1);
  EXPECT_NEAR(figures.at("ratio.warm_free_memory"), 0.97, 1e-9);
  EXPECT_NEAR(figures.at("time.wall.control"), (1ULL << 30) / 310.0, 1e-3);
  EXPECT_NE(DiagnoseDetails(r).find("warm_free_memory: median 970 of 3, spread 30, ratio 0.97 "
                                    "(clears the control)"),
            std::string::npos)
      << DiagnoseDetails(r);
}

TEST(Diagnose, PartialRecoveryIsSaidAndTheVerdictDifferenceExplained) {
  DiagnoseReport r = WithControl({200, 210, 190}, /*root=*/false);
  r.verdict = "page_allocation";
  for (const char* step : {"drop_caches", "drop_slab", "compact"}) {  // what the daemon records
    DiagnoseStep s;
    s.step = step;
    s.status = "skipped";
    s.reason = "needs root: run iodriftctl diagnose as root";
    r.steps.push_back(s);
  }
  EXPECT_EQ(NextStep(r), "warm_free_memory");
  AddStep(r, "warm_free_memory", {230, 200, 220});
  Conclude(r);
  EXPECT_EQ(r.outcome, "not_recovered");
  EXPECT_NE(r.text.find("dropping caches (skipped: needs root: run iodriftctl diagnose as root)"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("differs from the verdict (page_allocation): the steps that need root "
                        "(dropping caches, dropping slab and compaction) were not run"),
            std::string::npos)
      << r.text;

  DiagnoseReport partly = WithControl({200, 210, 190});
  partly.verdict = "device";
  AddStep(partly, "drop_caches", {600, 650, 620});
  Conclude(partly);
  EXPECT_EQ(partly.outcome, "improved");
  EXPECT_EQ(partly.recovered_by, "drop_caches");
  EXPECT_NE(partly.text.find("partly recovered by dropping caches: ratio 0.20 (control "
                             "0.19–0.21) → 0.62, still below 0.90"),
            std::string::npos)
      << partly.text;
  EXPECT_NE(partly.text.find("differs from the verdict (device)"), std::string::npos);

  // Clearing a narrow control by a sliver of the gap is not a partial recovery.
  DiagnoseReport sliver = WithControl({20, 21, 20});
  AddStep(sliver, "compact", {30, 31, 29});
  EXPECT_TRUE(sliver.steps.back().cleared);
  Conclude(sliver);
  EXPECT_EQ(sliver.outcome, "not_recovered");
  EXPECT_NE(sliver.text.find("compaction did not help"), std::string::npos) << sliver.text;
}

TEST(Diagnose, NotSlowFailedAbortedAndTheOrder) {
  DiagnoseReport empty;
  EXPECT_EQ(NextStep(empty), "control");
  DiagnoseReport fine = WithControl({950, 960, 940});
  EXPECT_EQ(NextStep(fine), "");
  Conclude(fine);
  EXPECT_EQ(fine.outcome, "not_slow");

  DiagnoseReport failed;
  failed.baseline = 1000;
  DiagnoseStep c;
  c.step = "control";
  ProbeResult bad;
  bad.outcome = Outcome::kTimeout;
  bad.error = "probe timed out";
  FillStep(c, {Buffered(300), bad}, Buffered(300), 1000, nullptr);
  EXPECT_EQ(c.status, "failed");
  failed.steps.push_back(c);
  EXPECT_EQ(NextStep(failed), "");
  Conclude(failed);
  EXPECT_EQ(failed.outcome, "failed");
  EXPECT_NE(failed.text.find("probe timed out"), std::string::npos);

  DiagnoseReport aborted = WithControl({300, 310, 320});
  AddStep(aborted, "drop_caches", {300, 305, 310});
  aborted.aborted = "probe b was changed by a reload";
  EXPECT_EQ(NextStep(aborted), "");
  Conclude(aborted);
  EXPECT_EQ(aborted.outcome, "aborted");
  EXPECT_NE(aborted.text.find("aborted: probe b was changed by a reload (nothing further "
                              "applied)"),
            std::string::npos)
      << aborted.text;
}

TEST(Diagnose, GatesNameTheLimit) {
  DiagnoseLimits limits;  // 512 MiB, memory 10 %, io 20 %
  EXPECT_FALSE(RefuseReason({4ULL << 30, 0.5, 1.0}, limits).has_value());
  auto psi = RefuseReason({4ULL << 30, 12.5, 0.0}, limits);
  ASSERT_TRUE(psi);
  EXPECT_NE(psi->find("PSI memory some avg10 12.50 %"), std::string::npos);
  auto io = RefuseReason({4ULL << 30, 0.0, 35.0}, limits);
  ASSERT_TRUE(io);
  EXPECT_NE(io->find("I/O pressure: PSI io some avg10 35.00 % is above 20.00 % "
                     "(diagnose.max_io_pressure)"),
            std::string::npos)
      << *io;
  auto low = RefuseReason({100ULL << 20, 0.0, 0.0}, limits);
  ASSERT_TRUE(low);
  EXPECT_NE(low->find("MemAvailable 100 MiB is below 512 MiB"), std::string::npos);
  EXPECT_TRUE(RefuseReason({std::nullopt, 0.0, 0.0}, limits).has_value());
}

TEST(Diagnose, WarmSizeCoversTheRunAndStaysWithinTheCgroupAndTheHost) {
  constexpr std::uint64_t kMiB = 1ULL << 20;
  std::string why;
  // A big host: a quarter of MemAvailable up to the cap.
  EXPECT_EQ(WarmBytes(64 * kMiB, 1024 * kMiB, 20480 * kMiB, 512 * kMiB, std::nullopt, why),
            1024 * kMiB);
  // The daemon's cgroup (256 MiB limit, 56 MiB used → 200 MiB headroom): half of it.
  EXPECT_EQ(WarmBytes(64 * kMiB, 1024 * kMiB, 20480 * kMiB, 512 * kMiB, 200 * kMiB, why),
            100 * kMiB);
  // Not enough room for what the run allocates: refused, naming the cgroup.
  EXPECT_FALSE(WarmBytes(64 * kMiB, 1024 * kMiB, 20480 * kMiB, 512 * kMiB, 100 * kMiB, why));
  EXPECT_NE(why.find("cannot warm the 64 MiB the run allocates: at most 50 MiB (half of what "
                     "the daemon's cgroup allows"),
            std::string::npos)
      << why;
  // A run bigger than the quarter: at least the run.
  EXPECT_EQ(WarmBytes(600 * kMiB, 1024 * kMiB, 2048 * kMiB, 512 * kMiB, std::nullopt, why),
            600 * kMiB);
  // The host keeps min_available.
  EXPECT_FALSE(WarmBytes(600 * kMiB, 1024 * kMiB, 1024 * kMiB, 512 * kMiB, std::nullopt, why));
  EXPECT_NE(why.find("MemAvailable"), std::string::npos) << why;

  EXPECT_EQ(CgroupV2Path("0::/system.slice/iodrift.service\n"), "/system.slice/iodrift.service");
  EXPECT_EQ(CgroupV2Path("12:memory:/x\n1:name=systemd:/y\n"), std::nullopt);
  EXPECT_EQ(ParseMemoryLimit("268435456\n"), 268435456u);
  EXPECT_EQ(ParseMemoryLimit("max\n"), std::nullopt);
  EXPECT_EQ(ParseMemoryLimit("12x"), std::nullopt);
}

}  // namespace
}  // namespace iodrift::probes
