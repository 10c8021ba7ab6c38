// Root-only probe tests on real loop devices: a raw device with random data (opened read-only:
// its bytes and write counters must not change, and `buffered` must really read it, as the
// device's own read counters show), and an ext4 filesystem on a loop device probed through a
// directory. Each test skips without root or losetup; devices are detached and mounts removed
// in TearDown, also when an assertion failed.
#include <sys/mount.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "collectors/probes/io_util.h"
#include "collectors/probes/runner.h"
#include "collectors/probes/target.h"
#include "tests/lib/ci_guarantee.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

using testing::TempDir;

// Runs a shell command; returns its stdout (trimmed) and exit status.
std::pair<std::string, int> Shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {"", -1};
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  const int status = pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

// FNV-1a over the whole device, a 64-bit word at a time (sizes are multiples of 8).
std::uint64_t Checksum(const std::string& path) {
  auto fd = OpenReadOnly(path);
  if (!fd) return 0;
  std::vector<std::uint64_t> buf((1 << 20) / 8);
  std::uint64_t h = 1469598103934665603ull;
  ssize_t n;
  while ((n = read(fd->get(), buf.data(), buf.size() * 8)) > 0) {
    for (ssize_t i = 0; i < n / 8; ++i)
      h = (h ^ buf[static_cast<std::size_t>(i)]) * 1099511628211ull;
  }
  return h;
}

// /sys/block/<dev>/stat: [0] reads completed, [2] sectors read, [4] writes completed,
// [6] sectors written (Documentation/block/stat.rst).
std::vector<std::uint64_t> BlockStat(const std::string& dev) {
  std::ifstream in("/sys/block/" + dev + "/stat");
  std::vector<std::uint64_t> v;
  std::uint64_t x;
  while (in >> x) v.push_back(x);
  return v;
}

class LoopDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) IODRIFT_SKIP_GUARANTEED("needs root (losetup, mount)");
    if (Shell("command -v losetup").second != 0) IODRIFT_SKIP_GUARANTEED("losetup missing");
  }

  void TearDown() override {
    if (!mount_point_.empty()) {
      if (umount2(mount_point_.c_str(), 0) != 0) umount2(mount_point_.c_str(), MNT_DETACH);
    }
    if (!device_.empty()) Shell("losetup -d " + device_);
  }

  // Attaches a loop device over a file of `bytes` random bytes (O_DIRECT backing, like the
  // figures in docs/benchmarks.md).
  void Attach(std::uint64_t bytes) {
    ASSERT_TRUE(testing::WriteRandomFile(dir_.path() / "backing", bytes));
    auto [out, rc] =
        Shell("losetup -f --show --direct-io=on " + (dir_.path() / "backing").string());
    ASSERT_EQ(rc, 0) << out;
    device_ = out;
    name_ = device_.substr(device_.rfind('/') + 1);
  }

  // Attaches a loop device over a sparse file of `bytes` (for a filesystem: mkfs writes what it
  // needs; room above the probe file's free-space reserve costs nothing).
  void AttachSparse(std::uint64_t bytes) {
    const auto backing = dir_.path() / "backing";
    { std::ofstream(backing).flush(); }
    ASSERT_EQ(truncate(backing.c_str(), static_cast<off_t>(bytes)), 0);
    auto [out, rc] = Shell("losetup -f --show --direct-io=on " + backing.string());
    ASSERT_EQ(rc, 0) << out;
    device_ = out;
    name_ = device_.substr(device_.rfind('/') + 1);
  }

  void MountExt4() {
    auto [out, rc] = Shell("mkfs.ext4 -q -F " + device_);
    ASSERT_EQ(rc, 0) << out;
    const auto mnt = dir_.path() / "mnt";
    std::filesystem::create_directory(mnt);
    ASSERT_EQ(mount(device_.c_str(), mnt.c_str(), "ext4", 0, nullptr), 0) << strerror(errno);
    mount_point_ = mnt.string();
  }

  TempDir dir_;
  std::string device_;  // /dev/loopN
  std::string name_;    // loopN
  std::string mount_point_;
};

