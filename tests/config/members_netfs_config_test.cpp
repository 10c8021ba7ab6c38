// Config keys of arrays and network filesystems: `sys_root`, the probe option `members`, and the
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

// Loading records which keys the file set and decides nothing about the target (no
// /proc/self/mountinfo read): the runs apply the remote defaults (netfs.h WithRemoteDefaults).
TEST(RemoteDefaults, LoadingRecordsTheGivenKeysAndLeavesTheDefaultsToTheRuns) {
  auto cfg = LoadFromString(R"(probes:
  - name: local
    kind: buffered
    target: /dev/sda
  - name: given
    kind: random
    target: /dev/sda
    size: 1MiB
    timeout: 10s
    requests: 50
)",
                            "m.yaml");
  ASSERT_TRUE(cfg);
  EXPECT_FALSE(probes::TargetLooksRemote("/dev/sda"));
  EXPECT_EQ(cfg->probes[0].size, 0u);
  EXPECT_EQ(cfg->probes[0].timeout, std::chrono::seconds(30));
  EXPECT_EQ(cfg->probes[0].given, probes::GivenKeys{});
  EXPECT_EQ(cfg->probes[1].given,
            (probes::GivenKeys{.size = true, .timeout = true, .files = false, .requests = true}));
  EXPECT_EQ(probes::WithRemoteDefaults(cfg->probes[0]), cfg->probes[0]);  // local: unchanged
}

// `interval:` below the kind's minimum is an error naming the key, its line and the minimum
// (interval: 1ms used to pass --check-config --strict and run the probe back to back).
TEST(IntervalConfig, AnIntervalBelowTheKindsMinimumIsAnErrorNamingKeyAndLine) {
  auto cfg = LoadFromString(R"(probes:
  - name: hot
    kind: cached
    target: /var/tmp
    interval: 1ms
  - name: disk
    kind: buffered
    target: /var/tmp
    interval: 500ms
  - name: mem
    interval: 999ms
    kind: memory
)",
                            "i.yaml");
  ASSERT_FALSE(cfg);
  std::vector<std::string> text;
  for (const auto& p : cfg.error()) text.push_back(p.ToString());
  ASSERT_EQ(text.size(), 3u) << ::testing::PrintToString(text);
  EXPECT_EQ(text[0],
            "i.yaml:5:15: probes[0].interval: 1ms is shorter than the minimum of 100ms for kind "
            "cached (a shorter interval runs the probe back to back)");
  EXPECT_EQ(text[1].rfind("i.yaml:9:15: probes[1].interval: 500ms is shorter than the minimum of "
                          "1s for kind buffered",
                          0),
            0u)
      << text[1];
  EXPECT_EQ(text[2].rfind("i.yaml:11:15: probes[2].interval: 999ms", 0), 0u) << text[2];
  // The minimum itself is fine.
  EXPECT_TRUE(
      LoadFromString("probes:\n  - {name: a, kind: metadata, target: /var/tmp, "
                     "interval: 100ms}\n  - {name: b, kind: direct, target: /var/tmp, "
                     "interval: 1s}\n",
                     "i.yaml"));
}

// `remote:` decides whether a target gets the remote defaults, whatever its mount looks like.
TEST(RemoteConfig, TheRemoteKeyOverridesTheMountsVerdict) {
  auto cfg = LoadFromString(R"(probes:
  - name: forced
    kind: buffered
    target: /var/tmp
    remote: true
  - name: forced-meta
    kind: metadata
    target: /var/tmp
    remote: true
    files: 8
  - name: local
    kind: buffered
    target: /var/tmp
    remote: false
  - name: judged
    kind: buffered
    target: /var/tmp
)",
                            "r.yaml");
  ASSERT_TRUE(cfg) << cfg.error().front().ToString();
  ASSERT_EQ(cfg->probes.size(), 4u);
  // What a run uses (the loader itself applies no defaults).
  std::vector<probes::ProbeSpec> run;
  for (const auto& p : cfg->probes) run.push_back(probes::WithRemoteDefaults(p));
  EXPECT_EQ(cfg->probes[0].remote, true);
  EXPECT_EQ(cfg->probes[0].size, 0u);
  EXPECT_EQ(run[0].size, probes::kRemoteSize);
  EXPECT_EQ(run[0].timeout, probes::kRemoteTimeout);
  EXPECT_EQ(run[1].files, 8u);  // an explicit key still wins
  EXPECT_EQ(run[1].timeout, probes::kRemoteTimeout);
  EXPECT_EQ(cfg->probes[2].remote, false);
  EXPECT_EQ(run[2].size, 0u);
  EXPECT_EQ(run[2].timeout, std::chrono::seconds(30));
  EXPECT_EQ(cfg->probes[3].remote, std::nullopt);
  auto memory = LoadFromString("probes:\n  - {name: m, kind: memory, remote: true}\n", "r.yaml");
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error().front().ToString(),
            "r.yaml:2:29: probes[0].remote: only applies to kinds with a target (a memory probe "
            "reads no file)");
  auto bad = LoadFromString(
      "probes:\n  - {name: m, kind: buffered, target: /var/tmp, remote: maybe}\n", "r.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().front().ToString().find("probes[0].remote"), std::string::npos);
}

}  // namespace
}  // namespace iodrift::config
