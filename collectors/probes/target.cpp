#include "collectors/probes/target.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <random>

#include "collectors/common/proc_root.h"
#include "collectors/common/text.h"
#include "collectors/probes/io_util.h"

namespace iodrift::probes {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTmpPrefix = ".iodrift-probe.dat.tmp.";

std::string ReadSysfsLine(const fs::path& path) {
  auto text = ReadWholeFile(path, 64 * 1024);
  if (!text) return "";
  return std::string(text::Trim(*text));
}

// "none [mq-deadline] kyber" → "mq-deadline"; a single word is returned as is.
std::string SelectedScheduler(const std::string& line) {
  const auto open = line.find('[');
  const auto close = line.find(']');
  if (open != std::string::npos && close != std::string::npos && close > open) {
    return line.substr(open + 1, close - open - 1);
  }
  return line;
}

std::string DecodeMountField(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const auto a = s[i + 1], b = s[i + 2], c = s[i + 3];
      if (a >= '0' && a <= '7' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        out.push_back(static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::vector<MountEntry> ReadOwnMounts() {
  // Our own mount namespace, not the configured proc root: targets are paths as this process
  // sees them.
  auto text = ReadWholeFile("/proc/self/mountinfo");
  if (!text) return {};
  return ParseMountinfo(*text);
}

// The whole-disk name for a block dev_t ("sda" for sda1), "" when sysfs does not know it.
std::string DiskName(dev_t dev, const fs::path& sys_root) {
  const fs::path link =
      sys_root / "dev/block" / (std::to_string(major(dev)) + ":" + std::to_string(minor(dev)));
  std::error_code ec;
  const fs::path real = fs::canonical(link, ec);
  if (ec) return "";
  if (fs::exists(real / "partition", ec)) return real.parent_path().filename().string();
  return real.filename().string();
}

// The block device under a filesystem's dev_t: itself when sysfs knows it, else the mount
// source when that is a /dev node (btrfs and others use anonymous st_dev values).
std::optional<dev_t> BlockDeviceOfFilesystem(dev_t st_dev, const std::vector<MountEntry>& mounts,
                                             const fs::path& sys_root) {
  if (major(st_dev) != 0 && !DiskName(st_dev, sys_root).empty()) return st_dev;
  for (auto it = mounts.rbegin(); it != mounts.rend(); ++it) {
    if (it->major == major(st_dev) && it->minor == minor(st_dev) &&
        it->source.rfind("/dev/", 0) == 0) {
      struct stat st {};
      if (stat(it->source.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) return st.st_rdev;
    }
  }
  return std::nullopt;
}

void FillQueueFacts(const std::string& disk, const fs::path& sys_root, TargetInfo& info) {
  if (disk.empty()) return;
  info.device = disk;
  const fs::path queue = sys_root / "block" / disk / "queue";
  info.scheduler = SelectedScheduler(ReadSysfsLine(queue / "scheduler"));
  info.read_ahead_kb = ReadSysfsLine(queue / "read_ahead_kb");
  info.rotational = ReadSysfsLine(queue / "rotational");
  if (auto lbs = text::ParseU64(ReadSysfsLine(queue / "logical_block_size"))) {
    info.logical_block_size = static_cast<std::uint32_t>(*lbs);
  }
  info.loop_dio = ReadSysfsLine(sys_root / "block" / disk / "loop/dio");
}

void RemoveStaleTemporaries(const fs::path& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    std::string_view name = e->d_name;
    if (name.rfind(kTmpPrefix, 0) != 0) continue;
    // ".iodrift-probe.dat.tmp.<pid>.<n>": remove it only when <pid> is gone.
    auto rest = name.substr(kTmpPrefix.size());
    auto pid = text::ParseU64(rest.substr(0, rest.find('.')));
    if (pid && kill(static_cast<pid_t>(*pid), 0) != 0 && errno == ESRCH) {
      unlinkat(dirfd(d), e->d_name, 0);
    }
  }
  closedir(d);
}

}  // namespace

Expected<TargetType> ClassifyTarget(const std::string& target) {
  if (target.empty()) return Fail(EINVAL, "no target configured");
  struct stat st {};
  if (stat(target.c_str(), &st) != 0) {
    return Fail(errno, SystemErrorMessage("target " + target, errno));
  }
  if (S_ISBLK(st.st_mode)) return TargetType::kBlockDevice;
  if (S_ISREG(st.st_mode)) return TargetType::kRegularFile;
  if (S_ISDIR(st.st_mode)) return TargetType::kDirectory;
  const char* what = S_ISCHR(st.st_mode)    ? "a character device"
                     : S_ISFIFO(st.st_mode) ? "a fifo"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "of an unknown type";
  return Fail(EINVAL, "target " + target + " is " + what +
                          "; want a block device, a regular file or a directory");
}

Expected<bool> EnsureProbeFile(const fs::path& path, std::uint64_t bytes,
                               const RunControl& control) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      return Fail(EEXIST, "probe file " + path.string() + " exists and is not a regular file");
    }
    return false;
  }
  if (errno != ENOENT) return Fail(errno, SystemErrorMessage("stat " + path.string(), errno));
  if (bytes == 0) return Fail(EINVAL, "probe file " + path.string() + ": size 0");

