// The residency witnesses (residency_witness.h): the pure rules, the thread's own read_bytes on
// reads the page cache served and reads the device served, and the buffered and cached probes as
// an unprivileged user who may read a root-owned file but not write it — where the kernel hides
// the page cache from mincore and cachestat and only read_bytes can tell (the service user's
// case). The held-pages test is the witness failing: it would pass if the witness always said
// "from the device".
#include "collectors/probes/residency_witness.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "collectors/probes/buffered.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/runner.h"
#include "collectors/probes/target.h"
#include "collectors/proc/task_io.h"
#include "tests/lib/ci_guarantee.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

constexpr uid_t kNobody = 65534;

TEST(ResidencyWitness, FromStorageNeedsNinetyNinePercentOfTheBytesTimed) {
  EXPECT_TRUE(ReadFromStorage(100 << 20, 100 << 20));
  EXPECT_TRUE(ReadFromStorage(1000, 990));
  EXPECT_FALSE(ReadFromStorage(1000, 989));
  EXPECT_FALSE(ReadFromStorage(64 << 20, 0));  // every byte a page-cache hit
  // Readahead past the last byte read and filesystem metadata: more than was timed is fine.
  EXPECT_TRUE(ReadFromStorage(64 << 20, (64 << 20) + (2 << 20)));
  EXPECT_FALSE(ReadFromStorage(0, 0));  // nothing timed proves nothing
  EXPECT_DOUBLE_EQ(StorageReadFraction(1000, 250), 0.25);
  EXPECT_DOUBLE_EQ(StorageReadFraction(0, 5), 0.0);
}

TEST(ResidencyWitness, FromPageCacheAllowsOnePercent) {
  EXPECT_TRUE(ReadFromPageCache(1000, 0));
  EXPECT_TRUE(ReadFromPageCache(1000, 10));
  EXPECT_FALSE(ReadFromPageCache(1000, 11));
  EXPECT_FALSE(ReadFromPageCache(0, 0));
}

TEST(ResidencyWitness, TaskIoAppliesToBlockBackedLocalTargetsOnly) {
  TargetInfo block;
  block.fstype = "block";
  EXPECT_TRUE(TaskIoWitnessApplies(block));
  TargetInfo ext4;
  ext4.fstype = "ext4";
  ext4.remote = "0";
  ext4.device = "loop3";
  EXPECT_TRUE(TaskIoWitnessApplies(ext4));
  TargetInfo no_device = ext4;
  no_device.device = "";
  EXPECT_FALSE(TaskIoWitnessApplies(no_device));
  TargetInfo nfs = ext4;
  nfs.fstype = "nfs4";
  nfs.remote = "1";
  EXPECT_FALSE(TaskIoWitnessApplies(nfs));
  TargetInfo fuseblk = ext4;
  fuseblk.fstype = "fuseblk";  // remote "0", a device underneath, but ntfs-3g reads it
  EXPECT_FALSE(TaskIoWitnessApplies(fuseblk));
  TargetInfo tmpfs;
  tmpfs.fstype = "tmpfs";
  tmpfs.remote = "0";
  tmpfs.device = "x";
  EXPECT_FALSE(TaskIoWitnessApplies(tmpfs));
  EXPECT_FALSE(TaskIoWitnessApplies(TargetInfo{}));
}

std::uint64_t ReadAll(int fd) {
  std::string buf(1 << 20, '\0');
  std::uint64_t total = 0;
  ssize_t n;
  while ((n = pread(fd, buf.data(), buf.size(), static_cast<off_t>(total))) > 0)
    total += static_cast<std::uint64_t>(n);
  return total;
}

