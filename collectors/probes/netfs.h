// Network and FUSE filesystems: which filesystems a probe target may sit on that are served by
// another machine or a user-space process, and the defaults such a target gets.
//
// A remote target is classified at each run, twice: from the path alone when the run starts
// (longest mount-point prefix in /proc/self/mountinfo, never touching the target, which may hang)
// to choose its defaults (WithRemoteDefaults; a share mounted after the config was loaded is
// followed), and from statfs(2) of what the probe reads (f_type magic) plus the mount entry's
// type (fuse.sshfs, nfs4, …) for the iodrift_probe_target_info labels. Loading the config does
// neither.
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

// True when a mount (its mountinfo fstype and source) is served by another machine: a network
// or cluster filesystem (nfs, nfs4, cifs, smb3, ceph, 9p, afs, gfs2, ocfs2, glusterfs, lustre,
// …), or FUSE with evidence of a remote: a subtype that is a network client (fuse.sshfs,
// fuse.s3fs, fuse.rclone, fuse.gcsfuse, … kRemoteFuseSubtypes) or a source that names a host
// ("host:/path", "user@host:", "remote:bucket", "//server/share", "scheme://…"). Other FUSE
// mounts — bindfs, mergerfs, gocryptfs, a test filesystem, fuseblk (ntfs-3g on a disk) — are
// local. A probe's `remote:` key overrides the verdict.
bool IsRemoteMount(std::string_view fstype, std::string_view source);

// The mount holding `path` (absolute, lexically normalised) by longest mount-point prefix, or
// nullptr. Pure over `mounts`.
const MountEntry* MountOf(const std::string& path, const std::vector<MountEntry>& mounts);

// What a target is on: the fstype of the mount holding it (fuse.sshfs) and whether it is remote.
struct FilesystemKind {
  std::string fstype;  // "" when unknown
  bool remote = false;
};
// From statfs f_type (0 = unknown) and the mount entry's fstype and source ("" = unknown): the
// mount's fstype when known (it names FUSE subtypes), else the magic's name. Remote by
// IsRemoteMount when the mount is known, else by the magic (FUSE without its mount counts as
// remote: nothing says otherwise).
FilesystemKind ClassifyFilesystem(std::uint64_t f_type, std::string_view mount_fstype,
                                  std::string_view mount_source = {});

// Whether `target` lies on a remote filesystem, judged lexically from /proc/self/mountinfo
// (never touches the target): IsRemoteMount of the mount holding it.
bool TargetLooksRemote(const std::string& target);

// Defaults of a probe whose target is on a remote filesystem (docs/probes.md "Network and FUSE
// filesystems"): the link and the server are part of every figure, and a server that goes away
// leaves reads blocked until the client gives up.
inline constexpr std::chrono::milliseconds kRemoteTimeout = std::chrono::seconds(120);
inline constexpr std::uint64_t kRemoteSize = 8ull << 20;             // sequential kinds
inline constexpr std::uint64_t kRemoteProbeFileBytes = 16ull << 20;  // directory probe file
inline constexpr std::uint32_t kRemoteFiles = 16;                    // metadata
inline constexpr std::uint32_t kRemoteRequests = 100;                // random: enough for a p99

// Applies the remote defaults to `spec` for every key not in `given`.
void ApplyRemoteDefaults(ProbeSpec& spec, const GivenKeys& given);

// The spec one run uses: `spec` with the remote defaults for the keys the file did not set
// (spec.given) when its target is on a remote filesystem now: `remote:` decides, else
// TargetLooksRemote (reads /proc/self/mountinfo). A memory probe, or a target that is not
// remote, is returned unchanged. Called when a run starts (the scheduler), so its timeout
// covers the run.
ProbeSpec WithRemoteDefaults(const ProbeSpec& spec);

}  // namespace iodrift::probes
