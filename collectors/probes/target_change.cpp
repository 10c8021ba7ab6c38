// A data target changing under a run: data not on the disk yet, and a file or device that is
// no longer what the run started on (target.h CheckDataOnDisk, CheckTargetUnchanged).
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <cerrno>
#include <string>

#include "collectors/probes/io_util.h"
#include "collectors/probes/target.h"

namespace iodrift::probes {
namespace {

std::string KiB(std::uint64_t bytes) { return std::to_string((bytes + 1023) / 1024) + " KiB"; }

std::int64_t MtimeNs(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace

Expected<void> CheckDataOnDisk(int fd, const std::string& path, std::uint64_t size,
                               std::string_view what) {
  const std::string name = std::string(what) + " " + path;
  // Data dirty in the page cache with its blocks already reserved (ext4's delayed allocation
  // shows as allocated) is read like any other: the check is only about blocks that are missing.
  const std::optional<std::uint64_t> hole = FirstUnallocatedByte(fd, size);
  if (!hole) return {};
  // A missing block while writeback of this file is in flight is the writeback converting its
  // extents, not a sparse file: transient, with no advice to fix anything.
  const std::optional<std::uint64_t> pending = PendingWritebackBytes(fd, 0, size);
  if (pending && *pending > 0) {
    return Fail(EAGAIN, name + " has " + KiB(*pending) +
                            " written but not on the disk yet (dirty or under writeback): reads "
                            "would time the page cache, and its blocks may not be allocated yet; "
                            "not measured now, the next run measures it once writeback is done "
                            "(nothing to fix)");
  }
  const std::string at = " at byte " + std::to_string(*hole);
  if (what == "probe file") {
    return Fail(EINVAL, name + " has a hole or unwritten extent" + at +
                            "; remove it and iodriftd makes a new one");
  }
  if (!pending) {
    return Fail(EINVAL, name + " has a hole or unwritten extent" + at +
                            ": either data written moments ago is still being written back (the "
                            "next run measures it then), or the file is sparse or fallocated and "
                            "reads back zeros without touching the disk (write real data to it, "
                            "or use a directory target)");
  }
  return Fail(EINVAL, name + " is sparse: a hole or unwritten (fallocated) extent" + at +
                          " reads back zeros without touching the disk; refused (write real "
                          "data to it, or use a directory target)");
}

bool CheckTargetUnchanged(const DataTarget& dt, int fd, ProbeResult& result) {
  const std::string changed = "target " + dt.path + " changed during the run: ";
  const std::string not_measured = "; the figure would not measure what the run started on";
  if (dt.mode_type == S_IFBLK) {
    std::uint64_t size = 0;
    if (ioctl(fd, BLKGETSIZE64, &size) == 0 && size != dt.size) {
      MarkFailed(result, Outcome::kError,
                 changed + "the device's size went from " + std::to_string(dt.size) + " to " +
                     std::to_string(size) + " bytes" + not_measured);
      return false;
    }
    return true;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    MarkFailed(result, Outcome::kError, SystemErrorMessage("fstat " + dt.path, errno));
    return false;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size != dt.size) {
    MarkFailed(result, Outcome::kError,
               changed + (size < dt.size ? "it shrank" : "it grew") + " from " +
                   std::to_string(dt.size) + " to " + std::to_string(size) + " bytes" +
                   not_measured);
    return false;
  }
  // The path still names the file read (not replaced by a rename, not removed).
  struct stat now {};
  const int dir = dt.dir_fd.valid() ? dt.dir_fd.get() : AT_FDCWD;
  const bool removed = fstatat(dir, dt.open_path.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0;
  if (removed || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
    MarkFailed(result, Outcome::kError,
               changed + "its path " +
                   (removed ? "no longer names a file" : "now names another file (replaced)") +
                   not_measured);
    return false;
  }
  // Written during the run (its mtime moved): the figure may mix old and new data.
  if (MtimeNs(st) != dt.mtime_ns) {
    AddSuspect(result, "target_modified");
  }
  return true;
}

}  // namespace iodrift::probes
