// Array member discovery (members.h) on /sys trees built in the test: this kernel has no md or
// dm, so the trees mirror what the kernel shows for them (slaves/ symlinks into the partition
// directories of the disks, class/block links, btrfs devices/ links).
#include "collectors/probes/members.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using Names = std::vector<std::string>;

// A sysfs tree: devices/virtual/block/<disk>[/<part>], block/<disk> and class/block/<name> links.
class SysTree {
 public:
  explicit SysTree(const fs::path& root) : root_(root) {}
  void Disk(const std::string& disk) {
    fs::create_directories(root_ / "devices/virtual/block" / disk / "queue");
    fs::create_directories(root_ / "block");
    fs::create_directories(root_ / "class/block");
    fs::create_symlink("../devices/virtual/block/" + disk, root_ / "block" / disk);
    fs::create_symlink("../../devices/virtual/block/" + disk, root_ / "class/block" / disk);
  }
  void Partition(const std::string& disk, const std::string& part) {
    const fs::path dir = root_ / "devices/virtual/block" / disk / part;
    fs::create_directories(dir);
    std::ofstream(dir / "partition") << "1\n";
    fs::create_symlink("../../devices/virtual/block/" + disk + "/" + part,
                       root_ / "class/block" / part);
  }
  // `array` (a disk) is made of `slave` (a disk or partition name).
  void Slave(const std::string& array, const std::string& slave) {
    const fs::path slaves = root_ / "devices/virtual/block" / array / "slaves";
    fs::create_directories(slaves);
    fs::create_symlink(fs::canonical(root_ / "class/block" / slave), slaves / slave);
  }
  void Btrfs(const std::string& fsid, const std::string& device) {
    const fs::path devices = root_ / "fs/btrfs" / fsid / "devices";
    fs::create_directories(devices);
    fs::create_symlink(fs::canonical(root_ / "class/block" / device), devices / device);
  }

 private:
  fs::path root_;
};

TEST(ArrayMembers, Md0OverPartitionsResolvesToTheirDisks) {
  TempDir dir;
  SysTree sys(dir.path());
  for (const char* d : {"sda", "sdb", "sdc"}) {
    sys.Disk(d);
    sys.Partition(d, std::string(d) + "1");
  }
  sys.Disk("md0");
  for (const char* p : {"sdc1", "sda1", "sdb1"}) sys.Slave("md0", p);
  EXPECT_EQ(ArrayMembers("md0", dir.path()), (Names{"sda", "sdb", "sdc"}));
  EXPECT_EQ(DiskOfBlockName("sdb1", dir.path()), "sdb");
  EXPECT_EQ(DiskOfBlockName("sdb", dir.path()), "sdb");
}

TEST(ArrayMembers, DmOverMdOverDisksRecursesThroughTheStack) {
  TempDir dir;
  SysTree sys(dir.path());
  for (const char* d : {"sda", "sdb", "nvme0n1"}) sys.Disk(d);
  sys.Partition("sda", "sda2");
  sys.Partition("sdb", "sdb2");
  sys.Disk("md0");
  sys.Slave("md0", "sda2");
  sys.Slave("md0", "sdb2");
  sys.Disk("dm-0");  // e.g. LVM over md0 and a whole NVMe disk
  sys.Slave("dm-0", "md0");
  sys.Slave("dm-0", "nvme0n1");
  EXPECT_EQ(ArrayMembers("dm-0", dir.path()), (Names{"nvme0n1", "sda", "sdb"}));
  EXPECT_EQ(ArrayMembers("md0", dir.path()), (Names{"sda", "sdb"}));
}

TEST(ArrayMembers, APlainDiskOrPartitionIsNoArray) {
  TempDir dir;
  SysTree sys(dir.path());
  sys.Disk("sda");
  sys.Partition("sda", "sda1");
  EXPECT_TRUE(ArrayMembers("sda", dir.path()).empty());
  EXPECT_TRUE(ArrayMembers("sda1", dir.path()).empty());
  EXPECT_TRUE(ArrayMembers("nosuch", dir.path()).empty());
  EXPECT_TRUE(ArrayMembers("", dir.path()).empty());
}

TEST(ArrayMembers, ALoopInTheTreeStops) {
  TempDir dir;
  SysTree sys(dir.path());
  sys.Disk("dm-0");
  sys.Disk("dm-1");
  sys.Disk("sda");
  sys.Slave("dm-0", "dm-1");
  sys.Slave("dm-1", "dm-0");
  sys.Slave("dm-1", "sda");
  EXPECT_EQ(ArrayMembers("dm-0", dir.path()), (Names{"sda"}));
}

TEST(BtrfsMembers, ListsEveryDeviceOfTheFilesystemHoldingTheName) {
  TempDir dir;
  SysTree sys(dir.path());
  for (const char* d : {"loop1", "loop2", "loop3", "sda"}) sys.Disk(d);
  sys.Partition("sda", "sda1");
  sys.Btrfs("1c0e7a58-0000-4000-8000-000000000001", "loop1");
  sys.Btrfs("1c0e7a58-0000-4000-8000-000000000001", "loop2");
  sys.Btrfs("1c0e7a58-0000-4000-8000-000000000001", "sda1");
  sys.Btrfs("99999999-0000-4000-8000-000000000002", "loop3");
  EXPECT_EQ(BtrfsMembers("loop2", dir.path()), (Names{"loop1", "loop2", "sda"}));
  EXPECT_EQ(BtrfsMembers("loop3", dir.path()), (Names{"loop3"}));
  EXPECT_TRUE(BtrfsMembers("sdz", dir.path()).empty());
  EXPECT_EQ(JoinDevices({"loop1", "loop2", "sda"}), "loop1,loop2,sda");
}

