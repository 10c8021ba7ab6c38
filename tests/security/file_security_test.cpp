// Hostile targets and state files: no file touched outside iodrift's own, no wrong
// figure, no hang, no lost history. Each test plays the attacker or the accident of one class:
//   * a metadata probe dir swapped for a symlink by an unprivileged user, racing the probe;
//   * symlinks and FIFOs planted where the daemon writes or reads its state (baselines,
//     calibration);
//   * a file target swapped for a symlink or a block device, sparse and fallocated files, sysfs
//     attributes as targets;
//   * an unreadable or oversized baselines file (never replaced);
//   * a directory target on a nearly full (small loop) filesystem (the free-space reserve).
// Tests needing root (setresuid, chown, losetup, mount) skip with the reason otherwise.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "collectors/analysis/baseline_store.h"
#include "collectors/common/file_util.h"
#include "collectors/probes/calibration.h"
#include "collectors/probes/metadata.h"
#include "collectors/probes/runner.h"
#include "collectors/probes/target.h"
#include "tests/lib/ci_guarantee.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
using namespace ::iodrift::analysis;  // NOLINT: tests of the analysis of probe results
namespace {

namespace fs = std::filesystem;
using testing::MakeEnv;
using testing::MakeSpec;
using testing::TempDir;
using testing::WriteRandomFile;

constexpr uid_t kNobody = 65534;

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

std::string ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteText(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

// --- 1. metadata probe: a swapped directory never redirects a create or delete -------------

TEST(MetadataSecurity, UnprivilegedSymlinkSwapRaceNeverDeletesElsewhere) {
  if (geteuid() != 0)
    IODRIFT_SKIP_GUARANTEED("needs root (the daemon) and setresuid (the attacker)");
  TempDir top;
  ASSERT_EQ(chmod(top.path().c_str(), 0755), 0);
  const fs::path shared = top.path() / "shared";  // a /tmp-like sticky 1777 directory
  const fs::path victim = top.path() / "victim";  // root's files the attacker wants deleted
  ASSERT_EQ(mkdir(shared.c_str(), 0777), 0);
  ASSERT_EQ(chmod(shared.c_str(), 01777), 0);
  ASSERT_EQ(mkdir(victim.c_str(), 0755), 0);
  const std::uint32_t files = 32;
  auto plant_victims = [&] {
    for (std::uint32_t i = 0; i < files; ++i) {
      char name[16];
      std::snprintf(name, sizeof name, "f%03u", i);
      WriteText(victim / name, "precious\n");
    }
  };
  plant_victims();

  const pid_t attacker = fork();
  ASSERT_GE(attacker, 0);
  if (attacker == 0) {
    if (setresgid(kNobody, kNobody, kNobody) != 0 || setresuid(kNobody, kNobody, kNobody) != 0) {
      _exit(3);
    }
    const std::string meta = (shared / kMetaDirName).string();
    const std::string aside = (shared / "aside").string();
    for (;;) {  // killed by the parent
      mkdir(meta.c_str(), 0777);
      rename(meta.c_str(), aside.c_str());
      symlink(victim.c_str(), meta.c_str());
      unlink(meta.c_str());
      rmdir(aside.c_str());
    }
  }
  auto spec = MakeSpec("meta", probes::ProbeKind::kMetadata, shared.string());
  spec.files = files;
  const auto env = MakeEnv("");
  int ok = 0, errors = 0;
  for (int run = 0; run < 300; ++run) {
    ProbeResult r;
    RunMetadataProbe(spec, env, RunControl{}, r);
    (r.outcome == Outcome::kOk ? ok : errors)++;
  }
  kill(attacker, SIGKILL);
  int status = 0;
  waitpid(attacker, &status, 0);
  ASSERT_FALSE(WIFEXITED(status)) << "the attacker could not drop privileges";
  int left = 0;
  for (const auto& e : fs::directory_iterator(victim)) {
    EXPECT_EQ(ReadText(e.path()), "precious\n") << e.path();
    ++left;
  }
  EXPECT_EQ(left, static_cast<int>(files)) << "root deleted files in the attacker's chosen "
                                              "directory (ok runs "
                                           << ok << ", errors " << errors << ")";
}

TEST(MetadataSecurity, RefusesSharedNonStickyDirectoryAndForeignMetaDir) {
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0777), 0);
  auto spec = MakeSpec("meta", probes::ProbeKind::kMetadata, dir.str());
  ProbeResult r;
  RunMetadataProbe(spec, MakeEnv(""), RunControl{}, r);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.error.find("not sticky"), std::string::npos) << r.error;
  EXPECT_FALSE(fs::exists(dir.path() / kMetaDirName));

  // A sticky shared dir where another user made iodrift-meta first: not worked in.
  if (geteuid() != 0) return;
  ASSERT_EQ(chmod(dir.path().c_str(), 01777), 0);
  const fs::path meta = dir.path() / kMetaDirName;
  ASSERT_EQ(mkdir(meta.c_str(), 0777), 0);
  ASSERT_EQ(chown(meta.c_str(), kNobody, kNobody), 0);
  ProbeResult r2;
  RunMetadataProbe(spec, MakeEnv(""), RunControl{}, r2);
  EXPECT_EQ(r2.outcome, Outcome::kError);
  EXPECT_NE(r2.error.find("owned by uid 65534"), std::string::npos) << r2.error;
  EXPECT_TRUE(fs::is_empty(meta));
}

