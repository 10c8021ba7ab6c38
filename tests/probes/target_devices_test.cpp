// A directory target must stay on the filesystem it was first probed on: after a lazy unmount
// the bare mount point on the parent filesystem must not be measured (or written to).
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "collectors/probes/runner.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

TEST(TargetDevices, RecordsTheFirstDeviceAndReportsAChange) {
  TargetDevices devices;
  EXPECT_EQ(devices.CheckOrRecord("/a", 7), std::nullopt);
  EXPECT_EQ(devices.CheckOrRecord("/a", 7), std::nullopt);
  EXPECT_EQ(devices.CheckOrRecord("/a", 8), 7u);
  EXPECT_EQ(devices.CheckOrRecord("/b", 8), std::nullopt);
}

TEST(RunProbe, RefusesADirectoryTargetThatMovedToAnotherFilesystem) {
  testing::TempDir dir;
  probes::ProbeSpec spec;
  spec.name = "moved";
  spec.kind = probes::ProbeKind::kMetadata;
  spec.target = dir.path().string();
  ProbeEnv env;
  env.target_devices = std::make_shared<TargetDevices>();
  struct stat st {};
  ASSERT_EQ(::stat(spec.target.c_str(), &st), 0);
  // Pretend it was first seen on another device (as before a lazy unmount).
  env.target_devices->CheckOrRecord(spec.target, st.st_dev + 1);
  ProbeResult result = RunProbe(spec, env);
  EXPECT_EQ(result.outcome, Outcome::kError);
  EXPECT_NE(result.error.find("is now on device"), std::string::npos) << result.error;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "iodrift-meta"));  // nothing written there
  // Same device: the probe runs.
  ProbeEnv same;
  same.target_devices = std::make_shared<TargetDevices>();
  EXPECT_EQ(RunProbe(spec, same).outcome, Outcome::kOk);
  EXPECT_EQ(RunProbe(spec, same).outcome, Outcome::kOk);
}

}  // namespace
}  // namespace iodrift::probes