TEST_F(LoopDeviceTest, ProbesABlockDeviceReadOnly) {
  ASSERT_NO_FATAL_FAILURE(Attach(32 << 20));
  const std::uint64_t sum_before = Checksum(device_);
  const auto stat_before = BlockStat(name_);
  ASSERT_GE(stat_before.size(), 7u);
  const ProbeEnv env = testing::MakeEnv(dir_.path() / "state");
  for (auto kind : {probes::ProbeKind::kCached, probes::ProbeKind::kBuffered,
                    probes::ProbeKind::kDirect, probes::ProbeKind::kRandom}) {
    auto spec =
        testing::MakeSpec(std::string(probes::ProbeKindName(kind)), kind, device_, 16 << 20);
    spec.time_budget = std::chrono::seconds(5);
    if (kind == probes::ProbeKind::kCached) spec.time_budget = std::chrono::milliseconds(50);
    const ProbeResult r = RunProbe(spec, env);
    SCOPED_TRACE(spec.name);
    ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
    EXPECT_EQ(r.target_info.fstype, "block");
    EXPECT_EQ(r.target_info.device, name_);
    EXPECT_EQ(r.target_info.loop_dio, "1");
    EXPECT_EQ(r.target_info.scheduler.empty(), false);
    if (kind == probes::ProbeKind::kBuffered || kind == probes::ProbeKind::kDirect) {
      EXPECT_EQ(r.bytes, 16u << 20);
    }
    if (kind == probes::ProbeKind::kRandom) {
      EXPECT_EQ(r.mode, "direct");
      EXPECT_EQ(r.latency->count, 64u);
    }
  }
  const ProbeResult meta =
      RunProbe(testing::MakeSpec("meta", probes::ProbeKind::kMetadata, device_), env);
  EXPECT_EQ(meta.outcome, Outcome::kError);
  EXPECT_NE(meta.error.find("block device"), std::string::npos) << meta.error;

  const auto stat_after = BlockStat(name_);
  EXPECT_EQ(stat_after[4], stat_before[4]) << "writes completed changed";
  EXPECT_EQ(stat_after[6], stat_before[6]) << "sectors written changed";
  EXPECT_EQ(Checksum(device_), sum_before);
}

TEST_F(LoopDeviceTest, BufferedReallyReadsTheDeviceEvenWhenItsCacheWasWarm) {
  ASSERT_NO_FATAL_FAILURE(Attach(32 << 20));
  // Hold the device open and warm its first 16 MiB: without the probe's fadvise these reads
  // would be cache hits (the cache survives while someone holds the device, docs/probes.md "Kernel
  // facts").
  auto holder = OpenReadOnly(device_);
  ASSERT_TRUE(holder);
  std::string buf(1 << 20, '\0');
  for (int i = 0; i < 16; ++i) ASSERT_EQ(read(holder->get(), buf.data(), buf.size()), 1 << 20);
  auto warm = MeasureResidency(holder->get(), 0, 16 << 20);
  ASSERT_TRUE(warm);
  ASSERT_GT(warm->Fraction(), 0.99);

  auto spec = testing::MakeSpec("b", probes::ProbeKind::kBuffered, device_, 16 << 20);
  spec.time_budget = std::chrono::seconds(5);
  for (int run = 0; run < 2; ++run) {
    const auto before = BlockStat(name_);
    const ProbeResult r = RunProbe(spec, testing::MakeEnv(""));
    const auto after = BlockStat(name_);
    SCOPED_TRACE(run);
    ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
    EXPECT_EQ(r.bytes, 16u << 20);
    EXPECT_LE(r.extra.at("resident_before_fraction"), 0.01);
    EXPECT_GE((after[2] - before[2]) * 512, 16ull << 20) << "sectors read did not grow by 16 MiB";
    EXPECT_GT(after[0], before[0]);
  }
  // And the probe left the device's cache dropped for that region.
  auto left = MeasureResidency(holder->get(), 0, 16 << 20);
  ASSERT_TRUE(left);
  EXPECT_LT(left->Fraction(), 0.01);
}

TEST_F(LoopDeviceTest, ProbesAnExt4DirectoryWithEveryKind) {
  // 2 GiB: the probe file must leave max(5 %, 1 GiB) available (target.h FreeSpaceReserve).
  ASSERT_NO_FATAL_FAILURE(AttachSparse(2ull << 30));
  ASSERT_NO_FATAL_FAILURE(MountExt4());
  const ProbeEnv env = testing::MakeEnv(dir_.path() / "state");
  for (auto kind :
       {probes::ProbeKind::kCached, probes::ProbeKind::kBuffered, probes::ProbeKind::kDirect,
        probes::ProbeKind::kRandom, probes::ProbeKind::kMetadata}) {
    auto spec =
        testing::MakeSpec(std::string(probes::ProbeKindName(kind)), kind, mount_point_, 8 << 20);
    spec.time_budget = std::chrono::milliseconds(50);
    const ProbeResult r = RunProbe(spec, env);
    SCOPED_TRACE(spec.name);
    ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
    EXPECT_EQ(r.target_info.fstype, "ext4");
    EXPECT_EQ(r.target_info.device, name_);
  }
  std::set<std::string> names;
  for (auto& e : std::filesystem::directory_iterator(mount_point_))
    names.insert(e.path().filename());
  EXPECT_EQ(names, (std::set<std::string>{"lost+found", std::string(kProbeFileName),
                                          std::string(kMetaDirName)}));
  EXPECT_TRUE(
      std::filesystem::is_empty(std::filesystem::path(mount_point_) / std::string(kMetaDirName)));
  EXPECT_EQ(
      std::filesystem::file_size(std::filesystem::path(mount_point_) / std::string(kProbeFileName)),
      16u << 20);
}

}  // namespace
}  // namespace iodrift::probes