// A file in a fresh /tmp directory, on a block-backed filesystem (skips otherwise).
struct BlockBackedFile {
  testing::TempDir dir;
  std::string path;
  TargetInfo info;
  std::string skip;
  explicit BlockBackedFile(std::uint64_t bytes) {
    path = (dir.path() / "f").string();
    if (!testing::WriteRandomFile(path, bytes)) {
      skip = "cannot write " + path;
      return;
    }
    // Checked apart from the code under test (TaskIoWitnessApplies, ThreadStorageReadBytes).
    info = DescribeTarget(path, "/sys");
    if (info.device.empty() || info.remote != "0" || IsMemoryBackedFs(info.fstype))
      skip = "/tmp is " + info.fstype + ", not a local filesystem on a block device";
    if (!proc::ReadThreadIo()) skip = "no /proc/thread-self/io (CONFIG_TASK_IO_ACCOUNTING)";
  }
};

TEST(ResidencyWitness, ThreadReadBytesTellsPageCacheHitsFromDeviceReads) {
  BlockBackedFile f(8 << 20);
  if (!f.skip.empty()) GTEST_SKIP() << f.skip;
  auto fd = OpenReadOnly(f.path);
  ASSERT_TRUE(fd) << fd.error().message;
  ReadAll(fd->get());  // now in the page cache

  const auto before_hit = ThreadStorageReadBytes();
  const std::uint64_t hit_bytes = ReadAll(fd->get());
  const auto after_hit = ThreadStorageReadBytes();
  ASSERT_TRUE(before_hit && after_hit);
  EXPECT_EQ(hit_bytes, 8u << 20);
  EXPECT_FALSE(ReadFromStorage(hit_bytes, *after_hit - *before_hit))
      << "read_bytes " << *after_hit - *before_hit << " for a cached read";
  EXPECT_TRUE(ReadFromPageCache(hit_bytes, *after_hit - *before_hit));

  ASSERT_EQ(posix_fadvise(fd->get(), 0, 0, POSIX_FADV_DONTNEED), 0);
  const auto before_miss = ThreadStorageReadBytes();
  const std::uint64_t miss_bytes = ReadAll(fd->get());
  const auto after_miss = ThreadStorageReadBytes();
  ASSERT_TRUE(before_miss && after_miss);
  EXPECT_TRUE(ReadFromStorage(miss_bytes, *after_miss - *before_miss))
      << "read_bytes " << *after_miss - *before_miss << " for " << miss_bytes
      << " bytes read after the drop";
}

// Runs `spec` as nobody (no capability), who may read the root-owned 0644 file but neither owns
// nor may write it, as the service user on an operator's file. Dumpable again after setresuid,
// as a process started by execve is (its /proc/thread-self files then belong to it).
std::map<std::string, std::string> RunAsNobody(const ProbeSpec& spec) {
  auto body = [&]() -> std::map<std::string, std::string> {
    if (setresgid(kNobody, kNobody, kNobody) != 0 || setresuid(kNobody, kNobody, kNobody) != 0)
      return {{"setuid", "failed"}};
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    const ProbeResult r = RunProbe(spec, testing::MakeEnv(""));
    auto v = testing::Summarize(r);
    v["witness"] = r.residency_witness;
    if (auto it = r.extra.find("storage_read_fraction"); it != r.extra.end())
      v["storage_read_fraction"] = std::to_string(it->second);
    return v;
  };
  auto run = testing::RunInPrivateMountNamespace(body);
  if (!run.skip_reason.empty()) return {{"skip", run.skip_reason}};
  return run.values;
}

class AsServiceUser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) IODRIFT_SKIP_GUARANTEED("needs root (a root-owned file, then setresuid)");
    if (!file_.skip.empty()) GTEST_SKIP() << file_.skip;
    ASSERT_EQ(chmod(file_.dir.path().c_str(), 0755), 0);
    ASSERT_EQ(chmod(file_.path.c_str(), 0644), 0);
  }
  BlockBackedFile file_{16 << 20};
};

TEST_F(AsServiceUser, BufferedRunIsCleanWithReadBytesAsTheWitness) {
  auto spec = testing::MakeSpec("b", ProbeKind::kBuffered, file_.path, 16 << 20);
  spec.time_budget = std::chrono::seconds(20);  // read the whole region
  auto v = RunAsNobody(spec);
  if (v.count("skip")) GTEST_SKIP() << v["skip"];
  ASSERT_EQ(v["outcome"], "ok") << v["error"];
  EXPECT_EQ(v["witness"], "task_io");
  EXPECT_EQ(testing::OwnSuspects(v["suspect"]),
            "");  // no residency_unverified, no cache_not_dropped
  ASSERT_TRUE(v.count("storage_read_fraction"));
  EXPECT_GE(std::stod(v["storage_read_fraction"]), 0.99);
}

