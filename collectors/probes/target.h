// Probe targets: what a configured `target` is, what a probe actually reads for it, the facts
// about the device underneath (the iodrift_probe_target_info labels), O_DIRECT alignment, and the
// device key that serialises probes per device.
//
// A target is a block device (opened O_RDONLY only, never written, no flush ioctl), a regular
// file (only read), or a directory. In a directory iodrift makes and owns exactly two things:
//   <dir>/iodrift-probe.dat  — created once by the first data probe (cached/buffered/direct/
//                              random): real pseudo-random bytes (never fallocate, whose
//                              unwritten extents read back as zeros without touching the disk),
//                              fsynced, atomically renamed into place, then never written again;
//   <dir>/iodrift-meta/      — the metadata probe's private directory.
// Everything in a directory goes through a directory fd with O_NOFOLLOW; a directory others may
// write is refused unless sticky; iodrift's own entries must be owned by its euid. File and
// device targets are opened O_NOFOLLOW|O_NONBLOCK and pinned to their first identity (see
// PrepareDataTarget and docs/security.md).
//
// Thread-safety: all functions are reentrant. Functions that touch the target may block in the
// kernel (a hung FUSE or NFS mount) and run on probe threads only; DeviceKey() does not touch the
// target (lexical path + /proc/self/mountinfo + sysfs) and is safe on the scheduler thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/error.h"
#include "collectors/common/file_util.h"
#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"

