#include "collectors/analysis/diagnose.h"

#include <gtest/gtest.h>

namespace iodrift::probes {
namespace {

ProbeResult Buffered(double bytes_per_second, double sys_seconds, std::uint64_t mem_free) {
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

DiagnoseStep Step(const char* name, const ProbeResult& run, const ProbeResult& first,
                  double baseline, std::optional<double> direct = std::nullopt,
                  bool direct_moved = false) {
  DiagnoseStep s;
  s.step = name;
  FillStep(s, run, first, baseline);
  s.direct_figure = direct;
  s.direct_moved = direct_moved;
  return s;
}

TEST(Diagnose, RecoveredByWarmingNamesTheStepAndTheStepsThatDidNotHelp) {
  DiagnoseReport r;
  r.probe = "b";
  r.direct_twin = "d";
  r.baseline = 1000;
  const auto first = Buffered(310, 1.16, 5000);
  r.steps.push_back(Step("measure", first, first, 1000, 900));
  r.steps.push_back(Step("drop_caches", Buffered(320, 1.1, 6000), first, 1000, 910));
  r.steps.push_back(Step("drop_slab", Buffered(300, 1.2, 6000), first, 1000, 890));
  r.steps.push_back(Step("compact", Buffered(330, 1.1, 6000), first, 1000, 905));
  r.steps.push_back(Step("warm_free_memory", Buffered(970, 0.1, 4000), first, 1000, 920));
  Conclude(r);
  EXPECT_EQ(r.outcome, "recovered");
  EXPECT_EQ(r.recovered_by, "warm_free_memory");
  EXPECT_EQ(r.text,
            "recovered by warming free memory: ratio 0.31 → 0.97; dropping caches, dropping "
            "slab and compaction did not help; direct unchanged");
  EXPECT_EQ(r.steps[1].memory_delta.at("MemFree"), 1000);
  EXPECT_NEAR(r.steps[0].time_parts.at("cpu_system_per_gib"), 1.16, 1e-9);
  auto figures = DiagnoseFigures(r);
  EXPECT_EQ(figures.at("recovered"), 1);
  EXPECT_NEAR(figures.at("ratio.warm_free_memory"), 0.97, 1e-9);
  EXPECT_EQ(figures.at("direct_moved.compact"), 0);
  EXPECT_NE(DiagnoseDetails(r).find("warm_free_memory: figure 970, ratio 0.97"), std::string::npos);
}

TEST(Diagnose, ADeviceSlowdownIsNotRecoveredAndSaysDirectMoved) {
  DiagnoseReport r;
  r.probe = "b";
  r.direct_twin = "d";
  r.baseline = 1000;
  const auto first = Buffered(200, 0.1, 5000);
  r.steps.push_back(Step("measure", first, first, 1000, 180));
  r.steps.push_back(Step("drop_caches", Buffered(210, 0.1, 5000), first, 1000, 185));
  DiagnoseStep skipped;
  skipped.step = "drop_slab";
  skipped.status = "skipped";
  skipped.reason = "cannot open /proc/sys/vm/drop_caches: Permission denied";
  r.steps.push_back(skipped);
  r.steps.push_back(Step("compact", Buffered(190, 0.1, 5000), first, 1000, 400, true));
  r.steps.push_back(Step("warm_free_memory", Buffered(205, 0.1, 5000), first, 1000, 410, true));
  Conclude(r);
  EXPECT_EQ(r.outcome, "not_recovered");
  EXPECT_EQ(r.recovered_by, "");
  EXPECT_NE(r.text.find("not recovered: ratio 0.20 → 0.20"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("dropping slab (skipped: cannot open"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("direct moved too"), std::string::npos) << r.text;
  EXPECT_EQ(DiagnoseFigures(r).at("recovered"), 0);
  EXPECT_EQ(DiagnoseFigures(r).count("ratio.drop_slab"), 0u);
}

TEST(Diagnose, NotSlowFailedAndNoBaseline) {
  DiagnoseReport r;
  r.baseline = 1000;
  const auto first = Buffered(950, 0.1, 5000);
  r.steps.push_back(Step("measure", first, first, 1000));
  Conclude(r);
  EXPECT_EQ(r.outcome, "not_slow");

  DiagnoseReport failed;
  failed.baseline = 1000;
  ProbeResult bad;
  bad.outcome = Outcome::kTimeout;
  bad.error = "probe timed out";
  failed.steps.push_back(Step("measure", bad, bad, 1000));
  Conclude(failed);
  EXPECT_EQ(failed.outcome, "failed");
  EXPECT_NE(failed.text.find("probe timed out"), std::string::npos);

  DiagnoseReport none;
  none.steps.push_back(Step("measure", first, first, 0));
  none.baseline.reset();
  Conclude(none);
  EXPECT_EQ(none.outcome, "failed");
}

TEST(Diagnose, RefusedUnderMemoryPressure) {
  EXPECT_FALSE(RefuseReason(4ULL << 30, 0.5, 512ULL << 20, 10).has_value());
  auto psi = RefuseReason(4ULL << 30, 12.5, 512ULL << 20, 10);
  ASSERT_TRUE(psi);
  EXPECT_NE(psi->find("PSI memory some avg10 12.50 %"), std::string::npos);
  auto low = RefuseReason(100ULL << 20, 0, 512ULL << 20, 10);
  ASSERT_TRUE(low);
  EXPECT_NE(low->find("MemAvailable 100 MiB is below 512 MiB"), std::string::npos);
  EXPECT_TRUE(RefuseReason(std::nullopt, 0, 512ULL << 20, 10).has_value());
}

}  // namespace
}  // namespace iodrift::probes
