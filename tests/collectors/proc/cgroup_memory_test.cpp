// The memory room of the daemon's cgroup (collectors/proc/cgroup_memory.h) on built trees of
// /proc/self/cgroup and cgroup files (v2 with an ancestor's limit, v1), and the run check that
// reads it (collectors/probes/memory_room.h).
#include "collectors/proc/cgroup_memory.h"

#include <fstream>

#include <gtest/gtest.h>

#include "collectors/probes/memory_room.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift {
namespace {

void Write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(CgroupMemoryRoom, TakesTheTightestLimitUpTheV2Tree) {
  probes::testing::TempDir dir;
  const auto proc = dir.path() / "proc", cg = dir.path() / "cgroup";
  Write(proc / "self/cgroup", "0::/system.slice/iodrift.service\n");
  Write(cg / "system.slice/iodrift.service/memory.current", "20971520\n");
  Write(cg / "system.slice/iodrift.service/memory.max", "max\n");
  Write(cg / "system.slice/iodrift.service/memory.high", "max\n");
  Write(cg / "system.slice/iodrift.service/memory.stat", "anon 16777216\nfile 4194304\n");
  Write(cg / "system.slice/memory.current", "100663296\n");
  Write(cg / "system.slice/memory.max", "134217728\n");  // 128 MiB, 96 MiB used: 32 MiB left
  Write(cg / "system.slice/memory.stat", "anon 83886080\nfile 12582912\n");
  auto room = proc::ReadCgroupMemoryRoom(ProcRoot(proc), cg);
  ASSERT_TRUE(room);
  EXPECT_EQ(room->limit, 128u << 20);
  EXPECT_EQ(room->used, 96u << 20);
  EXPECT_EQ(room->left, 32u << 20);
  EXPECT_EQ(room->reclaimable, 12u << 20);
  EXPECT_EQ(room->file, "memory.max");
  EXPECT_EQ(room->cgroup, "/system.slice");
}

TEST(CgroupMemoryRoom, ReadsTheV1HierarchicalLimitAndNoLimitIsNone) {
  probes::testing::TempDir dir;
  const auto proc = dir.path() / "proc", cg = dir.path() / "cgroup";
  Write(proc / "self/cgroup", "12:cpu,cpuacct:/x\n7:memory:/box\n1:name=systemd:/y\n");
  Write(cg / "memory/box/memory.usage_in_bytes", "10485760\n");
  Write(cg / "memory/box/memory.stat",
        "cache 1\nrss 2\nhierarchical_memory_limit 67108864\ntotal_cache 2097152\n");
  auto room = proc::ReadCgroupMemoryRoom(ProcRoot(proc), cg);
  ASSERT_TRUE(room);
  EXPECT_EQ(room->left, 54u << 20);
  EXPECT_EQ(room->reclaimable, 2u << 20);
  EXPECT_EQ(room->file, "memory.limit_in_bytes");
  Write(cg / "memory/box/memory.stat", "hierarchical_memory_limit 9223372036854771712\n");
  EXPECT_FALSE(proc::ReadCgroupMemoryRoom(ProcRoot(proc), cg));
  EXPECT_EQ(proc::CgroupV1MemoryPath("3:cpu,memory:/a/b\n"), "/a/b");
  EXPECT_EQ(proc::CgroupV1MemoryPath("0::/a\n"), std::nullopt);
}

TEST(MemoryRoom, ARunThatCannotFitIsNamedWithItsFigures) {
  auto spec = probes::testing::MakeSpec("wide", probes::ProbeKind::kBuffered, "/x");
  spec.readers = {1, 4, 16, 64};
  std::string how;
  EXPECT_EQ(probes::RunMemoryBytes(spec, &how), 64u * ((1u << 20) + (64u << 10)));
  EXPECT_EQ(how, "64 readers × 1 MiB read buffer and its thread");
  probes::MemoryRoom room;
  room.cgroup =
      proc::CgroupMemoryRoom{64u << 20, 12u << 20, 52u << 20, 1u << 20, "memory.max", "/t"};
  room.mem_available = 8ull << 30;
  auto problem = probes::RoomProblem(spec, room);
  ASSERT_TRUE(problem);
  EXPECT_EQ(*problem,
            "probe wide: a run needs 68 MiB of memory (64 readers × 1 MiB read buffer and its "
            "thread) but the daemon's memory cgroup /t allows 53 MiB more (memory.max 64 MiB, 12 "
            "MiB in use of which 1 MiB page cache); it would be OOM-killed: use fewer readers (or "
            "a smaller size) or raise the limit");
  spec.readers = {1, 4, 16};
  EXPECT_FALSE(probes::RoomProblem(spec, room));
  room.mem_available = 8u << 20;  // the host, not the cgroup, is short
  auto host = probes::RoomProblem(spec, room);
  ASSERT_TRUE(host);
  EXPECT_NE(host->find("MemAvailable is 8 MiB"), std::string::npos) << *host;
}

}  // namespace
}  // namespace iodrift
