// Config keys of issue 18 items 2 and 3: `sys_root`, the probe option `members`, and the
// defaults a probe on a network or FUSE filesystem gets for the keys it leaves out (judged from
// /proc/self/mountinfo: the test mounts nothing, so it checks the local path keeps the local
// defaults and the explicit keys always win; e2e.netfs_sshfs checks a real sshfs mount).
#include <gtest/gtest.h>

#include "collectors/probes/netfs.h"
#include "config/config.h"

namespace iodrift::config {
namespace {

TEST(MembersConfig, ReadsMembersAndSysRoot) {
  auto cfg = LoadFromString(R"(sys_root: /host/sys
probes:
  - name: md
    kind: buffered
    target: /dev/md0
    members: true
  - name: sda
    kind: direct
    target: /dev/sda
)",
                            "m.yaml");
  ASSERT_TRUE(cfg) << cfg.error().front().ToString();
  EXPECT_EQ(cfg->sys_root, "/host/sys");
  ASSERT_EQ(cfg->probes.size(), 2u);
  EXPECT_TRUE(cfg->probes[0].members);
  EXPECT_FALSE(cfg->probes[1].members);
  auto defaults = LoadFromString("probes: []\n", "m.yaml");
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->sys_root, "/sys");
}

TEST(MembersConfig, RefusesMembersOnKindsThatReadNoDevice) {
  auto cfg = LoadFromString(R"(probes:
  - name: meta
    kind: metadata
    target: /var/tmp
    members: true
)",
                            "m.yaml");
  ASSERT_FALSE(cfg);
  EXPECT_NE(cfg.error().front().ToString().find("members: only applies to kinds cached"),
            std::string::npos)
      << cfg.error().front().ToString();
  auto bad = LoadFromString(R"(probes:
  - name: md
    kind: buffered
    target: /dev/md0
    members: "yes please"
)",
                            "m.yaml");
  EXPECT_FALSE(bad);
}

TEST(MembersConfig, RelativeSysRootIsRefused) {
  EXPECT_FALSE(LoadFromString("sys_root: host/sys\n", "m.yaml"));
}

TEST(RemoteDefaults, ALocalTargetKeepsTheLocalDefaults) {
  auto cfg = LoadFromString(R"(probes:
  - name: local
    kind: buffered
    target: /dev/sda
)",
                            "m.yaml");
  ASSERT_TRUE(cfg);
  EXPECT_FALSE(probes::TargetLooksRemote("/dev/sda"));
  EXPECT_EQ(cfg->probes[0].size, 0u);
  EXPECT_EQ(cfg->probes[0].timeout, std::chrono::seconds(30));
}

}  // namespace
}  // namespace iodrift::config