// Names of up to `n` block device nodes in /dev (ProbeMembers probes only those; the fake
// runs below never open them).
Names BlockDevicesInDev(std::size_t n) {
  Names out;
  std::error_code ec;
  for (fs::directory_iterator it("/dev", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->symlink_status(ec).type() == fs::file_type::block) {
      out.push_back(it->path().filename().string());
    }
  }
  std::sort(out.begin(), out.end());
  if (out.size() > n) out.resize(n);
  return out;
}

// A buffered probe of /dev/md0 with `members: true`, and its own successful run (300 B/s) whose
// target has `members`.
ProbeSpec ArraySpec() {
  ProbeSpec spec;
  spec.name = "md";
  spec.kind = ProbeKind::kBuffered;
  spec.target = "/dev/md0";
  spec.members = true;
  return spec;
}

ProbeResult ArrayRun(const Names& members) {
  ProbeResult result;
  result.outcome = Outcome::kOk;
  result.throughput_bytes_per_second = 300.0;
  result.target_info.members = members;
  return result;
}

TEST(ProbeMembers, ProbesEachMemberAndDividesTheArrayFigure) {
  const Names devs = BlockDevicesInDev(3);
  if (devs.size() < 3) GTEST_SKIP() << "fewer than 3 block devices in /dev";
  const std::string sda = devs[0], sdb = devs[1], sdc = devs[2];
  const ProbeSpec spec = ArraySpec();
  ProbeResult result = ArrayRun({sda, sdb, sdc});
  std::vector<std::string> probed;
  auto run = [&](const ProbeSpec& s, const ProbeEnv&, const RunControl&, ProbeResult& r) {
    EXPECT_FALSE(s.members);
    probed.push_back(s.target);
    if (s.target == "/dev/" + sdc) {
      r.outcome = Outcome::kError;
      r.error = "EIO";
      return;
    }
    r.outcome = Outcome::kOk;
    r.throughput_bytes_per_second = s.target == "/dev/" + sda ? 150.0 : 100.0;
  };
  ProbeMembers(spec, ProbeEnv{}, RunControl{}, run, result);
  EXPECT_EQ(probed, (Names{"/dev/" + sda, "/dev/" + sdb, "/dev/" + sdc}));
  EXPECT_DOUBLE_EQ(result.member_figures.at(sda), 150.0);
  EXPECT_DOUBLE_EQ(result.member_ratios.at(sda), 2.0);
  EXPECT_DOUBLE_EQ(result.member_ratios.at(sdb), 3.0);
  EXPECT_EQ(result.member_ratios.count(sdc), 0u);
  EXPECT_EQ(result.member_errors.at(sdc), "EIO");
}

// Member names come from a sysfs tree that `sys_root` may point anywhere: a crafted tree's
// slaves named shm (a directory: the probe would write its file into /dev/shm), null (a
// character device), ".." or "../tmp" are never probed; only a plain name whose /dev node is
// itself a block device is.
TEST(ProbeMembers, ProbesOnlyNamesThatAreBlockDevicesInDev) {
  const Names devs = BlockDevicesInDev(1);
  if (devs.empty()) GTEST_SKIP() << "no block device in /dev";
  TempDir dir;
  SysTree tree(dir.path());
  tree.Disk("md0");
  for (const std::string& name : Names{"shm", "null", "stdin", "no-such-node", devs[0]}) {
    tree.Disk(name);
    tree.Slave("md0", name);
  }
  Names discovered = ArrayMembers("md0", dir.path());
  ASSERT_EQ(discovered.size(), 5u);
  for (const std::string crafted : {"..", ".", "../tmp", "", "shm/x"})
    discovered.push_back(crafted);
  const ProbeSpec spec = ArraySpec();
  ProbeResult result = ArrayRun(discovered);
  std::vector<std::string> probed;
  auto run = [&](const ProbeSpec& s, const ProbeEnv&, const RunControl&, ProbeResult& r) {
    probed.push_back(s.target);
    r.outcome = Outcome::kOk;
    r.throughput_bytes_per_second = 100.0;
  };
  ProbeMembers(spec, ProbeEnv{}, RunControl{}, run, result);
  EXPECT_EQ(probed, (Names{"/dev/" + devs[0]}));
  for (const std::string bad :
       {"shm", "null", "stdin", "no-such-node", "..", ".", "../tmp", "", "shm/x"}) {
    ASSERT_EQ(result.member_errors.count(bad), 1u) << bad;
    EXPECT_EQ(result.member_errors.at(bad).rfind("not probed: ", 0), 0u)
        << bad << ": " << result.member_errors.at(bad);
  }
  EXPECT_NE(result.member_errors.at("shm").find("/dev/shm is not a block device"),
            std::string::npos);
}

}  // namespace
}  // namespace iodrift::probes
