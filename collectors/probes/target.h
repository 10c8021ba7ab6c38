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
//
// Thread-safety: all functions are reentrant. Functions that touch the target may block in the
// kernel (a hung FUSE or NFS mount) and run on probe threads only; DeviceKey() does not touch the
// target (lexical path + /proc/self/mountinfo + sysfs) and is safe on the scheduler thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/error.h"
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

// What a data kind (cached, buffered, direct, random) reads for a target.
struct DataTarget {
  TargetType type = TargetType::kRegularFile;  // of the configured target
  std::string path;                            // the device, the file, or <dir>/iodrift-probe.dat
  std::uint64_t size = 0;  // readable bytes (BLKGETSIZE64 for a device, st_size for a file)
  bool created_probe_file = false;  // this call made the probe file
};

// Classifies `target`; for a directory makes sure the probe file exists (EnsureProbeFile with
// `probe_file_bytes`). Fails on a missing/unreadable target, an empty file, or a probe file that
// cannot be made (ENOSPC, EROFS, EACCES: nothing is left behind).
Expected<DataTarget> PrepareDataTarget(const std::string& target, std::uint64_t probe_file_bytes,
                                       const RunControl& control);

// Makes `path` a regular file of `bytes` pseudo-random bytes unless it already exists: written
// to a temporary name in the same directory, fdatasync()ed, renamed into place (never replacing
// an existing file), the directory fsync()ed, and its pages dropped from the cache. Returns true
// when it created the file, false when one was there. On failure or cancellation the temporary
// file is removed.
Expected<bool> EnsureProbeFile(const std::filesystem::path& path, std::uint64_t bytes,
                               const RunControl& control);

// Makes <dir>/iodrift-meta (mode 0700) unless it exists; returns its path.
Expected<std::filesystem::path> EnsureMetaDir(const std::filesystem::path& dir);

// One line of /proc/self/mountinfo (Documentation/filesystems/proc.rst §3.5).
struct MountEntry {
  unsigned major = 0;
  unsigned minor = 0;
  std::string mount_point;  // \040-style escapes decoded
  std::string fstype;
  std::string source;
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
std::string DeviceKey(const config::ProbeSpec& spec,
                      const std::filesystem::path& sys_root = "/sys");

}  // namespace iodrift::probes