namespace iodrift::probes {

inline constexpr std::string_view kProbeFileName = "iodrift-probe.dat";
inline constexpr std::string_view kMetaDirName = "iodrift-meta";

enum class TargetType { kBlockDevice, kRegularFile, kDirectory };

// stat()s `target` and classifies it. Errors: ENOENT/EACCES/… with the path in the message;
// EINVAL for other file types ("… is a character device; want a block device, regular file or
// directory").
Expected<TargetType> ClassifyTarget(const std::string& target);

// What a data kind (cached, buffered, direct, random) reads for a target, opened and checked
// (docs/security.md): never through a symlink the configuration did not name, never on a pseudo
// filesystem, never a file with holes or unwritten extents, and always the same object as at the
// first run (device+inode, or device number for a block device).
struct DataTarget {
  TargetType type = TargetType::kRegularFile;  // of the configured target
  std::string path;                            // the device, the file, or <dir>/iodrift-probe.dat
  std::uint64_t size = 0;  // readable bytes (BLKGETSIZE64 for a device, st_size for a file)
  bool created_probe_file = false;  // this call made the probe file
  bool replaced = false;            // a regular file target is another file than at its last run
  UniqueFd dir_fd;                  // directory targets: the directory
  std::string open_path;            // what OpenDataTarget opens (relative to dir_fd for a dir)
  unsigned mode_type = 0;           // S_IFMT of the object read
  std::uint64_t dev = 0, ino = 0, rdev = 0;
  std::int64_t mtime_ns = 0;  // regular files: st_mtim when the run started
};

// Opens `target` for a run; for a directory makes sure the probe file exists (EnsureProbeFile
// with `probe_file_bytes`). `pins` (may be null) keeps each target's first identity across runs.
// Fails on a missing/unreadable target, a symlink swapped in (O_NOFOLLOW), a changed device or
// type, a pseudo filesystem, an empty or sparse file, a shared directory that is not sticky, a
// probe file not made by iodriftd, or a probe file that cannot be made (no space above the
// reserve, EROFS, EACCES: nothing is left behind).
// `pin_key` names the pin (default: the target); each probe keeps its own, so every probe on a
// replaced file sees the replacement once.
Expected<DataTarget> PrepareDataTarget(const std::string& target, std::uint64_t probe_file_bytes,
                                       const RunControl& control, TargetDevices* pins = nullptr,
                                       const std::string& pin_key = "");

// The prologue every data kind (cached, buffered, direct, random) shares: PrepareDataTarget for
// `spec` (at least env.probe_file_bytes, pinned under the probe's own key), the target described
// into result.target_info, and result.extra["probe_file_created"] / ["target_replaced"] (the
// latter restarts the baseline). nullopt when the target cannot be used: `result` is then
// marked failed with the reason.
std::optional<DataTarget> PrepareKindTarget(const ProbeSpec& spec, const ProbeEnv& env,
                                            const RunControl& control, ProbeResult& result);

// Opens the object PrepareDataTarget checked, read-only with `extra_flags` (O_DIRECT), never
// following a symlink; fails when it is no longer the same object (swapped during the run).
Expected<UniqueFd> OpenDataTarget(const DataTarget& dt, int extra_flags = 0);

// Makes `name` in directory `dir_fd` a regular file of `bytes` pseudo-random bytes unless it
// already exists: written to a temporary name (O_CREAT|O_EXCL|O_NOFOLLOW) in the same directory,
// fdatasync()ed, renamed into place (never replacing an existing file), the directory fsync()ed,
// and its pages dropped from the cache. Refused (ENOSPC) when the filesystem would keep less
// than FreeSpaceReserve() available. Returns true when it created the file, false when one was
// there. On failure or cancellation the temporary file is removed.
Expected<bool> EnsureProbeFile(int dir_fd, const std::string& shown_dir, std::string_view name,
                               std::uint64_t bytes, const RunControl& control);
// The same for a path (its parent directory is opened first).
Expected<bool> EnsureProbeFile(const std::filesystem::path& path, std::uint64_t bytes,
                               const RunControl& control);

// Bytes a directory target's filesystem always keeps available to others after iodrift creates
// its probe file: max(5 % of the filesystem, 1 GiB). A filesystem that reports no size (ramfs)
// has no reserve.
std::uint64_t FreeSpaceReserve(std::uint64_t filesystem_bytes);

// The name of a pseudo filesystem (proc, sysfs, debugfs, tracefs, cgroup, cgroup2, securityfs,
// devpts, configfs, bpf, pstore, efivarfs, selinuxfs, nsfs, …) for a statfs f_type, or "" for
// anything else. Targets on these are refused: their "files" are kernel attributes, not storage.
std::string_view PseudoFilesystemName(std::uint64_t f_type);

// The first byte in [0, length) of `fd`'s file that is a hole (SEEK_HOLE) or in an unwritten
// (fallocated) extent (FIEMAP_EXTENT_UNWRITTEN), or nullopt when all of it is written data or
// the filesystem tells neither.
std::optional<std::uint64_t> FirstUnallocatedByte(int fd, std::uint64_t length);

// A regular file's data is on the disk, so that reading it times the disk: refused (EAGAIN) while
// any of [0, size) is dirty or under writeback — written moments ago, its blocks perhaps not
// allocated yet (ext4 shows unwritten extents until writeback ends): not measured now, the next
// run measures it (nothing to fix); refused (EINVAL) when it has a hole or unwritten extent
// (FirstUnallocatedByte): sparse or fallocated. When the kernel does not say what is dirty
// (cachestat refused or missing), an unwritten extent is refused naming both causes.
// `what`: "target" or "probe file" (iodriftd's own: the advice is to remove it).
Expected<void> CheckDataOnDisk(int fd, const std::string& path, std::uint64_t size,
                               std::string_view what);

// After a run's reads: the file or device read is still what the run started on (`fd` is one
// of the run's fds). Changed size (truncated, shrunk, grown; a resized device) or a path that now
// names another file or none (replaced, removed) → `result` failed (error) with the reason, false.
// Same size but written meanwhile (mtime changed, or pages dirty now) → suspect
// `target_modified`: the reads may have timed freshly written pages; true.
bool CheckTargetUnchanged(const DataTarget& dt, int fd, ProbeResult& result);

// Opens (mkdir 0700 first) <dir>/iodrift-meta for the metadata probe, only through directory fds
// (O_NOFOLLOW|O_DIRECTORY): refuses a target directory writable by others unless it is sticky,
// a pseudo filesystem, and an iodrift-meta that is not a directory owned by iodriftd's euid and
// writable by it alone.
Expected<UniqueFd> OpenMetaDir(const std::string& dir);
// OpenMetaDir and returns the path (for tests).
Expected<std::filesystem::path> EnsureMetaDir(const std::filesystem::path& dir);

// One line of /proc/self/mountinfo (Documentation/filesystems/proc.rst §3.5).
struct MountEntry {
  unsigned major = 0;
  unsigned minor = 0;
  std::string mount_point;  // \040-style escapes decoded
  std::string fstype;
  std::string source;
  std::string root;           // the directory of the filesystem mounted here ("/" usually)
  std::string super_options;  // "rw,cpu" (cgroup v1 controllers are listed here)
};
std::vector<MountEntry> ParseMountinfo(std::string_view text);

// Facts about the filesystem and block device holding `read_path` (a device node gives fstype
// "block"). Unknown facts stay empty; never fails.
TargetInfo DescribeTarget(const std::string& read_path, const std::filesystem::path& sys_root);

// O_DIRECT alignment for an open fd.
struct DioAlignment {
  bool refused = false;  // statx says this file has no O_DIRECT (stx_dio_offset_align 0)
  std::uint32_t offset_align = 4096;  // file offsets and lengths are multiples of this
  std::uint32_t mem_align = 4096;     // buffer alignment (at least 4096)
  std::string source;                 // "statx" | "BLKSSZGET" | "sysfs" | "default"
};
// statx(STATX_DIOALIGN) (Linux ≥ 6.1; block devices ≥ 6.11), else BLKSSZGET for a device, else
// the logical_block_size of the file's disk, else 4096.
DioAlignment QueryDioAlignment(int fd, const std::filesystem::path& sys_root);

// Key of the device a probe reads, for "one probe at a time per device": "memory" for the
// memory kind, "block:<disk>" when the target (or the filesystem holding it) is on a block
// device (partitions map to their disk), "dev:MAJ:MIN" for other filesystems (tmpfs, NFS, FUSE),
// "path:<target>" when nothing is known. Never touches the target itself (it may hang).
std::string DeviceKey(const ProbeSpec& spec, const std::filesystem::path& sys_root = "/sys");

}  // namespace iodrift::probes
