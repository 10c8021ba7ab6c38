// The `metadata` probe: fixed-name create/stat/delete in its own subdirectory, nothing left
// behind on success or failure (ENOSPC, EROFS), nothing touched outside iodrift-meta.
#include "collectors/probes/metadata.h"

#include <fstream>

#include <gtest/gtest.h>

#include "collectors/probes/runner.h"
#include "collectors/probes/target.h"
#include "tests/lib/ci_guarantee.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

using testing::TempDir;

std::size_t CountEntries(const std::filesystem::path& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); ++it)
    ++n;
  return n;
}

TEST(MetadataProbe, CreatesStatsAndDeletesEveryFileAndLeavesTheDirectoryEmpty) {
  TempDir dir;
  std::ofstream(dir.path() / "users-file") << "keep me";
  auto spec = testing::MakeSpec("m", probes::ProbeKind::kMetadata, dir.str());
  spec.files = 40;
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(""));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  ASSERT_TRUE(r.latency);
  EXPECT_EQ(r.latency->count, 3u * 40);
  for (const char* op : {"create", "stat", "delete"}) {
    EXPECT_GT(r.ops_per_second.at(op), 0) << op;
    // bonnie++'s definition (N / phase wall time) counts the gaps between calls too: never faster.
    const std::string op_s(op);
    EXPECT_GT(r.extra.at(op_s + "_wall_ops_per_second"), 0) << op;
    EXPECT_LE(r.extra.at(op_s + "_wall_ops_per_second"), r.ops_per_second.at(op) * 1.0001) << op;
    EXPECT_GT(r.extra.at(op_s + "_p50_seconds"), 0) << op;  // 40 samples: a median
  }
  EXPECT_EQ(r.extra.at("files"), 40);
  EXPECT_EQ(r.extra.at("leftovers_removed"), 0);
  EXPECT_EQ(r.bytes, 0u);
  const auto meta = dir.path() / std::string(kMetaDirName);
  EXPECT_TRUE(std::filesystem::is_directory(meta));
  EXPECT_EQ(CountEntries(meta), 0u);
  EXPECT_EQ(CountEntries(dir.path()), 2u);  // the user's file and iodrift-meta, nothing else
  std::ifstream in(dir.path() / "users-file");
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "keep me");
}

TEST(MetadataProbe, RemovesLeftoversOfACrashedRunFirst) {
  TempDir dir;
  const auto meta = *EnsureMetaDir(dir.path());
  std::ofstream(meta / "f003").close();
  std::ofstream(meta / "f010").close();
  const ProbeResult r = RunProbe(testing::MakeSpec("m", probes::ProbeKind::kMetadata, dir.str()),
                                 testing::MakeEnv(""));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;  // O_EXCL would have failed on a leftover
  EXPECT_EQ(r.extra.at("leftovers_removed"), 2);
  EXPECT_EQ(CountEntries(meta), 0u);
}

TEST(MetadataProbe, ReportsNoPhaseMedianFromFewerThanTenFiles) {
  TempDir dir;
  auto spec = testing::MakeSpec("m", probes::ProbeKind::kMetadata, dir.str());
  spec.files = 5;
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(""));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  for (const char* op : {"create", "stat", "delete"}) {
    EXPECT_EQ(r.extra.count(std::string(op) + "_p50_seconds"), 0u) << op;
    EXPECT_GT(r.ops_per_second.at(op), 0) << op;  // the rate needs no minimum
  }
  ASSERT_TRUE(r.latency);
  EXPECT_EQ(r.latency->count, 15u);  // 3 × 5: a median of all operations, no p99
  EXPECT_TRUE(r.latency->p50_seconds.has_value());
  EXPECT_FALSE(r.latency->p99_seconds.has_value());
}

TEST(MetadataProbe, NeedsADirectoryTarget) {
  TempDir dir;
  ASSERT_TRUE(testing::WriteRandomFile(dir.path() / "f", 4096));
  const ProbeResult r =
      RunProbe(testing::MakeSpec("m", probes::ProbeKind::kMetadata, (dir.path() / "f").string()),
               testing::MakeEnv(""));
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.error.find("directory"), std::string::npos) << r.error;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / std::string(kMetaDirName)));
}

TEST(MetadataProbe, FailsOnENOSPCWithoutLeavingPartialFiles) {
  TempDir dir;
  auto run = testing::RunInPrivateMountNamespace([&]() -> std::map<std::string, std::string> {
    if (mount("iodrift-tmpfs", dir.path().c_str(), "tmpfs", 0, "nr_inodes=12,size=1m") != 0) {
      return {{"mount", "failed"}};
    }
    auto m = testing::Summarize(RunProbe(
        testing::MakeSpec("m", probes::ProbeKind::kMetadata, dir.str()), testing::MakeEnv("")));
    m["left"] = std::to_string(CountEntries(dir.path() / std::string(kMetaDirName)));
    umount2(dir.path().c_str(), MNT_DETACH);
    return m;
  });
  if (!run.skip_reason.empty()) IODRIFT_SKIP_GUARANTEED(run.skip_reason);
  ASSERT_EQ(run.values["mount"], "");
  EXPECT_EQ(run.values["outcome"], "error");
  EXPECT_NE(run.values["error"].find("no space left"), std::string::npos) << run.values["error"];
  EXPECT_NE(run.values["error"].find("create "), std::string::npos) << run.values["error"];
  EXPECT_EQ(run.values["left"], "0");
}

TEST(MetadataProbe, FailsOnAReadOnlyFilesystem) {
  TempDir dir;
  auto run = testing::RunInPrivateMountNamespace([&]() -> std::map<std::string, std::string> {
    if (mount("iodrift-tmpfs", dir.path().c_str(), "tmpfs", 0, "size=1m") != 0) {
      return {{"mount", "failed"}};
    }
    mkdir((dir.path() / std::string(kMetaDirName)).c_str(), 0700);
    if (mount(nullptr, dir.path().c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
      return {{"mount", "remount failed"}};
    }
    auto m = testing::Summarize(RunProbe(
        testing::MakeSpec("m", probes::ProbeKind::kMetadata, dir.str()), testing::MakeEnv("")));
    umount2(dir.path().c_str(), MNT_DETACH);
    return m;
  });
  if (!run.skip_reason.empty()) IODRIFT_SKIP_GUARANTEED(run.skip_reason);
  ASSERT_EQ(run.values["mount"], "");
  EXPECT_EQ(run.values["outcome"], "error");
  EXPECT_NE(run.values["error"].find("read-only file system"), std::string::npos)
      << run.values["error"];
}

}  // namespace
}  // namespace iodrift::probes
