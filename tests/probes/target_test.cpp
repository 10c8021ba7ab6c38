// Target classification, the probe file made inside a directory, target facts, O_DIRECT
// alignment and device keys — on real files in a temporary directory.
#include "collectors/probes/target.h"

#include <sys/sysmacros.h>

#include <fstream>

#include <gtest/gtest.h>

#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

using testing::TempDir;

TEST(ClassifyTarget, TellsFilesDirectoriesAndRefusesOtherTypes) {
  TempDir dir;
  ASSERT_TRUE(testing::WriteRandomFile(dir.path() / "f", 4096));
  EXPECT_EQ(ClassifyTarget((dir.path() / "f").string()), TargetType::kRegularFile);
  EXPECT_EQ(ClassifyTarget(dir.str()), TargetType::kDirectory);
  auto missing = ClassifyTarget(dir.str() + "/nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ENOENT);
  EXPECT_NE(missing.error().message.find(dir.str() + "/nope"), std::string::npos);
  auto chr = ClassifyTarget("/dev/null");
  ASSERT_FALSE(chr);
  EXPECT_NE(chr.error().message.find("character device"), std::string::npos);
}

TEST(EnsureProbeFile, WritesRandomDataOnceAndNeverRewritesIt) {
  TempDir dir;
  const auto file = dir.path() / std::string(kProbeFileName);
  RunControl control;
  auto created = EnsureProbeFile(file, 3 << 20, control);
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_TRUE(*created);
  struct stat st1 {};
  ASSERT_EQ(stat(file.c_str(), &st1), 0);
  EXPECT_EQ(st1.st_size, 3 << 20);
  EXPECT_EQ(st1.st_mode & 0777, 0600u);
  // Real data: no all-zero 4 KiB block (fallocate would read back zeros), blocks differ.
  std::ifstream in(file, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(data.size(), 3u << 20);
  for (std::size_t off = 0; off < data.size(); off += 4096) {
    ASSERT_NE(data.substr(off, 4096), std::string(4096, '\0')) << "zero block at " << off;
  }
  EXPECT_NE(data.substr(0, 4096), data.substr(4096, 4096));
  // Allocated on disk, not sparse.
  EXPECT_GE(static_cast<std::uint64_t>(st1.st_blocks) * 512, 3ull << 20);

  auto again = EnsureProbeFile(file, 8 << 20, control);
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);
  struct stat st2 {};
  ASSERT_EQ(stat(file.c_str(), &st2), 0);
  EXPECT_EQ(st2.st_ino, st1.st_ino);
  EXPECT_EQ(st2.st_size, st1.st_size);
  EXPECT_EQ(st2.st_mtim.tv_nsec, st1.st_mtim.tv_nsec);
  // Only the probe file is in the directory (no temporaries left).
  int entries = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(EnsureProbeFile, LeavesNothingBehindWhenCancelled) {
  TempDir dir;
  std::atomic<bool> cancel{true};
  RunControl control;
  control.cancel = &cancel;
  auto created = EnsureProbeFile(dir.path() / "p.dat", 4 << 20, control);
  ASSERT_FALSE(created);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(PrepareDataTarget, ReadsTheProbeFileInsideADirectory) {
  TempDir dir;
  RunControl control;
  auto dt = PrepareDataTarget(dir.str(), 2 << 20, control);
  ASSERT_TRUE(dt) << dt.error().message;
  EXPECT_EQ(dt->type, TargetType::kDirectory);
  EXPECT_EQ(dt->path, (dir.path() / std::string(kProbeFileName)).string());
  EXPECT_EQ(dt->size, 2u << 20);
  EXPECT_TRUE(dt->created_probe_file);
  std::ofstream(dir.path() / "empty").close();
  auto empty = PrepareDataTarget((dir.path() / "empty").string(), 0, control);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("empty"), std::string::npos);
}

TEST(DescribeTarget, NamesTheFilesystemOfTmpAndDevShm) {
  TempDir dir;
  ASSERT_TRUE(testing::WriteRandomFile(dir.path() / "f", 4096));
  auto mounts = ParseMountinfo(*ReadWholeFile("/proc/self/mountinfo"));
  struct stat st {};
  ASSERT_EQ(stat(dir.path().c_str(), &st), 0);
  std::string want;
  for (const auto& m : mounts) {
    if (makedev(m.major, m.minor) == st.st_dev) want = m.fstype;
  }
  const TargetInfo info = DescribeTarget((dir.path() / "f").string(), "/sys");
  EXPECT_EQ(info.fstype, want);
  EXPECT_FALSE(info.fstype.empty());
  if (major(st.st_dev) != 0) {  // on a block device: queue facts are known
    EXPECT_FALSE(info.device.empty());
    EXPECT_FALSE(info.scheduler.empty());
    EXPECT_FALSE(info.read_ahead_kb.empty());
    EXPECT_TRUE(info.rotational == "0" || info.rotational == "1");
    EXPECT_GT(info.logical_block_size, 0u);
  }
  if (std::filesystem::is_directory("/dev/shm")) {
    const std::string shm = "/dev/shm/iodrift-test-" + std::to_string(getpid());
    ASSERT_TRUE(testing::WriteRandomFile(shm, 4096));
    EXPECT_EQ(DescribeTarget(shm, "/sys").fstype, "tmpfs");
    EXPECT_EQ(DescribeTarget(shm, "/sys").device, "");
    unlink(shm.c_str());
  }
}

TEST(QueryDioAlignment, UsesStatxOnAFileThatSupportsODirect) {
  TempDir dir;
  ASSERT_TRUE(testing::WriteRandomFile(dir.path() / "f", 1 << 20));
  auto fd = OpenReadOnly((dir.path() / "f").string(), O_DIRECT);
  if (!fd) GTEST_SKIP() << "no O_DIRECT on /tmp here: " << fd.error().message;
  const DioAlignment a = QueryDioAlignment(fd->get(), "/sys");
  EXPECT_FALSE(a.refused);
  EXPECT_GE(a.mem_align, 4096u);
  EXPECT_GT(a.offset_align, 0u);
  EXPECT_EQ(4096 % a.offset_align, 0u);
}

TEST(DeviceKey, GroupsPathsByFilesystemWithoutTouchingThem) {
  TempDir dir;
  auto spec = testing::MakeSpec("a", probes::ProbeKind::kBuffered, dir.str() + "/x");
  auto spec2 = testing::MakeSpec("b", probes::ProbeKind::kMetadata, dir.str());
  // A path that does not exist (or would hang) still gets a key: nothing is stat()ed.
  auto ghost = testing::MakeSpec("c", probes::ProbeKind::kDirect, dir.str() + "/no/such/dir");
  EXPECT_EQ(DeviceKey(spec), DeviceKey(spec2));
  EXPECT_EQ(DeviceKey(spec), DeviceKey(ghost));
  auto mem = testing::MakeSpec("m", probes::ProbeKind::kMemory, "");
  EXPECT_EQ(DeviceKey(mem), "memory");
  auto shm = testing::MakeSpec("s", probes::ProbeKind::kCached, "/dev/shm/x");
  EXPECT_NE(DeviceKey(shm), DeviceKey(spec));
  EXPECT_EQ(DeviceKey(shm).rfind("dev:0:", 0), 0u) << DeviceKey(shm);
}

}  // namespace
}  // namespace iodrift::probes