// --- 2. files the daemon writes never follow a planted symlink --------------------------------

TEST(StateFileSecurity, BaselinesTmpSymlinkDoesNotOverwriteItsTarget) {
  TempDir dir;
  const fs::path victim = dir.path() / "victim";
  WriteText(victim, "root's file\n");
  ASSERT_EQ(symlink(victim.c_str(), (dir.path() / "baselines.tmp").c_str()), 0);
  BaselineState state;
  state.boot_id = "b1";
  ASSERT_TRUE(SaveBaselines(dir.path(), state));
  EXPECT_EQ(ReadText(victim), "root's file\n");
  struct stat st {};
  ASSERT_EQ(lstat((dir.path() / "baselines").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_NE(ReadText(dir.path() / "baselines").find("boot b1"), std::string::npos);
}

TEST(StateFileSecurity, CalibrationNeverWritesThroughPlantedSymlinks) {
  TempDir dir;
  const fs::path victim = dir.path() / "victim";
  WriteText(victim, "root's file\n");
  const fs::path cal = dir.path() / "calibration";
  ASSERT_EQ(mkdir(cal.c_str(), 0700), 0);
  auto spec = MakeSpec("p", probes::ProbeKind::kBuffered, "/x");
  const std::string tmps[] = {"p.tmp", "p.tmp." + std::to_string(getpid())};
  for (const std::string& tmp : tmps) {
    ASSERT_EQ(symlink(victim.c_str(), (cal / tmp).c_str()), 0);
  }
  ASSERT_TRUE(SaveCalibration(dir.path(), spec, 8 << 20));
  EXPECT_EQ(ReadText(victim), "root's file\n");
  EXPECT_EQ(LoadCalibration(dir.path(), spec), 8u << 20);

  // The calibration directory itself swapped for a symlink to another directory: refused.
  TempDir elsewhere;
  fs::remove_all(cal);
  ASSERT_EQ(symlink(elsewhere.path().c_str(), cal.c_str()), 0);
  EXPECT_FALSE(SaveCalibration(dir.path(), spec, 8 << 20));
  EXPECT_TRUE(fs::is_empty(elsewhere.path()));
}

// --- 6. state files that are FIFOs or symlinks: no hang, nothing read through them ------------

TEST(StateFileSecurity, FifoBaselinesNeitherHangsNorIsReplaced) {
  TempDir dir;
  const fs::path fifo = dir.path() / "baselines";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto loading =
      std::async(std::launch::async, [&] { return LoadBaselines(dir.path(), "boot-1", 100); });
  if (loading.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    const int w = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // unblock the reader
    if (w >= 0) close(w);
    loading.wait();
    FAIL() << "LoadBaselines blocked on a FIFO";
  }
  const LoadedBaselines loaded = loading.get();
  EXPECT_TRUE(loaded.set_aside);
  EXPECT_NE(loaded.corrupt_path.find("baselines.unreadable-"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(lstat(loaded.corrupt_path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_TRUE(SaveBaselines(dir.path(), loaded.state));
  EXPECT_NE(ReadText(dir.path() / "baselines").find("boot boot-1"), std::string::npos);
}

TEST(StateFileSecurity, SymlinkedBaselinesIsNotReadThroughNorItsTargetReplaced) {
  TempDir dir;
  BaselineState other;
  other.boot_id = "attacker-boot";
  const fs::path target = dir.path() / "elsewhere";
  WriteText(target, SerializeBaselineState(other));
  ASSERT_EQ(symlink(target.c_str(), (dir.path() / "baselines").c_str()), 0);
  const LoadedBaselines loaded = LoadBaselines(dir.path(), "boot-1", 100);
  EXPECT_TRUE(loaded.state.history.empty()) << "read the state through a symlink";
  ASSERT_TRUE(SaveBaselines(dir.path(), loaded.state));
  EXPECT_EQ(ReadText(target), SerializeBaselineState(other));
}

// --- 7. a file we could not read is never replaced --------------------------------------------

TEST(StateFileSecurity, OversizedBaselinesIsSetAsideNotOverwritten) {
  TempDir dir;
  BaselineState old;
  old.boot_id = "old-boot";
  std::string big = SerializeBaselineState(old);
  big.resize(kMaxBaselineFileBytes + 4096, '#');
  WriteText(dir.path() / "baselines", big);
  const LoadedBaselines loaded = LoadBaselines(dir.path(), "boot-1", 100);
  ASSERT_TRUE(SaveBaselines(dir.path(), loaded.state));
  bool kept = false;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    if (e.path().filename() != "baselines" && ReadText(e.path()) == big) kept = true;
  }
  EXPECT_TRUE(kept) << "the oversized file was replaced without a copy";
}

TEST(StateFileSecurity, UnreadableBaselinesOfAnotherUserIsKept) {
  if (geteuid() != 0)
    IODRIFT_SKIP_GUARANTEED("needs root (a root-owned 0600 file, the daemon as nobody)");
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  const fs::path state = dir.path() / "state";
  ASSERT_EQ(mkdir(state.c_str(), 0700), 0);
  ASSERT_EQ(chown(state.c_str(), kNobody, kNobody), 0);
  BaselineState old;
  old.boot_id = "old-boot";
  const std::string text = SerializeBaselineState(old);
  WriteText(state / "baselines", text);
  ASSERT_EQ(chmod((state / "baselines").c_str(), 0600), 0);  // root's, unreadable for nobody

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setresgid(kNobody, kNobody, kNobody) != 0 || setresuid(kNobody, kNobody, kNobody) != 0) {
      _exit(3);
    }
    const LoadedBaselines loaded = LoadBaselines(state, "boot-1", 100);
    _exit(SaveBaselines(state, loaded.state) ? 0 : 4);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_NE(WEXITSTATUS(status), 3) << "setresuid failed";
  bool kept = false;
  for (const auto& e : fs::directory_iterator(state)) {
    if (ReadText(e.path()) == text) kept = true;
  }
  EXPECT_TRUE(kept) << "the unreadable baselines (the history of past boots) was lost";
}

TEST(StateFileSecurity, AtomicWriteRefusesToReplaceAFileItCannotRead) {
  TempDir dir;
  ASSERT_EQ(mkfifo((dir.path() / "baselines").c_str(), 0600), 0);
  auto w = WriteFileAtomically(dir.path(), "baselines", "x\n");
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("not replacing"), std::string::npos) << w.error().message;
  struct stat st {};
  ASSERT_EQ(lstat((dir.path() / "baselines").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(FileUtil, ReadRegularFileRefusesSymlinksFifosAndOversize) {
  TempDir dir;
  WriteText(dir.path() / "f", "hello");
  EXPECT_EQ(*ReadRegularFile(dir.path() / "f", 16), "hello");
  auto big = ReadRegularFile(dir.path() / "f", 4);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, EFBIG);
  ASSERT_EQ(symlink("f", (dir.path() / "l").c_str()), 0);
  auto link = ReadRegularFile(dir.path() / "l", 16);
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().code, ELOOP);
  ASSERT_EQ(mkfifo((dir.path() / "p").c_str(), 0600), 0);
  auto fifo = ReadRegularFile(dir.path() / "p", 16);  // would block without O_NONBLOCK
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().code, EINVAL);
}

// --- 3. file targets: no symlink swapped in, no changed object compared -----------------------

std::shared_ptr<TargetDevices> Pins() { return std::make_shared<TargetDevices>(); }

TEST(TargetSecurity, FileSwappedForSymlinkIsAnErrorNotARead) {
  TempDir dir;
  const fs::path target = dir.path() / "data";
  const fs::path secret = dir.path() / "secret";
  ASSERT_TRUE(WriteRandomFile(target, 4 << 20));
  ASSERT_TRUE(WriteRandomFile(secret, 4 << 20));
  auto env = MakeEnv("");
  env.target_devices = Pins();
  const auto spec = MakeSpec("c", probes::ProbeKind::kCached, target.string(), 4 << 20);
  ASSERT_EQ(RunProbe(spec, env).outcome, Outcome::kOk);
  fs::remove(target);
  ASSERT_EQ(symlink(secret.c_str(), target.c_str()), 0);
  const auto r = RunProbe(spec, env);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.error.find("symbolic link"), std::string::npos) << r.error;
  EXPECT_EQ(r.bytes, 0u);
}

TEST(TargetSecurity, ConfiguredSymlinkIsResolvedOnceAndPinned) {
  TempDir dir;
  const fs::path a = dir.path() / "a";
  const fs::path link = dir.path() / "link";
  ASSERT_TRUE(WriteRandomFile(a, 4 << 20));
  ASSERT_EQ(symlink(a.c_str(), link.c_str()), 0);
  auto env = MakeEnv("");
  env.target_devices = Pins();
  const auto spec = MakeSpec("c", probes::ProbeKind::kCached, link.string(), 4 << 20);
  ASSERT_EQ(RunProbe(spec, env).outcome, Outcome::kOk);
  // The link now points at something else (here a FIFO): the pinned file is still what is read.
  fs::remove(link);
  ASSERT_EQ(mkfifo((dir.path() / "fifo").c_str(), 0600), 0);
  ASSERT_EQ(symlink((dir.path() / "fifo").c_str(), link.c_str()), 0);
  const auto r = RunProbe(spec, env);
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.error;
}

TEST(TargetSecurity, ReplacedRegularFileStartsANewBaseline) {
  TempDir dir;
  const fs::path target = dir.path() / "data";
  ASSERT_TRUE(WriteRandomFile(target, 4 << 20));
  auto env = MakeEnv("");
  env.target_devices = Pins();
  const auto spec = MakeSpec("c", probes::ProbeKind::kCached, target.string(), 4 << 20);
  auto first = RunProbe(spec, env);
  ASSERT_EQ(first.outcome, Outcome::kOk);
  first.suspect =
      testing::OwnSuspects(first.suspect);  // a busy machine's pressure is not under test
  ProbeBaseline pb;
  UpdateBaseline(pb, first, 1);
  ASSERT_TRUE(pb.baseline);
  ASSERT_TRUE(WriteRandomFile(dir.path() / "new", 4 << 20));
  fs::rename(dir.path() / "new", target);
  const auto second = RunProbe(spec, env);
  ASSERT_EQ(second.outcome, Outcome::kOk) << second.error;
  EXPECT_EQ(second.extra.count("target_replaced"), 1u);
  const auto update = UpdateBaseline(pb, second, 5);
  EXPECT_TRUE(update.restarted);
  EXPECT_FALSE(update.ratio) << "a replaced file was compared with the old file's baseline";
}

TEST(TargetSecurity, FileReplacedByBlockDeviceIsAnError) {
  if (geteuid() != 0) IODRIFT_SKIP_GUARANTEED("needs root (losetup, mknod)");
  if (Shell("command -v losetup").second != 0) IODRIFT_SKIP_GUARANTEED("losetup missing");
  TempDir dir;
  ASSERT_TRUE(WriteRandomFile(dir.path() / "backing", 8 << 20));
  auto [device, rc] = Shell("losetup -f --show " + (dir.path() / "backing").string());
  if (rc != 0) IODRIFT_SKIP_GUARANTEED("losetup failed: " << device);
  struct stat dst {};
  ASSERT_EQ(stat(device.c_str(), &dst), 0);
  const fs::path target = dir.path() / "data";
  ASSERT_TRUE(WriteRandomFile(target, 4 << 20));
  auto env = MakeEnv("");
  env.target_devices = Pins();
  const auto spec = MakeSpec("c", probes::ProbeKind::kCached, target.string(), 4 << 20);
  const auto first = RunProbe(spec, env);
  fs::remove(target);
  ASSERT_EQ(mknod(target.c_str(), S_IFBLK | 0600, dst.st_rdev), 0);
  const auto r = RunProbe(spec, env);
  Shell("losetup -d " + device);
  ASSERT_EQ(first.outcome, Outcome::kOk) << first.error;
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.error.find("first probed as a regular file"), std::string::npos) << r.error;
  EXPECT_EQ(r.bytes, 0u);
}

// --- 4. sparse and fallocated files ----------------------------------------------------------

TEST(TargetSecurity, SparseAndFallocatedFilesAreRefused) {
  TempDir dir;
  const fs::path sparse = dir.path() / "sparse";
  { std::ofstream(sparse).flush(); }
  ASSERT_EQ(truncate(sparse.c_str(), 64 << 20), 0);
  const auto env = MakeEnv("");
  const auto r = RunProbe(MakeSpec("s", probes::ProbeKind::kCached, sparse.string(), 4 << 20), env);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.error.find("sparse"), std::string::npos) << r.error;

  const fs::path falloc = dir.path() / "falloc";
  const int fd = open(falloc.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  const int frc = fallocate(fd, 0, 0, 16 << 20);
  close(fd);
  if (frc != 0) GTEST_SKIP() << "/tmp has no fallocate";
  const auto f = RunProbe(MakeSpec("f", probes::ProbeKind::kRandom, falloc.string(), 0), env);
  EXPECT_EQ(f.outcome, Outcome::kError);
  EXPECT_NE(f.error.find("sparse"), std::string::npos) << f.error;

  const fs::path dense = dir.path() / "dense";
  ASSERT_TRUE(WriteRandomFile(dense, 4 << 20));
  const int dfd = open(dense.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_FALSE(FirstUnallocatedByte(dfd, 4 << 20));
  close(dfd);
}

// --- 5. pseudo filesystems --------------------------------------------------------------------

TEST(TargetSecurity, PseudoFilesystemAttributesAreRefused) {
  EXPECT_EQ(PseudoFilesystemName(0x62656572), "sysfs");
  EXPECT_EQ(PseudoFilesystemName(0x9fa0), "proc");
  EXPECT_EQ(PseudoFilesystemName(0xEF53), "");  // ext4
  const std::string attr = "/sys/kernel/mm/transparent_hugepage/enabled";
  if (!fs::exists(attr)) GTEST_SKIP() << attr << " missing";
  const auto r = RunProbe(MakeSpec("s", probes::ProbeKind::kCached, attr, 4096), MakeEnv(""));
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.error.find("sysfs"), std::string::npos) << r.error;
  EXPECT_EQ(r.bytes, 0u);
}

// --- 8. the free-space reserve ---------------------------------------------------------------

TEST(TargetSecurity, FreeSpaceReserveIsFivePercentOrOneGiB) {
  EXPECT_EQ(FreeSpaceReserve(100ull << 30), 5ull << 30);
  EXPECT_EQ(FreeSpaceReserve(4ull << 30), 1ull << 30);
  EXPECT_EQ(FreeSpaceReserve(64ull << 20), 1ull << 30);
  EXPECT_EQ(FreeSpaceReserve(0), 0u);  // ramfs: no size
}

TEST(TargetSecurity, NearlyFullFilesystemGetsNoProbeFile) {
  if (geteuid() != 0) IODRIFT_SKIP_GUARANTEED("needs root (losetup, mount)");
  if (Shell("command -v losetup && command -v mkfs.ext4").second != 0) {
    IODRIFT_SKIP_GUARANTEED("losetup or mkfs.ext4 missing");
  }
  TempDir dir;
  const fs::path image = dir.path() / "image";
  { std::ofstream(image).flush(); }
  ASSERT_EQ(truncate(image.c_str(), 96 << 20), 0);
  ASSERT_EQ(Shell("mkfs.ext4 -q -F -m 0 " + image.string()).second, 0);
  auto [device, rc] = Shell("losetup -f --show " + image.string());
  if (rc != 0) IODRIFT_SKIP_GUARANTEED("losetup failed: " << device);
  const fs::path mnt = dir.path() / "mnt";
  fs::create_directory(mnt);
  ASSERT_EQ(mount(device.c_str(), mnt.c_str(), "ext4", 0, nullptr), 0) << strerror(errno);
  auto env = MakeEnv("");
  env.probe_file_bytes = 16 << 20;
  struct statvfs before {};
  statvfs(mnt.c_str(), &before);
  const auto r = RunProbe(MakeSpec("d", probes::ProbeKind::kBuffered, mnt.string(), 0), env);
  struct statvfs after {};
  statvfs(mnt.c_str(), &after);
  const bool made = fs::exists(mnt / kProbeFileName);
  umount(mnt.c_str());
  Shell("losetup -d " + device);
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.error.find("MiB available"), std::string::npos) << r.error;
  EXPECT_FALSE(made);
  EXPECT_GE(after.f_bavail, before.f_bavail);
}

}  // namespace
}  // namespace iodrift::probes
