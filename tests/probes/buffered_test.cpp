// The `buffered` probe on real files: the cache is dropped first (and proven dropped), the
// bytes go through the page cache, nothing stays cached afterwards, the budget is calibrated
// once and kept; on tmpfs, where fadvise is a no-op, the run is skipped as unsupported.
#include "collectors/probes/buffered.h"

#include <gtest/gtest.h>

#include "collectors/probes/calibration.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/runner.h"
#include "tests/lib/ci_guarantee.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

using testing::TempDir;

double Resident(const std::string& path) {
  auto fd = OpenReadOnly(path);
  if (!fd) return -1;
  struct stat st {};
  fstat(fd->get(), &st);
  auto r = MeasureResidency(fd->get(), 0, static_cast<std::uint64_t>(st.st_size));
  return r ? r->Fraction() : -1;
}

void Warm(const std::string& path) {
  auto fd = OpenReadOnly(path);
  std::string buf(1 << 20, '\0');
  while (fd && read(fd->get(), buf.data(), buf.size()) > 0) {
  }
}

TEST(BufferedProbe, ReadsTheWholeBudgetFromADroppedCacheAndLeavesNoFootprint) {
  TempDir dir;
  const std::string file = (dir.path() / "f").string();
  ASSERT_TRUE(testing::WriteRandomFile(file, 16 << 20));
  Warm(file);  // fully cached before the probe: the probe must drop it
  ASSERT_GT(Resident(file), 0.99);
  auto spec = testing::MakeSpec("b", probes::ProbeKind::kBuffered, file, 16 << 20);
  spec.time_budget = std::chrono::seconds(10);  // the byte budget decides
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(dir.path()));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_EQ(r.bytes, 16u << 20);
  EXPECT_EQ(r.extra.at("region_bytes"), 16 << 20);
  EXPECT_LE(r.extra.at("resident_before_fraction"), kMaxResidentFraction);
  EXPECT_GT(r.extra.at("resident_after_fraction"), 0.9);  // the bytes went through the cache
  EXPECT_LT(Resident(file), 0.01);                        // and were dropped again
  ASSERT_TRUE(r.throughput_bytes_per_second);
  EXPECT_NEAR(*r.throughput_bytes_per_second, r.bytes / r.extra.at("read_seconds"),
              *r.throughput_bytes_per_second * 1e-9);
  EXPECT_LE(r.extra.at("read_seconds"), r.duration_seconds);
  EXPECT_EQ(r.extra.at("stopped_by_time_budget"), 0);
  EXPECT_TRUE(std::find(r.suspect.begin(), r.suspect.end(), "cache_not_dropped") ==
              r.suspect.end());
  EXPECT_TRUE(r.supported);
  EXPECT_GE(r.cpu_system_seconds + r.cpu_user_seconds, 0.0);
  EXPECT_TRUE(r.extra.count("system_cpu_seconds_per_gib"));
  EXPECT_FALSE(r.context.empty());
}

TEST(BufferedProbe, StopsAtTheTimeBudgetBeforeTheByteBudget) {
  TempDir dir;
  const std::string file = (dir.path() / "f").string();
  ASSERT_TRUE(testing::WriteRandomFile(file, 64 << 20));
  auto spec = testing::MakeSpec("b", probes::ProbeKind::kBuffered, file, 64 << 20);
  spec.time_budget = std::chrono::milliseconds(1);
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(dir.path()));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_LT(r.bytes, 64u << 20);
  EXPECT_GE(r.bytes, 1u << 20);  // the first chunk is always read
  EXPECT_EQ(r.extra.at("stopped_by_time_budget"), 1);
}

TEST(BufferedProbe, CalibratesTheBudgetOnceAndKeepsIt) {
  TempDir dir;
  TempDir state;
  auto env = testing::MakeEnv(state.path());
  env.probe_file_bytes = 32 << 20;
  auto spec = testing::MakeSpec("cal", probes::ProbeKind::kBuffered, dir.str(), 0);
  spec.time_budget = std::chrono::milliseconds(50);
  const ProbeResult first = RunProbe(spec, env);
  ASSERT_EQ(first.outcome, Outcome::kOk) << first.error;
  EXPECT_EQ(first.extra.at("calibrated"), 1);
  auto stored = LoadCalibration(state.path(), spec);
  ASSERT_TRUE(stored);
  EXPECT_GE(*stored, kMinCalibratedBytes);
  EXPECT_LE(*stored, kMaxCalibratedBytes);
  EXPECT_EQ(*stored, static_cast<std::uint64_t>(first.extra.at("budget_bytes")));

  spec.time_budget = std::chrono::seconds(10);
  const ProbeResult second = RunProbe(spec, env);
  ASSERT_EQ(second.outcome, Outcome::kOk) << second.error;
  EXPECT_FALSE(second.extra.count("calibrated"));
  EXPECT_EQ(second.bytes, std::min<std::uint64_t>(*stored, 32 << 20));  // clipped to the file
  EXPECT_EQ(LoadCalibration(state.path(), spec), stored);
}

TEST(BufferedProbe, IsUnsupportedOnTmpfsWhereFadviseIsIgnored) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  const std::string file = "/dev/shm/iodrift-buffered-" + std::to_string(getpid());
  ASSERT_TRUE(testing::WriteRandomFile(file, 4 << 20));
  auto spec = testing::MakeSpec("b", probes::ProbeKind::kBuffered, file, 4 << 20);
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(""));
  unlink(file.c_str());
  EXPECT_EQ(r.outcome, Outcome::kSkipped) << r.error;
  EXPECT_FALSE(r.supported);
  EXPECT_NE(std::find(r.suspect.begin(), r.suspect.end(), "cache_not_dropped"), r.suspect.end());
  EXPECT_EQ(r.bytes, 0u);
  EXPECT_NE(r.error.find("tmpfs"), std::string::npos) << r.error;
}

TEST(BufferedProbe, ReportsPermissionDeniedForAnUnreadableFile) {
  TempDir dir;
  const std::string file = (dir.path() / "secret").string();
  ASSERT_TRUE(testing::WriteRandomFile(file, 1 << 20));
  ASSERT_EQ(chmod(file.c_str(), 0600), 0);
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  auto spec = testing::MakeSpec("b", probes::ProbeKind::kBuffered, file, 1 << 20);
  auto body = [&]() -> std::map<std::string, std::string> {
    if (geteuid() == 0 && setresuid(65534, 65534, 65534) != 0) return {{"setuid", "failed"}};
    return testing::Summarize(RunProbe(spec, testing::MakeEnv("")));
  };
  std::map<std::string, std::string> v;
  if (geteuid() == 0) {
    // Drop to nobody in a child (the file is root's, mode 0600).
    auto run = testing::RunInPrivateMountNamespace(body);
    if (!run.skip_reason.empty()) IODRIFT_SKIP_GUARANTEED(run.skip_reason);
    v = run.values;
  } else {
    ASSERT_EQ(chmod(file.c_str(), 0), 0);
    v = body();
  }
  EXPECT_EQ(v["outcome"], "error");
  EXPECT_NE(v["error"].find("permission denied"), std::string::npos) << v["error"];
  EXPECT_NE(v["error"].find(file), std::string::npos) << v["error"];
}

}  // namespace
}  // namespace iodrift::probes
