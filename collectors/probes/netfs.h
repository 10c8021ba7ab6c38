// Network and FUSE filesystems: which filesystems a probe target may sit on that are served by
// another machine or a user-space process, and the defaults such a target gets.
//
// A remote target is classified twice: at config load from the path alone (longest mount-point
// prefix in /proc/self/mountinfo, never touching the target, which may hang) to choose its
// defaults, and at each run from statfs(2) of what the probe reads (f_type magic) plus the mount
// entry's type (fuse.sshfs, nfs4, …) for the iodrift_probe_target_info labels.
//
// Thread-safety: pure functions, except LookupMountOf (reads /proc/self/mountinfo).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/probes/probe_spec.h"

namespace iodrift::probes {

struct MountEntry;

// The filesystem name for a statfs f_type of a network, cluster or FUSE filesystem ("nfs",
// "cifs", "smb2", "fuse", "ceph", "9p", "afs", "gfs2", "ocfs2", "coda", "ncpfs", "lustre",
// "orangefs", "virtiofs" is FUSE-based and reports "fuse"), or "" for a local one.
std::string_view RemoteFilesystemName(std::uint64_t f_type);

// True when a mountinfo fstype names a network, cluster or FUSE filesystem: nfs, nfs4, cifs,
// smb3, ceph, 9p, afs, gfs2, ocfs2, glusterfs, lustre, fuse, fuse.* (fuse.sshfs, fuse.s3fs …),
// fuseblk is local (ntfs-3g on a block device) and not remote.
bool IsRemoteFstype(std::string_view fstype);

// The mount holding `path` (absolute, lexically normalised) by longest mount-point prefix, or
// nullptr. Pure over `mounts`.
const MountEntry* MountOf(const std::string& path, const std::vector<MountEntry>& mounts);

// What a target is on: the fstype of the mount holding it (fuse.sshfs) and whether it is remote.
struct FilesystemKind {
  std::string fstype;  // "" when unknown
  bool remote = false;
};
// From statfs f_type (0 = unknown) and the mount entry's fstype ("" = unknown): the mount's
// fstype when known (it names FUSE subtypes), else the magic's name; remote when either says so
// (fuseblk excepted).
FilesystemKind ClassifyFilesystem(std::uint64_t f_type, std::string_view mount_fstype);

// Config-time: whether `target` lies on a remote filesystem, judged lexically from
// /proc/self/mountinfo (never touches the target).
bool TargetLooksRemote(const std::string& target);

// Defaults of a probe whose target is on a remote filesystem (docs/probes.md "Network and FUSE
// filesystems"): the link and the server are part of every figure, and a server that goes away
// leaves reads blocked until the client gives up.
inline constexpr std::chrono::milliseconds kRemoteTimeout = std::chrono::seconds(120);
inline constexpr std::uint64_t kRemoteSize = 8ull << 20;             // sequential kinds
inline constexpr std::uint64_t kRemoteProbeFileBytes = 16ull << 20;  // directory probe file
inline constexpr std::uint32_t kRemoteFiles = 16;                    // metadata
inline constexpr std::uint32_t kRemoteRequests = 100;                // random: enough for a p99

// Which keys the configuration set explicitly (others take the remote defaults).
struct ExplicitKeys {
  bool size = false, timeout = false, files = false, requests = false;
};
// Applies the remote defaults to `spec` for every key not set explicitly.
void ApplyRemoteDefaults(ProbeSpec& spec, const ExplicitKeys& given);

}  // namespace iodrift::probes
