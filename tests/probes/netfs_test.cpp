// Network and FUSE filesystem classification (netfs.h): statfs magic, mountinfo types, the
// mount holding a path, and the remote defaults.
#include "collectors/probes/netfs.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/probes/target.h"

namespace iodrift::probes {
namespace {

TEST(RemoteFilesystemName, KnowsNetworkClusterAndFuseMagics) {
  EXPECT_EQ(RemoteFilesystemName(0x6969), "nfs");
  EXPECT_EQ(RemoteFilesystemName(0xFF534D42), "cifs");
  EXPECT_EQ(RemoteFilesystemName(0xFE534D42), "smb2");
  EXPECT_EQ(RemoteFilesystemName(0x65735546), "fuse");
  EXPECT_EQ(RemoteFilesystemName(0x00C36400), "ceph");
  EXPECT_EQ(RemoteFilesystemName(0x01021997), "9p");
  EXPECT_EQ(RemoteFilesystemName(0x01161970), "gfs2");
  EXPECT_EQ(RemoteFilesystemName(0x7461636f), "ocfs2");
  EXPECT_EQ(RemoteFilesystemName(0xEF53), "");      // ext4
  EXPECT_EQ(RemoteFilesystemName(0x01021994), "");  // tmpfs
}

TEST(ClassifyFilesystem, MountTypeNamesTheFuseSubtype) {
  auto sshfs = ClassifyFilesystem(0x65735546, "fuse.sshfs");
  EXPECT_EQ(sshfs.fstype, "fuse.sshfs");
  EXPECT_TRUE(sshfs.remote);
  auto nfs = ClassifyFilesystem(0x6969, "");
  EXPECT_EQ(nfs.fstype, "nfs");
  EXPECT_TRUE(nfs.remote);
  auto nfs4 = ClassifyFilesystem(0, "nfs4");
  EXPECT_TRUE(nfs4.remote);
  auto ext4 = ClassifyFilesystem(0xEF53, "ext4");
  EXPECT_EQ(ext4.fstype, "ext4");
  EXPECT_FALSE(ext4.remote);
  // ntfs-3g on a local disk is FUSE but not remote.
  EXPECT_FALSE(ClassifyFilesystem(0x65735546, "fuseblk").remote);
}

// FUSE is remote only with evidence: a network-client subtype or a source naming a host.
TEST(IsRemoteMount, FuseIsRemoteOnlyWithEvidence) {
  for (const auto& [fstype, source] : std::vector<std::pair<std::string, std::string>>{
           {"fuse.sshfs", "user@host:/srv"},
           {"fuse.s3fs", "s3fs"},
           {"fuse.rclone", "gdrive:"},
           {"fuse.gcsfuse", "bucket"},
           {"fuse.juicefs", "redis://10.0.0.1/1"},
           {"fuse", "host:/export"},
           {"fuse.unknownfs", "//server/share"},
           {"fuse.unknownfs", "https://example.org/dav"},
           {"nfs4", "host:/export"},
           {"cifs", "//server/share"}}) {
    EXPECT_TRUE(IsRemoteMount(fstype, source)) << fstype << " " << source;
  }
  for (const auto& [fstype, source] :
       std::vector<std::pair<std::string, std::string>>{{"fuse.faultfs", "faultfs"},
                                                        {"fuse.bindfs", "/srv/data"},
                                                        {"fuse.mergerfs", "/mnt/a:/mnt/b"},
                                                        {"fuse.gocryptfs", "/home/u/.cipher"},
                                                        {"fuse", "none"},
                                                        {"fuseblk", "/dev/sdb1"},
                                                        {"fuse.lxcfs", "lxcfs"},
                                                        {"ext4", "/dev/sda1"},
                                                        {"tmpfs", "tmpfs"}}) {
    EXPECT_FALSE(IsRemoteMount(fstype, source)) << fstype << " " << source;
  }
  // With the mount known, a local FUSE filesystem is local although its magic says "fuse".
  EXPECT_FALSE(ClassifyFilesystem(0x65735546, "fuse.faultfs", "faultfs").remote);
  EXPECT_TRUE(ClassifyFilesystem(0x65735546, "fuse.sshfs", "u@h:/").remote);
  EXPECT_TRUE(ClassifyFilesystem(0x65735546, "", "").remote);  // nothing says otherwise
}

TEST(MountOf, LongestPrefixWinsAndNeedsAPathBoundary) {
  const auto mounts = ParseMountinfo(
      "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
      "30 22 0:40 / /mnt/remote rw - fuse.sshfs user@host:/srv rw\n"
      "31 22 0:41 / /mnt/remote2 rw - nfs4 host:/export rw\n");
  ASSERT_NE(MountOf("/mnt/remote/a/b", mounts), nullptr);
  EXPECT_EQ(MountOf("/mnt/remote/a/b", mounts)->fstype, "fuse.sshfs");
  EXPECT_EQ(MountOf("/mnt/remote", mounts)->source, "user@host:/srv");
  EXPECT_EQ(MountOf("/mnt/remote2/x", mounts)->fstype, "nfs4");
  EXPECT_EQ(MountOf("/mnt/remotex", mounts)->fstype, "ext4");
}

TEST(ApplyRemoteDefaults, OnlyKeysNotGiven) {
  ProbeSpec buffered;
  buffered.kind = ProbeKind::kBuffered;
  ApplyRemoteDefaults(buffered, {});
  EXPECT_EQ(buffered.size, kRemoteSize);
  EXPECT_EQ(buffered.timeout, kRemoteTimeout);
  ProbeSpec given;
  given.kind = ProbeKind::kBuffered;
  given.size = 1 << 20;
  given.timeout = std::chrono::seconds(5);
  ApplyRemoteDefaults(given, {.size = true, .timeout = true});
  EXPECT_EQ(given.size, 1u << 20);
  EXPECT_EQ(given.timeout, std::chrono::seconds(5));
  ProbeSpec meta;
  meta.kind = ProbeKind::kMetadata;
  ApplyRemoteDefaults(meta, {});
  EXPECT_EQ(meta.files, kRemoteFiles);
  EXPECT_EQ(meta.size, 0u);
  ProbeSpec random;
  random.kind = ProbeKind::kRandom;
  ApplyRemoteDefaults(random, {});
  EXPECT_EQ(random.requests, kRemoteRequests);
}

}  // namespace
}  // namespace iodrift::probes
