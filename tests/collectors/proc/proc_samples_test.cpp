// Runs every /proc reader over the real-world sample trees in
// tests/fixtures/proc-samples/<tree>/proc (see its README.md for where each file came from).
// Each quirk listed there is asserted here: no trailing newline, a 131,962-character intr line,
// an old-kernel vmstat, a cpu pressure file without "full", an irq file with only "full", cache
// names with ':' and '/', a cache name wider than its column, missing files.
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "collectors/proc/boot.h"
#include "collectors/proc/buddyinfo.h"
#include "collectors/proc/dentry_state.h"
#include "collectors/proc/meminfo.h"
#include "collectors/proc/pressure.h"
#include "collectors/proc/slabinfo.h"
#include "collectors/proc/vmstat.h"
#include "tests/collectors/proc/proc_fixtures.h"

namespace iodrift::proc {
namespace {

const SlabCache* FindCache(const Slabinfo& s, std::string_view name) {
  for (const SlabCache& c : s.caches) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// Every file a tree has must parse cleanly; every file it lacks must fail with ENOENT.
void ExpectTreeReadsCleanly(const std::string& tree) {
  SCOPED_TRACE(tree);
  ProcRoot root = testing::SampleRoot(tree);
  auto exists = [&root](std::string_view relative) {
    return std::filesystem::exists(root.Path(relative));
  };
  {
    Expected<Meminfo> m = ReadMeminfo(root);
    ASSERT_EQ(m.has_value(), exists("meminfo"));
    if (m) {
      EXPECT_EQ(m->malformed_lines, 0u);
    }
  }
  {
    Expected<Vmstat> v = ReadVmstat(root);
    ASSERT_EQ(v.has_value(), exists("vmstat"));
    if (v) {
      EXPECT_EQ(v->malformed_lines, 0u);
    }
    if (!v) {
      EXPECT_EQ(v.error().code, ENOENT);
    }
  }
  {
    Expected<Slabinfo> s = ReadSlabinfo(root);
    ASSERT_EQ(s.has_value(), exists("slabinfo"));
    if (s) {
      EXPECT_EQ(s->malformed_lines, 0u);
    }
  }
  {
    Expected<Buddyinfo> b = ReadBuddyinfo(root);
    ASSERT_EQ(b.has_value(), exists("buddyinfo"));
    if (b) {
      EXPECT_EQ(b->malformed_lines, 0u);
    }
  }
  for (const char* resource : {"cpu", "io", "memory", "irq"}) {
    SCOPED_TRACE(resource);
    Expected<Pressure> p = ReadPressure(root, resource);
    ASSERT_EQ(p.has_value(), exists(std::string("pressure/") + resource));
    if (p) {
      EXPECT_EQ(p->malformed_lines, 0u);
    }
    if (!p) {
      EXPECT_EQ(p.error().code, ENOENT);
    }
  }
  {
    Expected<DentryState> d = ReadDentryState(root);
    ASSERT_EQ(d.has_value(), exists("sys/fs/dentry-state"));
  }
  {
    Expected<BootState> b = ReadBootState(root);
    ASSERT_TRUE(b.has_value());  // every tree has at least stat
    EXPECT_EQ(b->boot_time_seconds.has_value(), exists("stat"));
    EXPECT_EQ(b->uptime_seconds.has_value(), exists("uptime"));
    EXPECT_EQ(b->boot_id.has_value(), exists("sys/kernel/random/boot_id"));
  }
}

TEST(ReadProcSamples, EveryTreeReadsCleanly) {
  for (const char* tree : {"procfs", "node_exporter", "local-6.18"}) ExpectTreeReadsCleanly(tree);
}

TEST(ReadProcSamples, ProcfsHandEditedMix) {
  ProcRoot root = testing::SampleRoot("procfs");

  Expected<Meminfo> m = ReadMeminfo(root);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->fields.size(), 45u);
  EXPECT_EQ(m->Get("MemTotal"), 15666184ull * 1024);
  EXPECT_EQ(m->Get("MemAvailable"), std::nullopt);
  EXPECT_EQ(m->Get("Zswap"), 22414ull * 1024);

  // stat has a 131,962-character intr line before btime.
  EXPECT_EQ(ReadBootState(root)->boot_time_seconds, 1418183276u);

  // cpu pressure in the pre-5.13 format: only "some".
  Expected<Pressure> cpu = ReadPressure(root, "cpu");
  ASSERT_TRUE(cpu.has_value());
  ASSERT_TRUE(cpu->some.has_value());
  EXPECT_FALSE(cpu->full.has_value());
  EXPECT_EQ(cpu->some->total_us, 15u);
  EXPECT_DOUBLE_EQ(cpu->some->avg300, 3.85);

  // buddyinfo lines without the kernel's trailing space.
  Expected<Buddyinfo> b = ReadBuddyinfo(root);
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->zones.size(), 3u);
  EXPECT_EQ(b->zones[2].zone, "Normal");
  EXPECT_EQ(b->zones[2].free_blocks.size(), 11u);
  EXPECT_EQ(b->zones[2].free_blocks[0], 4381u);

