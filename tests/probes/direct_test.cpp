// The `direct` probe: O_DIRECT reads on a filesystem that takes them, and a clean "unsupported"
// (never a silent buffered read) where O_DIRECT is refused — ramfs on Linux 6.18; tmpfs accepts
// O_DIRECT since 6.6 and is measured but labelled memory-backed.
#include "collectors/probes/direct.h"

#include <gtest/gtest.h>

#include "collectors/probes/io_util.h"
#include "collectors/probes/runner.h"
#include "tests/lib/ci_guarantee.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

using testing::TempDir;

TEST(DirectProbe, ReadsTheByteBudgetWithODirect) {
  TempDir dir;
  const std::string file = (dir.path() / "f").string();
  ASSERT_TRUE(testing::WriteRandomFile(file, 16 << 20));
  if (!OpenReadOnly(file, O_DIRECT)) GTEST_SKIP() << "/tmp has no O_DIRECT here";
  auto spec = testing::MakeSpec("d", probes::ProbeKind::kDirect, file, 16 << 20);
  spec.time_budget = std::chrono::seconds(10);
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(dir.path()));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_TRUE(r.supported);
  EXPECT_EQ(r.bytes, 16u << 20);
  ASSERT_TRUE(r.throughput_bytes_per_second);
  EXPECT_GT(*r.throughput_bytes_per_second, 0);
  EXPECT_NEAR(*r.throughput_bytes_per_second, r.bytes / r.extra.at("read_seconds"),
              *r.throughput_bytes_per_second * 1e-9);
  EXPECT_GE(r.extra.at("mem_align"), 4096);
  EXPECT_EQ(
      static_cast<std::uint64_t>(r.bytes) % static_cast<std::uint64_t>(r.extra.at("offset_align")),
      0u);
}

TEST(DirectProbe, ReadsTheProbeFileOfADirectoryTargetAndCalibrates) {
  TempDir dir;
  auto spec = testing::MakeSpec("d", probes::ProbeKind::kDirect, dir.str(), 0);
  auto env = testing::MakeEnv(dir.path() / "state");
  const ProbeResult r = RunProbe(spec, env);
  // The probe's own "unsupported" must be the machine's answer, not a way out of the test.
  const std::string check = (dir.path() / "odirect-check").string();
  ASSERT_TRUE(testing::WriteRandomFile(check, 1 << 20));
  if (!testing::MachineReadsWithODirect(check)) {
    EXPECT_EQ(r.outcome, Outcome::kSkipped);
    EXPECT_FALSE(r.supported) << "O_DIRECT fails in " << dir.str() << " but the probe ran";
    return;
  }
  ASSERT_TRUE(r.supported) << "O_DIRECT works in " << dir.str() << ": " << r.error;
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_EQ(r.extra.at("probe_file_created"), 1);
  EXPECT_EQ(r.extra.at("calibrated"), 1);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "state/calibration/d"));
  EXPECT_GT(r.bytes, 0u);
}

TEST(DirectProbe, IsUnsupportedWhereTheFilesystemRefusesODirect) {
  TempDir dir;
  auto run = testing::RunInPrivateMountNamespace([&]() -> std::map<std::string, std::string> {
    if (mount("iodrift-ramfs", dir.path().c_str(), "ramfs", 0, nullptr) != 0) {
      return {{"mount", "failed"}};
    }
    const std::string file = (dir.path() / "f").string();
    if (!testing::WriteRandomFile(file, 1 << 20)) return {{"write", "failed"}};
    auto m = testing::Summarize(RunProbe(
        testing::MakeSpec("d", probes::ProbeKind::kDirect, file, 1 << 20), testing::MakeEnv("")));
    umount2(dir.path().c_str(), MNT_DETACH);
    return m;
  });
  if (!run.skip_reason.empty()) IODRIFT_SKIP_GUARANTEED(run.skip_reason);
  ASSERT_EQ(run.values["mount"], "") << "ramfs mount failed";
  EXPECT_EQ(run.values["outcome"], "skipped") << run.values["error"];
  EXPECT_EQ(run.values["supported"], "0");
  EXPECT_EQ(run.values["bytes"], "0");  // nothing read: no buffered fallback
  EXPECT_EQ(run.values["fstype"], "ramfs");
  EXPECT_NE(run.values["error"].find("O_DIRECT"), std::string::npos) << run.values["error"];
}

TEST(DirectProbe, MeasuresTmpfsButLabelsItMemoryBacked) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  const std::string file = "/dev/shm/iodrift-direct-" + std::to_string(getpid());
  ASSERT_TRUE(testing::WriteRandomFile(file, 4 << 20));
  const ProbeResult r = RunProbe(testing::MakeSpec("d", probes::ProbeKind::kDirect, file, 4 << 20),
                                 testing::MakeEnv(""));
  unlink(file.c_str());
  if (r.outcome == Outcome::kSkipped) {
    // A kernel before 6.6: tmpfs refuses O_DIRECT, which must then be reported, not faked.
    EXPECT_FALSE(r.supported);
    return;
  }
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_EQ(r.target_info.fstype, "tmpfs");
  EXPECT_NE(std::find(r.suspect.begin(), r.suspect.end(), "memory_backed_fs"), r.suspect.end());
}

}  // namespace
}  // namespace iodrift::probes