TEST_F(AsServiceUser, BufferedRunOnPagesAnotherProcessHoldsIsCacheNotDropped) {
  // This process maps the whole file and faults every page in: fadvise cannot drop mapped
  // pages, so the probe's reads are page-cache hits and its read_bytes stays near 0.
  auto fd = OpenReadOnly(file_.path);
  ASSERT_TRUE(fd);
  constexpr std::size_t kSize = 16 << 20;
  void* map = mmap(nullptr, kSize, PROT_READ, MAP_SHARED, fd->get(), 0);
  ASSERT_NE(map, MAP_FAILED);
  volatile unsigned sum = 0;
  for (std::size_t off = 0; off < kSize; off += 4096)
    sum = sum + static_cast<unsigned char*>(map)[off];
  auto spec = testing::MakeSpec("b", ProbeKind::kBuffered, file_.path, kSize);
  spec.time_budget = std::chrono::seconds(20);
  auto v = RunAsNobody(spec);
  munmap(map, kSize);
  if (v.count("skip")) GTEST_SKIP() << v["skip"];
  EXPECT_EQ(v["witness"], "task_io");
  EXPECT_EQ(v["outcome"], "skipped") << v["error"];
  EXPECT_NE(v["suspect"].find("cache_not_dropped"), std::string::npos) << v["suspect"];
  ASSERT_TRUE(v.count("storage_read_fraction"));
  EXPECT_LT(std::stod(v["storage_read_fraction"]), 0.99);
  EXPECT_NE(v["error"].find("read_bytes"), std::string::npos) << v["error"];
}

TEST_F(AsServiceUser, BufferedReadersEachCountTheirOwnThread) {
  auto spec = testing::MakeSpec("b", ProbeKind::kBuffered, file_.path, 16 << 20);
  spec.time_budget = std::chrono::seconds(20);
  spec.readers = {1, 4};
  auto v = RunAsNobody(spec);
  if (v.count("skip")) GTEST_SKIP() << v["skip"];
  ASSERT_EQ(v["outcome"], "ok") << v["error"];
  EXPECT_EQ(v["witness"], "task_io");
  EXPECT_EQ(testing::OwnSuspects(v["suspect"]), "");
}

TEST_F(AsServiceUser, CachedRunIsVerifiedWithReadBytesAsTheWitness) {
  auto spec = testing::MakeSpec("c", ProbeKind::kCached, file_.path, 16 << 20);
  auto v = RunAsNobody(spec);
  if (v.count("skip")) GTEST_SKIP() << v["skip"];
  ASSERT_EQ(v["outcome"], "ok") << v["error"];
  EXPECT_EQ(v["witness"], "task_io");
  EXPECT_EQ(testing::OwnSuspects(v["suspect"]),
            "");  // neither residency_unverified nor cache_evicted
  ASSERT_TRUE(v.count("storage_read_fraction"));
  EXPECT_LE(std::stod(v["storage_read_fraction"]), 0.01);
}

TEST(ResidencyWitness, RootKeepsTheResidencyWitness) {
  if (geteuid() != 0) IODRIFT_SKIP_GUARANTEED("needs root (owner or CAP_FOWNER)");
  BlockBackedFile f(4 << 20);
  if (!f.skip.empty()) GTEST_SKIP() << f.skip;
  auto spec = testing::MakeSpec("b", ProbeKind::kBuffered, f.path, 4 << 20);
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(""));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_TRUE(r.residency_witness == "cachestat" || r.residency_witness == "mincore")
      << r.residency_witness;
  EXPECT_EQ(r.extra.count("storage_read_fraction"), 0u);
}

}  // namespace
}  // namespace iodrift::probes
