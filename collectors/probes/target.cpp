#include "collectors/probes/target.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "collectors/common/file_util.h"
#include "collectors/common/proc_root.h"
#include "collectors/common/text.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/kinds.h"
#include "collectors/probes/members.h"
#include "collectors/probes/netfs.h"

namespace iodrift::probes {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTmpPrefix = ".iodrift-probe.dat.tmp.";

void RemoveStaleTemporaries(int dir_fd) {
  const int copy = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return;
  DIR* d = fdopendir(copy);
  if (d == nullptr) {
    close(copy);
    return;
  }
  while (dirent* e = readdir(d)) {
    std::string_view name = e->d_name;
    if (name.rfind(kTmpPrefix, 0) != 0) continue;
    // ".iodrift-probe.dat.tmp.<pid>.<n>": remove it only when <pid> is gone.
    auto rest = name.substr(kTmpPrefix.size());
    auto pid = text::ParseU64(rest.substr(0, rest.find('.')));
    if (pid && kill(static_cast<pid_t>(*pid), 0) != 0 && errno == ESRCH) {
      unlinkat(dir_fd, e->d_name, 0);
    }
  }
  closedir(d);
}

std::string TypeName(unsigned type) {
  switch (type) {
    case S_IFREG:
      return "a regular file";
    case S_IFBLK:
      return "a block device";
    case S_IFDIR:
      return "a directory";
    case S_IFLNK:
      return "a symbolic link";
    case S_IFCHR:
      return "a character device";
    case S_IFIFO:
      return "a fifo";
    case S_IFSOCK:
      return "a socket";
    default:
      return "of an unknown type";
  }
}

std::string DevText(std::uint64_t d) {
  return std::to_string(major(d)) + ":" + std::to_string(minor(d));
}

std::string IdentityText(unsigned type, std::uint64_t dev, std::uint64_t ino, std::uint64_t rdev) {
  if (type == S_IFBLK) return "block device " + DevText(rdev);
  return TypeName(type) + " (device " + DevText(dev) + ", inode " + std::to_string(ino) + ")";
}

// open() flags for every read of a target: never a symlink, never blocking on a FIFO or a
// device that waits for a carrier, never a controlling tty.
constexpr int kTargetOpenFlags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;

// openat() with kTargetOpenFlags|extra, O_NOATIME when allowed, O_NONBLOCK cleared afterwards.
Expected<UniqueFd> OpenNoFollow(int dir_fd, const std::string& name, int extra,
                                const std::string& shown) {
  int fd = openat(dir_fd, name.c_str(), kTargetOpenFlags | extra | O_NOATIME);
  if (fd < 0 && errno == EPERM) fd = openat(dir_fd, name.c_str(), kTargetOpenFlags | extra);
  if (fd < 0) {
    const int err = errno;
    std::string what = "open " + shown;
    if (extra & O_DIRECT) what += " (O_DIRECT)";
    if (err == ELOOP) {
      return Fail(err, what +
                           ": is a symbolic link (not followed: only a target configured as a "
                           "symlink is resolved, once, at its first run)");
    }
    std::string msg = SystemErrorMessage(what, err);
    if (err == EACCES)
      msg += " (run as root, or give the iodrift user read access, e.g. group disk)";
    return Fail(err, msg);
  }
  if (const int fl = fcntl(fd, F_GETFL); fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return UniqueFd(fd);
}

// Refuses a pseudo filesystem under `fd`.
Expected<void> CheckNotPseudo(int fd, const std::string& shown) {
  struct statfs sf {};
  if (fstatfs(fd, &sf) != 0) return {};
  const auto name = PseudoFilesystemName(static_cast<std::uint64_t>(sf.f_type));
  if (!name.empty()) {
    return Fail(EINVAL, "target " + shown + " is on " + std::string(name) +
                            ", a pseudo filesystem of kernel attributes, not storage; refused");
  }
  return {};
}

// Refuses a directory others may write into unless it is sticky (/tmp-like): there another user
// could rename our files away and put theirs in their place.
Expected<void> CheckDirectoryNotShared(const struct stat& st, const std::string& shown) {
  const bool others = (st.st_mode & S_IWOTH) != 0 ||
                      ((st.st_mode & S_IWGRP) != 0 && st.st_gid != getegid()) ||
                      (st.st_uid != geteuid() && st.st_uid != 0);
  if (others && (st.st_mode & S_ISVTX) == 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Fail(EPERM, "target directory " + shown + " (mode " + mode + ", owner uid " +
                           std::to_string(st.st_uid) +
                           ") is writable by other users and not sticky; refused (use a "
                           "directory only root or iodriftd's user can write, or a sticky one)");
  }
  return {};
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

std::uint64_t FreeSpaceReserve(std::uint64_t filesystem_bytes) {
  if (filesystem_bytes == 0) return 0;
  return std::max<std::uint64_t>(filesystem_bytes / 20, 1ull << 30);
}

std::string_view PseudoFilesystemName(std::uint64_t f_type) {
  switch (f_type) {
    case 0x9fa0:
      return "proc";
    case 0x62656572:
      return "sysfs";
    case 0x64626720:
      return "debugfs";
    case 0x74726163:
      return "tracefs";
    case 0x27e0eb:
      return "cgroup";
    case 0x63677270:
      return "cgroup2";
    case 0x73636673:
      return "securityfs";
    case 0x1cd1:
      return "devpts";
    case 0x62656570:
      return "configfs";
    case 0xcafe4a11:
      return "bpf";
    case 0x6165676c:
      return "pstore";
    case 0xde5e81e4:
      return "efivarfs";
    case 0xf97cff8c:
      return "selinuxfs";
    case 0x43415d53:
      return "smackfs";
    case 0x6e736673:
      return "nsfs";
    case 0x42494e4d:
      return "binfmt_misc";
    case 0x65735543:
      return "fusectl";
    case 0x50495045:
      return "pipefs";
    case 0x534f434b:
      return "sockfs";
    case 0x444d4142:
      return "dma-buf";
    case 0x09041934:
      return "anon_inodefs";
    default:
      return "";
  }
}

std::optional<std::uint64_t> FirstUnallocatedByte(int fd, std::uint64_t length) {
  if (length == 0) return std::nullopt;
  const off_t hole = lseek(fd, 0, SEEK_HOLE);
  if (hole >= 0 && static_cast<std::uint64_t>(hole) < length) {
    return static_cast<std::uint64_t>(hole);
  }
  // Unwritten (fallocated) extents: ext4/xfs report them as holes to SEEK_HOLE only when no
  // cached page covers them; FIEMAP says so either way.
  constexpr unsigned kBatch = 256;
  std::vector<char> buf(sizeof(fiemap) + kBatch * sizeof(fiemap_extent));
  auto* fm = reinterpret_cast<fiemap*>(buf.data());
  std::uint64_t start = 0;
  for (int rounds = 0; rounds < 4096 && start < length; ++rounds) {
    std::memset(buf.data(), 0, buf.size());
    fm->fm_start = start;
    fm->fm_length = length - start;
    fm->fm_extent_count = kBatch;
    if (ioctl(fd, FS_IOC_FIEMAP, fm) != 0 || fm->fm_mapped_extents == 0) return std::nullopt;
    for (unsigned i = 0; i < fm->fm_mapped_extents; ++i) {
      const fiemap_extent& e = fm->fm_extents[i];
      if (e.fe_flags & FIEMAP_EXTENT_UNWRITTEN) return std::max<std::uint64_t>(e.fe_logical, start);
      start = e.fe_logical + e.fe_length;
      if (e.fe_flags & FIEMAP_EXTENT_LAST) return std::nullopt;
    }
  }
  return std::nullopt;
}

Expected<bool> EnsureProbeFile(int dir_fd, const std::string& shown_dir, std::string_view name_in,
                               std::uint64_t bytes, const RunControl& control) {
  const std::string name(name_in);
  const std::string path = shown_dir + "/" + name;
  struct stat st {};
  if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISREG(st.st_mode)) {
      return Fail(EEXIST, "probe file " + path + " exists and is " + TypeName(st.st_mode & S_IFMT) +
                              ", not a regular file");
    }
    return false;
  }
  if (errno != ENOENT) return Fail(errno, SystemErrorMessage("stat " + path, errno));
  if (bytes == 0) return Fail(EINVAL, "probe file " + path + ": size 0");

  struct statvfs sv {};
  if (fstatvfs(dir_fd, &sv) == 0) {
    const std::uint64_t total = static_cast<std::uint64_t>(sv.f_blocks) * sv.f_frsize;
    const std::uint64_t avail = static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize;
    const std::uint64_t reserve = FreeSpaceReserve(total);
    if (total > 0 && (avail < bytes || avail - bytes < reserve)) {
      return Fail(ENOSPC, "not creating probe file " + path + " (" + std::to_string(bytes >> 20) +
                              " MiB): the filesystem has " + std::to_string(avail >> 20) +
                              " MiB available and iodrift always leaves max(5 %, 1 GiB) = " +
                              std::to_string(reserve >> 20) + " MiB to others");
    }
  }

  RemoveStaleTemporaries(dir_fd);
  static std::atomic<unsigned> counter{0};
  const std::string tmp = std::string(kTmpPrefix) + std::to_string(getpid()) + "." +
                          std::to_string(counter.fetch_add(1));
  const std::string shown_tmp = shown_dir + "/" + tmp;
  const int fd = openat(dir_fd, tmp.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Fail(errno, SystemErrorMessage("create probe file " + shown_tmp, errno));
  }
  UniqueFd out(fd);
  auto fail = [&](int err, const std::string& msg) -> Expected<bool> {
    out = UniqueFd();
    unlinkat(dir_fd, tmp.c_str(), 0);
    return Fail(err, msg);
  };

  auto buffer = AlignedBuffer::Make(kMiB, 4096);
  if (!buffer) return fail(buffer.error().code, buffer.error().message);
  std::random_device rd;
  std::uint64_t seed = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  for (std::uint64_t done = 0; done < bytes;) {
    if (control.Cancelled() || control.PastDeadline(MonotonicSeconds())) {
      return fail(ECANCELED, "create probe file " + path + ": stopped (timeout or shutdown)");
    }
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kMiB, bytes - done));
    FillPseudoRandom(buffer->data(), n, seed++);
    if (auto w =
            WriteAll(out.get(), std::string_view(buffer->data(), n), "probe file " + shown_tmp);
        !w) {
      return fail(w.error().code, w.error().message);
    }
    done += n;
  }
  if (fdatasync(out.get()) != 0) {
    return fail(errno, SystemErrorMessage("fdatasync probe file " + shown_tmp, errno));
  }
  // The data is clean now; drop it so creating the file does not fill the cache.
  posix_fadvise(out.get(), 0, 0, POSIX_FADV_DONTNEED);
  out = UniqueFd();

  if (renameat2(dir_fd, tmp.c_str(), dir_fd, name.c_str(), RENAME_NOREPLACE) != 0) {
    const int err = errno;
    if (err == EEXIST) {  // someone else made it meanwhile: checked like any existing one
      unlinkat(dir_fd, tmp.c_str(), 0);
      return false;
    }
    // EINVAL: the filesystem lacks RENAME_NOREPLACE; a hard link never replaces either.
    const int e = err != EINVAL                                               ? err
                  : linkat(dir_fd, tmp.c_str(), dir_fd, name.c_str(), 0) == 0 ? 0
                                                                              : errno;
    unlinkat(dir_fd, tmp.c_str(), 0);
    if (e == EEXIST) return false;
    if (e != 0) return Fail(e, SystemErrorMessage("rename probe file to " + path, e));
  }
  fsync(dir_fd);
  return true;
}