  const fs::path dir = path.parent_path();
  RemoveStaleTemporaries(dir);
  static std::atomic<unsigned> counter{0};
  const fs::path tmp = dir / (std::string(kTmpPrefix) + std::to_string(getpid()) + "." +
                              std::to_string(counter.fetch_add(1)));
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Fail(errno, SystemErrorMessage("create probe file " + tmp.string(), errno));
  }
  UniqueFd out(fd);
  auto fail = [&](int err, const std::string& msg) -> Expected<bool> {
    out = UniqueFd();
    unlink(tmp.c_str());
    return Fail(err, msg);
  };

  auto buffer = AlignedBuffer::Make(kMiB, 4096);
  if (!buffer) return fail(buffer.error().code, buffer.error().message);
  std::random_device rd;
  std::uint64_t seed = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  for (std::uint64_t done = 0; done < bytes;) {
    if (control.Cancelled() || control.PastDeadline(MonotonicSeconds())) {
      return fail(ECANCELED,
                  "create probe file " + path.string() + ": stopped (timeout or shutdown)");
    }
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kMiB, bytes - done));
    FillPseudoRandom(buffer->data(), n, seed++);
    std::size_t off = 0;
    while (off < n) {
      const ssize_t w = write(out.get(), buffer->data() + off, n - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        return fail(errno, SystemErrorMessage("write probe file " + tmp.string(), errno));
      }
      off += static_cast<std::size_t>(w);
    }
    done += n;
  }
  if (fdatasync(out.get()) != 0) {
    return fail(errno, SystemErrorMessage("fdatasync probe file " + tmp.string(), errno));
  }
  // The data is clean now; drop it so creating the file does not fill the cache.
  posix_fadvise(out.get(), 0, 0, POSIX_FADV_DONTNEED);
  out = UniqueFd();

  if (renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
    const int err = errno;
    if (err == EEXIST) {  // someone else made it meanwhile: use theirs
      unlink(tmp.c_str());
      return false;
    }
    if (err != EINVAL || rename(tmp.c_str(), path.c_str()) != 0) {  // EINVAL: fs lacks NOREPLACE
      unlink(tmp.c_str());
      return Fail(err, SystemErrorMessage("rename probe file to " + path.string(), err));
    }
  }
  const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return true;
}

Expected<DataTarget> PrepareDataTarget(const std::string& target, std::uint64_t probe_file_bytes,
                                       const RunControl& control) {
  auto type = ClassifyTarget(target);
  if (!type) return tl::unexpected(type.error());
  DataTarget dt;
  dt.type = *type;
  dt.path = target;
  if (*type == TargetType::kDirectory) {
    const fs::path file = fs::path(target) / kProbeFileName;
    auto created = EnsureProbeFile(file, probe_file_bytes, control);
    if (!created) return tl::unexpected(created.error());
    dt.created_probe_file = *created;
    dt.path = file.string();
  }
  auto fd = OpenReadOnly(dt.path);
  if (!fd) return tl::unexpected(fd.error());
  if (*type == TargetType::kBlockDevice) {
    std::uint64_t size = 0;
    if (ioctl(fd->get(), BLKGETSIZE64, &size) != 0) {
      return Fail(errno, SystemErrorMessage("BLKGETSIZE64 " + dt.path, errno));
    }
    dt.size = size;
  } else {
    struct stat st {};
    if (fstat(fd->get(), &st) != 0)
      return Fail(errno, SystemErrorMessage("fstat " + dt.path, errno));
    dt.size = static_cast<std::uint64_t>(st.st_size);
  }
  if (dt.size == 0) return Fail(EINVAL, "target " + dt.path + " is empty; nothing to read");
  return dt;
}

Expected<fs::path> EnsureMetaDir(const fs::path& dir) {
  const fs::path meta = dir / kMetaDirName;
  if (mkdir(meta.c_str(), 0700) != 0 && errno != EEXIST) {
    return Fail(errno, SystemErrorMessage("mkdir " + meta.string(), errno));
  }
  struct stat st {};
  if (lstat(meta.c_str(), &st) != 0)
    return Fail(errno, SystemErrorMessage("stat " + meta.string(), errno));
  if (!S_ISDIR(st.st_mode)) return Fail(ENOTDIR, meta.string() + " exists and is not a directory");
  return meta;
}