  // slabinfo: 300 caches, names with ':' and '/'.
  if (::sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "page size is not 4 KiB";
  Expected<Slabinfo> s = ReadSlabinfo(root);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->caches.size(), 300u);
  EXPECT_EQ(s->total_bytes, 684130304u);
  const SlabCache* iwl = FindCache(*s, "iwl_cmd_pool:0000:04:00.0");
  ASSERT_NE(iwl, nullptr);
  EXPECT_EQ(iwl->objects, 128u);
  EXPECT_EQ(iwl->bytes, 4u * 4 * 4096);
  const SlabCache* l2tp = FindCache(*s, "L2TP/IPv6");
  ASSERT_NE(l2tp, nullptr);
  EXPECT_EQ(l2tp->object_size, 1536u);
}

TEST(ReadProcSamples, NodeExporterOldKernelFiles) {
  ProcRoot root = testing::SampleRoot("node_exporter");

  // pressure/irq: only "full", no trailing newline.
  Expected<Pressure> irq = ReadPressure(root, "irq");
  ASSERT_TRUE(irq.has_value());
  EXPECT_FALSE(irq->some.has_value());
  ASSERT_TRUE(irq->full.has_value());
  EXPECT_EQ(irq->full->total_us, 8494u);

  // vmstat from a ~4.x kernel.
  Expected<Vmstat> v = ReadVmstat(root);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->fields.size(), 120u);
  EXPECT_EQ(v->Get("nr_alloc_batch"), 4158);
  EXPECT_EQ(v->Get("allocstall"), 83165);
  EXPECT_EQ(v->Get("pgscan_kswapd_dma"), 0);
  EXPECT_EQ(v->Get("pgscan_kswapd"), std::nullopt);

  Expected<Meminfo> m = ReadMeminfo(root);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->fields.size(), 42u);
  EXPECT_EQ(m->Get("MemAvailable"), std::nullopt);

  // slabinfo: a name wider than its column shifts the numbers right.
  if (::sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "page size is not 4 KiB";
  Expected<Slabinfo> s = ReadSlabinfo(root);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->caches.size(), 4u);
  EXPECT_EQ(s->total_bytes, 2957312u);
  const SlabCache* wide = FindCache(*s, "dmaengine-unmap-128");
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(wide->active_objects, 1206u);
  EXPECT_EQ(wide->objects, 1320u);
  EXPECT_EQ(wide->object_size, 1088u);
  EXPECT_EQ(wide->bytes, 44u * 8 * 4096);
}

TEST(ReadProcSamples, LocalCaptureFromAnotherBoot) {
  ProcRoot root = testing::SampleRoot("local-6.18");
  Expected<DentryState> d = ReadDentryState(root);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->total, 37154u);
  EXPECT_EQ(d->unused, 35492u);
  EXPECT_EQ(d->negative, 6164u);
  Expected<BootState> b = ReadBootState(root);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->boot_id, "97578105-8cf0-4058-84d5-41368994a718");
  EXPECT_DOUBLE_EQ(b->uptime_seconds.value(), 4011.01);
  EXPECT_EQ(b->boot_time_seconds, 1796220239u);
  Expected<Pressure> irq = ReadPressure(root, "irq");
  ASSERT_FALSE(irq.has_value());
  EXPECT_EQ(irq.error().code, ENOENT);
  Expected<Vmstat> v = ReadVmstat(root);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->fields.size(), 192u);
}

}  // namespace
}  // namespace iodrift::proc