Expected<bool> EnsureProbeFile(const fs::path& path, std::uint64_t bytes,
                               const RunControl& control) {
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  auto dfd = OpenDirectory(AT_FDCWD, dir.string(), false);
  if (!dfd) return tl::unexpected(dfd.error());
  return EnsureProbeFile(dfd->get(), dir.string(), path.filename().string(), bytes, control);
}

Expected<DataTarget> PrepareDataTarget(const std::string& target, std::uint64_t probe_file_bytes,
                                       const RunControl& control, TargetDevices* pins,
                                       const std::string& pin_key) {
  if (target.empty()) return Fail(EINVAL, "no target configured");
  const std::string& key = pin_key.empty() ? target : pin_key;
  DataTarget dt;
  dt.path = target;
  // Where to open: the pinned path; else the configured path, resolved once when it is itself a
  // symlink (the configuration named a link, e.g. /dev/disk/by-id/…).
  std::optional<TargetDevices::Identity> pinned = pins ? pins->Pinned(key) : std::nullopt;
  std::string open_path = target;
  if (pinned) {
    open_path = pinned->open_path;
  } else {
    struct stat lst {};
    if (lstat(target.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
      std::error_code ec;
      const fs::path real = fs::canonical(target, ec);
      if (ec) {
        return Fail(ec.value(), "target " + target + ": cannot resolve symlink: " + ec.message());
      }
      open_path = real.string();
    }
  }
  // Never open (a side effect for some devices) what is not a file, device or directory.
  struct stat pre {};
  if (lstat(open_path.c_str(), &pre) != 0) {
    return Fail(errno, SystemErrorMessage("target " + target, errno));
  }
  const unsigned pre_type = pre.st_mode & S_IFMT;
  if (pre_type != S_IFREG && pre_type != S_IFBLK && pre_type != S_IFDIR) {
    if (pre_type == S_IFLNK) {
      return Fail(ELOOP, "target " + open_path +
                             " is now a symbolic link; not following it (only a target configured "
                             "as a symlink is resolved, once, at its first run)");
    }
    return Fail(EINVAL, "target " + open_path + " is " + TypeName(pre_type) +
                            "; want a block device, a regular file or a directory");
  }
  if (pre_type == S_IFDIR) {
    auto dfd = OpenDirectory(AT_FDCWD, open_path, true);
    if (!dfd) {
      return Fail(dfd.error().code, SystemErrorMessage("target " + target, dfd.error().code));
    }
    struct stat st {};
    if (fstat(dfd->get(), &st) != 0)
      return Fail(errno, SystemErrorMessage("fstat " + target, errno));
    if (auto ok = CheckNotPseudo(dfd->get(), target); !ok) return tl::unexpected(ok.error());
    if (auto ok = CheckDirectoryNotShared(st, target); !ok) return tl::unexpected(ok.error());
    dt.type = TargetType::kDirectory;
    auto created = EnsureProbeFile(dfd->get(), target, kProbeFileName, probe_file_bytes, control);
    if (!created) return tl::unexpected(created.error());
    dt.created_probe_file = *created;
    dt.path = (fs::path(target) / kProbeFileName).string();
    dt.open_path = std::string(kProbeFileName);
    dt.dir_fd = std::move(*dfd);
    auto fd = OpenNoFollow(dt.dir_fd.get(), dt.open_path, 0, dt.path);
    if (!fd) return tl::unexpected(fd.error());
    struct stat pst {};
    if (fstat(fd->get(), &pst) != 0)
      return Fail(errno, SystemErrorMessage("fstat " + dt.path, errno));
    if (!S_ISREG(pst.st_mode) || pst.st_uid != geteuid() || pst.st_nlink != 1) {
      return Fail(EPERM, "probe file " + dt.path + " was not made by iodriftd (" +
                             TypeName(pst.st_mode & S_IFMT) + ", owner uid " +
                             std::to_string(pst.st_uid) + ", " + std::to_string(pst.st_nlink) +
                             " links); not reading it. Remove it and iodriftd makes its own");
    }
    dt.mode_type = S_IFREG;
    dt.dev = pst.st_dev;
    dt.ino = pst.st_ino;
    dt.size = static_cast<std::uint64_t>(pst.st_size);
    dt.mtime_ns = static_cast<std::int64_t>(pst.st_mtim.tv_sec) * 1000000000 + pst.st_mtim.tv_nsec;
    if (dt.size == 0) return Fail(EINVAL, "target " + dt.path + " is empty; nothing to read");
    if (auto ok = CheckDataOnDisk(fd->get(), dt.path, dt.size, "probe file"); !ok) {
      return tl::unexpected(ok.error());
    }
    return dt;
  }

  auto fd = OpenNoFollow(AT_FDCWD, open_path, 0, open_path);
  if (!fd) return tl::unexpected(fd.error());
  struct stat st {};
  if (fstat(fd->get(), &st) != 0) {
    return Fail(errno, SystemErrorMessage("fstat " + open_path, errno));
  }
  dt.mode_type = st.st_mode & S_IFMT;
  dt.dev = st.st_dev;
  dt.ino = st.st_ino;
  dt.rdev = st.st_rdev;
  dt.open_path = open_path;
  dt.path = open_path;
  if (dt.mode_type != S_IFREG && dt.mode_type != S_IFBLK) {
    return Fail(EINVAL, "target " + open_path + " is " + TypeName(dt.mode_type) +
                            "; want a block device, a regular file or a directory");
  }
  dt.type = dt.mode_type == S_IFBLK ? TargetType::kBlockDevice : TargetType::kRegularFile;
  if (pinned) {
    const bool same = pinned->type == dt.mode_type &&
                      (dt.mode_type == S_IFBLK ? pinned->rdev == dt.rdev
                                               : pinned->dev == dt.dev && pinned->ino == dt.ino);
    if (!same) {
      if (pinned->type == S_IFREG && dt.mode_type == S_IFREG) {
        // Another regular file at the same path (rewritten, restored): measured, but as a new
        // target — its baseline starts over (UpdateBaseline).
        dt.replaced = true;
      } else {
        return Fail(ESTALE, "target " + target + " is now " +
                                IdentityText(dt.mode_type, dt.dev, dt.ino, dt.rdev) +
                                ", first probed as " +
                                IdentityText(pinned->type, pinned->dev, pinned->ino, pinned->rdev) +
                                "; not measuring it against the old baseline. Reload "
                                "(iodriftctl reload, SIGHUP) or restart iodriftd to accept it");
      }
    }
  }
  if (pins && (!pinned || dt.replaced)) {
    pins->Pin(key, TargetDevices::Identity{open_path, dt.mode_type, dt.dev, dt.ino, dt.rdev});
  }
  if (dt.mode_type == S_IFBLK) {
    std::uint64_t size = 0;
    if (ioctl(fd->get(), BLKGETSIZE64, &size) != 0) {
      return Fail(errno, SystemErrorMessage("BLKGETSIZE64 " + dt.path, errno));
    }
    dt.size = size;
  } else {
    if (auto ok = CheckNotPseudo(fd->get(), target); !ok) return tl::unexpected(ok.error());
    dt.size = static_cast<std::uint64_t>(st.st_size);
    dt.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  }
  if (dt.size == 0) return Fail(EINVAL, "target " + dt.path + " is empty; nothing to read");
  if (dt.mode_type == S_IFREG) {
    if (auto ok = CheckDataOnDisk(fd->get(), dt.path, dt.size, "target"); !ok) {
      return tl::unexpected(ok.error());
    }
  }
  return dt;
}

Expected<UniqueFd> OpenDataTarget(const DataTarget& dt, int extra_flags) {
  const int dir = dt.dir_fd.valid() ? dt.dir_fd.get() : AT_FDCWD;
  auto fd = OpenNoFollow(dir, dt.open_path, extra_flags, dt.path);
  if (!fd) return fd;
  struct stat st {};
  if (fstat(fd->get(), &st) != 0) return Fail(errno, SystemErrorMessage("fstat " + dt.path, errno));
  const unsigned type = st.st_mode & S_IFMT;
  const bool same =
      type == dt.mode_type &&
      (type == S_IFBLK ? st.st_rdev == dt.rdev : st.st_dev == dt.dev && st.st_ino == dt.ino);
  if (!same) {
    return Fail(ESTALE, "target " + dt.path + " was replaced during the run (now " +
                            IdentityText(type, st.st_dev, st.st_ino, st.st_rdev) + ")");
  }
  return fd;
}

Expected<UniqueFd> OpenMetaDir(const std::string& dir) {
  auto dfd = OpenDirectory(AT_FDCWD, dir, false);
  if (!dfd) return Fail(dfd.error().code, SystemErrorMessage("target " + dir, dfd.error().code));
  struct stat st {};
  if (fstat(dfd->get(), &st) != 0) return Fail(errno, SystemErrorMessage("fstat " + dir, errno));
  if (auto ok = CheckNotPseudo(dfd->get(), dir); !ok) return tl::unexpected(ok.error());
  if (auto ok = CheckDirectoryNotShared(st, dir); !ok) return tl::unexpected(ok.error());
  const std::string meta = (fs::path(dir) / kMetaDirName).string();
  const std::string name(kMetaDirName);
  if (mkdirat(dfd->get(), name.c_str(), 0700) != 0 && errno != EEXIST) {
    return Fail(errno, SystemErrorMessage("mkdir " + meta, errno));
  }
  const int raw = openat(dfd->get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (raw < 0) {
    const int err = errno;
    if (err == ELOOP || err == ENOTDIR) {
      return Fail(ENOTDIR, meta + " exists and is not a directory (a symlink is never followed)");
    }
    return Fail(err, SystemErrorMessage("open " + meta, err));
  }
  UniqueFd mfd(raw);
  struct stat mst {};
  if (fstat(mfd.get(), &mst) != 0) return Fail(errno, SystemErrorMessage("fstat " + meta, errno));
  if (mst.st_uid != geteuid() || (mst.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(mst.st_mode & 07777));
    return Fail(EPERM, meta + " is owned by uid " + std::to_string(mst.st_uid) + " with mode " +
                           mode + ", not iodriftd's own (uid " + std::to_string(geteuid()) +
                           ", writable by it alone); not working in it");
  }
  return mfd;
}

Expected<fs::path> EnsureMetaDir(const fs::path& dir) {
  auto fd = OpenMetaDir(dir.string());
  if (!fd) return tl::unexpected(fd.error());
  return dir / kMetaDirName;
}

std::optional<DataTarget> PrepareKindTarget(const ProbeSpec& spec, const ProbeEnv& env,
                                            const RunControl& control, ProbeResult& result) {
  // A directory on a remote filesystem gets a smaller probe file (netfs.h). FUSE is remote only
  // with evidence (its mount entry, IsRemoteMount); the probe's `remote:` key decides first.
  std::uint64_t file_bytes = std::max(spec.size, env.probe_file_bytes);
  bool remote = false;
  if (spec.remote) {
    remote = *spec.remote;
  } else if (struct statfs sfs{}; statfs(spec.target.c_str(), &sfs) == 0) {
    const std::string_view magic = RemoteFilesystemName(static_cast<std::uint64_t>(sfs.f_type));
    remote = !magic.empty() && (magic != "fuse" || TargetLooksRemote(spec.target));
  }
  if (remote) file_bytes = std::max(spec.size, kRemoteProbeFileBytes);
  auto dt = PrepareDataTarget(spec.target, file_bytes, control, env.target_devices.get(),
                              spec.name + "\n" + spec.target);
  if (!dt) {
    MarkFailed(result, Outcome::kError, dt.error().message);
    return std::nullopt;
  }
  result.target_info = DescribeTarget(dt->path, env.sys_root);
  if (spec.remote) result.target_info.remote = *spec.remote ? "1" : "0";  // as configured
  if (dt->created_probe_file) result.extra["probe_file_created"] = 1;
  if (dt->replaced) result.extra["target_replaced"] = 1;  // its baseline starts over
  return std::move(*dt);
}

}  // namespace iodrift::probes