std::vector<MountEntry> ParseMountinfo(std::string_view text_in) {
  std::vector<MountEntry> out;
  for (auto line : text::Lines(text_in)) {
    auto f = text::Fields(line);
    // id parent maj:min root mount_point options [optional...] - fstype source superopts
    if (f.size() < 7) continue;
    const auto dash = std::find(f.begin() + 6, f.end(), std::string_view("-"));
    if (dash == f.end() || f.end() - dash < 3) continue;
    const auto colon = f[2].find(':');
    if (colon == std::string_view::npos) continue;
    auto maj = text::ParseU64(f[2].substr(0, colon));
    auto min = text::ParseU64(f[2].substr(colon + 1));
    if (!maj || !min) continue;
    MountEntry e;
    e.major = static_cast<unsigned>(*maj);
    e.minor = static_cast<unsigned>(*min);
    e.mount_point = DecodeMountField(f[4]);
    e.fstype = std::string(dash[1]);
    e.source = DecodeMountField(dash[2]);
    out.push_back(std::move(e));
  }
  return out;
}

TargetInfo DescribeTarget(const std::string& read_path, const fs::path& sys_root) {
  TargetInfo info;
  struct stat st {};
  if (stat(read_path.c_str(), &st) != 0) return info;
  if (S_ISBLK(st.st_mode)) {
    info.fstype = "block";
    FillQueueFacts(DiskName(st.st_rdev, sys_root), sys_root, info);
    return info;
  }
  const auto mounts = ReadOwnMounts();
  for (auto it = mounts.rbegin(); it != mounts.rend(); ++it) {
    if (it->major == major(st.st_dev) && it->minor == minor(st.st_dev)) {
      info.fstype = it->fstype;
      break;
    }
  }
  if (auto dev = BlockDeviceOfFilesystem(st.st_dev, mounts, sys_root)) {
    FillQueueFacts(DiskName(*dev, sys_root), sys_root, info);
  }
  return info;
}

DioAlignment QueryDioAlignment(int fd, const fs::path& sys_root) {
  DioAlignment a;
  struct statx sx {};
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN | STATX_TYPE, &sx) == 0 &&
      (sx.stx_mask & STATX_DIOALIGN)) {
    a.source = "statx";
    if (sx.stx_dio_offset_align == 0) {
      a.refused = true;
      return a;
    }
    a.offset_align = sx.stx_dio_offset_align;
    a.mem_align = std::max<std::uint32_t>(4096, sx.stx_dio_mem_align);
    return a;
  }
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISBLK(st.st_mode)) {
    int lbs = 0;
    if (ioctl(fd, BLKSSZGET, &lbs) == 0 && lbs > 0) {
      a.source = "BLKSSZGET";
      a.offset_align = static_cast<std::uint32_t>(lbs);
      a.mem_align = std::max<std::uint32_t>(4096, a.offset_align);
      return a;
    }
  } else if (fstat(fd, &st) == 0) {
    const std::string disk = DiskName(st.st_dev, sys_root);
    if (!disk.empty()) {
      if (auto lbs =
              text::ParseU64(ReadSysfsLine(sys_root / "block" / disk / "queue/logical_block_size"));
          lbs && *lbs > 0) {
        a.source = "sysfs";
        a.offset_align = static_cast<std::uint32_t>(*lbs);
        a.mem_align = std::max<std::uint32_t>(4096, a.offset_align);
        return a;
      }
    }
  }
  a.source = "default";
  return a;
}

std::string DeviceKey(const config::ProbeSpec& spec, const fs::path& sys_root) {
  if (spec.kind == config::ProbeKind::kMemory) return "memory";
  if (spec.target.empty()) return "path:";
  const fs::path path = fs::path(spec.target).is_absolute()
                            ? fs::path(spec.target).lexically_normal()
                            : (fs::current_path() / spec.target).lexically_normal();
  const std::string p = path.string();
  if (p.rfind("/dev/", 0) == 0) {
    // devtmpfs never hangs; a block device node keys on its disk.
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) {
      const std::string disk = DiskName(st.st_rdev, sys_root);
      if (!disk.empty()) return "block:" + disk;
      return "dev:" + std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));
    }
  }
  // The mount holding the path, by longest mount-point prefix (no syscall on the target).
  const auto mounts = ReadOwnMounts();
  const MountEntry* best = nullptr;
  for (const auto& m : mounts) {
    const std::string& mp = m.mount_point;
    const bool prefix =
        mp == "/" || p == mp ||
        (p.size() > mp.size() && p.compare(0, mp.size(), mp) == 0 && p[mp.size()] == '/');
    if (prefix && (best == nullptr || mp.size() >= best->mount_point.size())) best = &m;
  }
  if (best == nullptr) return "path:" + p;
  const dev_t dev = makedev(best->major, best->minor);
  if (auto bdev = BlockDeviceOfFilesystem(dev, mounts, sys_root)) {
    const std::string disk = DiskName(*bdev, sys_root);
    if (!disk.empty()) return "block:" + disk;
  }
  return "dev:" + std::to_string(best->major) + ":" + std::to_string(best->minor);
}

}  // namespace iodrift::probes
