// What a target is on: the mount table (ParseMountinfo), the block device and disk under a path,
// its queue facts for iodrift_probe_target_info (DescribeTarget), O_DIRECT alignment and the
// device lane key (DeviceKey). Split from target.cpp, which keeps the safety checks and the
// probe files; both implement target.h.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "collectors/common/file_util.h"
#include "collectors/common/proc_root.h"
#include "collectors/common/text.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/kinds.h"
#include "collectors/probes/members.h"
#include "collectors/probes/netfs.h"
#include "collectors/probes/target.h"

namespace iodrift::probes {
namespace {

namespace fs = std::filesystem;

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

// The block device's own name for a dev_t ("sda1" for sda1), "" when sysfs does not know it.
std::string BlockName(dev_t dev, const fs::path& sys_root) {
  const fs::path link =
      sys_root / "dev/block" / (std::to_string(major(dev)) + ":" + std::to_string(minor(dev)));
  std::error_code ec;
  const fs::path real = fs::canonical(link, ec);
  if (ec) return "";
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
}  // namespace

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
    e.root = DecodeMountField(f[3]);
    if (dash + 3 < f.end()) e.super_options = std::string(dash[3]);
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
    info.remote = "0";
    FillQueueFacts(DiskName(st.st_rdev, sys_root), sys_root, info);
    const std::string own = BlockName(st.st_rdev, sys_root);
    info.members = ArrayMembers(own, sys_root);
    info.devices = info.members;
    if (info.devices.empty() && !info.device.empty()) info.devices = {info.device};
    return info;
  }
  const auto mounts = ReadOwnMounts();
  dev_t fs_dev = st.st_dev;
  std::string source;
  for (auto it = mounts.rbegin(); it != mounts.rend(); ++it) {
    if (it->major == major(st.st_dev) && it->minor == minor(st.st_dev)) {
      info.fstype = it->fstype;
      source = it->source;
      break;
    }
  }
  if (info.fstype.empty()) {
    // btrfs gives files a subvolume's anonymous st_dev that mountinfo does not list: the mount
    // holding the path instead.
    std::error_code ec;
    const fs::path real = fs::weakly_canonical(read_path, ec);
    if (const MountEntry* m = ec ? nullptr : MountOf(real.string(), mounts)) {
      info.fstype = m->fstype;
      source = m->source;
      fs_dev = makedev(m->major, m->minor);
    }
  }
  struct statfs sfs {};
  const std::uint64_t f_type =
      statfs(read_path.c_str(), &sfs) == 0 ? static_cast<std::uint64_t>(sfs.f_type) : 0;
  const FilesystemKind kind = ClassifyFilesystem(f_type, info.fstype, source);
  info.fstype = kind.fstype;
  info.remote = kind.remote ? "1" : "0";
  if (auto dev = BlockDeviceOfFilesystem(fs_dev, mounts, sys_root)) {
    FillQueueFacts(DiskName(*dev, sys_root), sys_root, info);
    const std::string own = BlockName(*dev, sys_root);
    info.devices = BtrfsMembers(own, sys_root);
    if (info.devices.empty()) info.devices = ArrayMembers(own, sys_root);
    if (info.devices.empty() && !info.device.empty()) info.devices = {info.device};
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

std::string DeviceKey(const ProbeSpec& spec, const fs::path& sys_root) {
  if (!Traits(spec.kind).has_target) return std::string(Traits(spec.kind).name);
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
  const MountEntry* best = MountOf(p, mounts);
  if (best == nullptr) return "path:" + p;
  const dev_t dev = makedev(best->major, best->minor);
  if (auto bdev = BlockDeviceOfFilesystem(dev, mounts, sys_root)) {
    const std::string disk = DiskName(*bdev, sys_root);
    if (!disk.empty()) return "block:" + disk;
  }
  return "dev:" + std::to_string(best->major) + ":" + std::to_string(best->minor);
}

}  // namespace iodrift::probes
