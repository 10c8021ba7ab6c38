#include "collectors/probes/netfs.h"

#include <filesystem>

#include "collectors/common/proc_root.h"
#include "collectors/probes/kinds.h"
#include "collectors/probes/target.h"

namespace iodrift::probes {

std::string_view RemoteFilesystemName(std::uint64_t f_type) {
  switch (f_type) {
    case 0x6969:
      return "nfs";
    case 0xFF534D42:
      return "cifs";
    case 0xFE534D42:
      return "smb2";
    case 0x517B:
      return "smb";
    case 0x65735546:
      return "fuse";
    case 0x00C36400:
      return "ceph";
    case 0x01021997:
      return "9p";
    case 0x5346414F:
      return "afs";
    case 0x6B414653:
      return "afs";  // kAFS
    case 0x01161970:
      return "gfs2";
    case 0x7461636f:
      return "ocfs2";
    case 0x73757245:
      return "coda";
    case 0x564c:
      return "ncpfs";
    case 0x0BD00BD0:
      return "lustre";
    case 0x19980122:
      return "orangefs";
    default:
      return "";
  }
}

namespace {

// Network and cluster filesystems with a kernel client.
constexpr std::string_view kRemoteFstypes[] = {"nfs",    "nfs4",   "cifs",  "smb3",      "smbfs",
                                               "ceph",   "9p",     "afs",   "gfs2",      "ocfs2",
                                               "lustre", "coda",   "ncpfs", "glusterfs", "virtiofs",
                                               "davfs",  "beegfs", "gpfs",  "orangefs"};

// FUSE subtypes (fstype "fuse.NAME") that are clients of a remote service.
constexpr std::string_view kRemoteFuseSubtypes[] = {
    "sshfs",     "s3fs",          "rclone",    "gcsfuse",    "goofys",
    "curlftpfs", "httpfs",        "httpfs2",   "httpdirfs",  "smbnetfs",
    "glusterfs", "ceph-fuse",     "ceph",      "blobfuse",   "blobfuse2",
    "juicefs",   "mountpoint-s3", "ossfs",     "cvmfs2",     "mfs",
    "lizardfs",  "davfs2",        "onedriver", "seaweedfs",  "google-drive-ocamlfuse",
    "gdrivefs",  "wdfs",          "afpfs",     "nfs-ganesha"};

// A mount source that names another machine: "host:/path", "user@host:path", "remote:bucket"
// (a colon before any slash), "//server/share", "scheme://…". A source that starts with '/' is
// a local path (mergerfs joins several with ':').
bool SourceNamesAHost(std::string_view source) {
  if (source.rfind("//", 0) == 0) return true;
  if (source.empty() || source.front() == '/') return false;
  if (source.find("://") != std::string_view::npos) return true;
  const auto colon = source.find(':');
  return colon != std::string_view::npos && colon > 0 &&
         source.substr(0, colon).find('/') == std::string_view::npos;
}

}  // namespace

bool IsRemoteMount(std::string_view fstype, std::string_view source) {
  if (fstype == "fuseblk") return false;
  if (fstype == "fuse" || fstype.rfind("fuse.", 0) == 0) {
    const std::string_view subtype = fstype == "fuse" ? "" : fstype.substr(5);
    for (auto name : kRemoteFuseSubtypes) {
      if (subtype == name) return true;
    }
    return SourceNamesAHost(source);
  }
  for (auto name : kRemoteFstypes) {
    if (fstype == name) return true;
  }
  return false;
}

const MountEntry* MountOf(const std::string& path, const std::vector<MountEntry>& mounts) {
  const MountEntry* best = nullptr;
  for (const auto& m : mounts) {
    const std::string& mp = m.mount_point;
    const bool prefix =
        mp == "/" || path == mp ||
        (path.size() > mp.size() && path.compare(0, mp.size(), mp) == 0 && path[mp.size()] == '/');
    // Later entries mount over earlier ones at the same point.
    if (prefix && (best == nullptr || mp.size() >= best->mount_point.size())) best = &m;
  }
  return best;
}

FilesystemKind ClassifyFilesystem(std::uint64_t f_type, std::string_view mount_fstype,
                                  std::string_view mount_source) {
  FilesystemKind k;
  const std::string_view magic = RemoteFilesystemName(f_type);
  k.fstype = !mount_fstype.empty() ? std::string(mount_fstype) : std::string(magic);
  k.remote = !mount_fstype.empty() ? IsRemoteMount(mount_fstype, mount_source) : !magic.empty();
  return k;
}

bool TargetLooksRemote(const std::string& target) {
  if (target.empty() || target[0] != '/') return false;
  auto text = ReadWholeFile("/proc/self/mountinfo");
  if (!text) return false;
  const auto mounts = ParseMountinfo(*text);
  const MountEntry* m = MountOf(std::filesystem::path(target).lexically_normal().string(), mounts);
  return m != nullptr && IsRemoteMount(m->fstype, m->source);
}

void ApplyRemoteDefaults(ProbeSpec& spec, const GivenKeys& given) {
  if (!given.timeout && spec.timeout < kRemoteTimeout) spec.timeout = kRemoteTimeout;
  const KindTraits& kind = Traits(spec.kind);
  if (!kind.has_target) return;
  switch (kind.size_key) {
    case SizeKey::kBytes:
      if (!given.size) spec.size = kRemoteSize;
      break;
    case SizeKey::kFiles:
      if (!given.files) spec.files = kRemoteFiles;
      break;
    case SizeKey::kRequests:
      if (!given.requests) spec.requests = kRemoteRequests;
      break;
  }
}

ProbeSpec WithRemoteDefaults(const ProbeSpec& spec) {
  ProbeSpec out = spec;
  if (!Traits(spec.kind).has_target || spec.target.empty()) return out;
  if (spec.remote ? *spec.remote : TargetLooksRemote(spec.target)) {
    ApplyRemoteDefaults(out, spec.given);
  }
  return out;
}

}  // namespace iodrift::probes
