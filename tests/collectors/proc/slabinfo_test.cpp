// Unit tests for collectors/proc/slabinfo: inline strings for the edge cases, the captured
// local-6.18 tree for real values.
#include "collectors/proc/slabinfo.h"

#include <unistd.h>

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "tests/collectors/proc/proc_fixtures.h"

namespace iodrift::proc {
namespace {

constexpr std::uint64_t kPage = 4096;

constexpr char kHeader[] =
    "slabinfo - version: 2.1\n"
    "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables "
    "<limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n";

const SlabCache* Find(const Slabinfo& s, std::string_view name) {
  for (const SlabCache& c : s.caches) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

TEST(ParseSlabinfo, ParsesAllColumnsAndComputesBytesFromSlabs) {
  Expected<Slabinfo> s = ParseSlabinfo(
      std::string(kHeader) +
          "dentry            123456 130000    192   21    1 : tunables    0    0    0 : slabdata "
          "  6190   6191      0\n",
      kPage);
  ASSERT_TRUE(s.has_value()) << s.error().message;
  ASSERT_EQ(s->caches.size(), 1u);
  const SlabCache& c = s->caches[0];
  EXPECT_EQ(c.name, "dentry");
  EXPECT_EQ(c.active_objects, 123456u);
  EXPECT_EQ(c.objects, 130000u);
  EXPECT_EQ(c.object_size, 192u);
  EXPECT_EQ(c.objects_per_slab, 21u);
  EXPECT_EQ(c.pages_per_slab, 1u);
  EXPECT_EQ(c.active_slabs, 6190u);
  EXPECT_EQ(c.slabs, 6191u);
  EXPECT_EQ(c.bytes, 6191u * 1 * kPage);
  EXPECT_EQ(s->total_bytes, c.bytes);
  EXPECT_EQ(s->malformed_lines, 0u);
}

TEST(ParseSlabinfo, UsesTheGivenPageSize) {
  Expected<Slabinfo> s = ParseSlabinfo(
      std::string(kHeader) + "kmalloc-8k 32 32 8192 4 8 : tunables 0 0 0 : slabdata 8 8 0\n",
      65536);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->caches[0].bytes, 8u * 8 * 65536);
}

TEST(ParseSlabinfo, FallsBackToObjectsTimesSizeWithoutSlabdata) {
  Expected<Slabinfo> s = ParseSlabinfo(std::string(kHeader) + "old_cache 10 20 100 40 1\n", kPage);
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->caches.size(), 1u);
  EXPECT_EQ(s->caches[0].bytes, 20u * 100);
  EXPECT_EQ(s->caches[0].slabs, 0u);
  EXPECT_EQ(s->malformed_lines, 0u);
}

TEST(ParseSlabinfo, AcceptsNamesWithColonsAndSlashes) {
  Expected<Slabinfo> s = ParseSlabinfo(
      std::string(kHeader) +
          "iwl_cmd_pool:0000:04:00.0      0    128    512   32    4 : tunables    0    0    0 : "
          "slabdata      4      4      0\n"
          "L2TP/IPv6              0      0   1536   21    8 : tunables    0    0    0 : slabdata "
          "     0      0      0\n",
      kPage);
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->caches.size(), 2u);
  EXPECT_EQ(s->caches[0].name, "iwl_cmd_pool:0000:04:00.0");
  EXPECT_EQ(s->caches[0].objects, 128u);
  EXPECT_EQ(s->caches[0].bytes, 4u * 4 * kPage);
  EXPECT_EQ(s->caches[1].name, "L2TP/IPv6");
  EXPECT_EQ(s->caches[1].object_size, 1536u);
}

TEST(ParseSlabinfo, NameWiderThanColumnShiftsColumns) {
  Expected<Slabinfo> s = ParseSlabinfo(
      std::string(kHeader) +
          "dmaengine-unmap-128   1206   1320   1088   30    8 : tunables    0    0    0 : "
          "slabdata     44     44      0\n",
      kPage);
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->caches.size(), 1u);
  EXPECT_EQ(s->caches[0].active_objects, 1206u);
  EXPECT_EQ(s->caches[0].objects, 1320u);
  EXPECT_EQ(s->caches[0].object_size, 1088u);
  EXPECT_EQ(s->caches[0].bytes, 44u * 8 * kPage);
}

TEST(ParseSlabinfo, RejectsUnknownOrMissingHeader) {
  Expected<Slabinfo> v1 = ParseSlabinfo("slabinfo - version: 1.1\ndentry 1 1 1 1 1\n", kPage);
  ASSERT_FALSE(v1.has_value());
  EXPECT_EQ(v1.error().code, EINVAL);
  EXPECT_NE(v1.error().message.find("version: 1.1"), std::string::npos);
  EXPECT_FALSE(ParseSlabinfo("dentry 1 1 1 1 1\n", kPage).has_value());
  EXPECT_FALSE(ParseSlabinfo("slabinfo - version: 2.\n", kPage).has_value());
  EXPECT_FALSE(ParseSlabinfo("slabinfo - version: 3.0\n", kPage).has_value());
  EXPECT_TRUE(ParseSlabinfo("slabinfo - version: 2.0\n", kPage).has_value());
}

TEST(ParseSlabinfo, EmptyTextIsAnError) {
  EXPECT_FALSE(ParseSlabinfo("", kPage).has_value());
  EXPECT_FALSE(ParseSlabinfo("\n\n", kPage).has_value());
}

TEST(ParseSlabinfo, HeaderOnlyHasNoCaches) {
  Expected<Slabinfo> s = ParseSlabinfo(kHeader, kPage);
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->caches.empty());
  EXPECT_EQ(s->total_bytes, 0u);
}

TEST(ParseSlabinfo, SkipsAndCountsMalformedLines) {
  Expected<Slabinfo> s =
      ParseSlabinfo(std::string(kHeader) +
                        "good 1 2 3 4 1 : tunables 0 0 0 : slabdata 1 1 0\n"
                        "short 1 2 3 4\n"
                        "letters 1 2 x 4 1 : tunables 0 0 0 : slabdata 1 1 0\n"
                        "negative 1 -2 3 4 1 : tunables 0 0 0 : slabdata 1 1 0\n"
                        "cut_slabdata 1 2 3 4 1 : tunables 0 0 0 : slabdata 1\n"
                        "bad_slabdata 1 2 3 4 1 : tunables 0 0 0 : slabdata x 1 0\n"
                        "good2 1 2 3 4 2 : tunables 0 0 0 : slabdata 3 3 0\n",
                    kPage);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->malformed_lines, 5u);
  ASSERT_EQ(s->caches.size(), 2u);
  EXPECT_EQ(s->total_bytes, 1u * kPage + 3u * 2 * kPage);
}

TEST(ParseSlabinfo, TruncatedLastLineIsMalformed) {
  Expected<Slabinfo> s = ParseSlabinfo(std::string(kHeader) +
                                           "a 1 2 3 4 1 : tunables 0 0 0 : slabdata 1 1 0\n"
                                           "b 1 2 3 4 1 : tunables 0 0 0 : slab",
                                       kPage);
  ASSERT_TRUE(s.has_value());
  // Cut inside the tunables/slabdata groups: skipped rather than guessed from objects * size.
  ASSERT_EQ(s->caches.size(), 1u);
  EXPECT_EQ(s->malformed_lines, 1u);
  EXPECT_EQ(s->total_bytes, 1u * kPage);
  Expected<Slabinfo> cut = ParseSlabinfo(std::string(kHeader) + "b 1 2 3", kPage);
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->malformed_lines, 1u);
}

TEST(ParseSlabinfo, OverflowingBytesAreMalformed) {
  Expected<Slabinfo> s = ParseSlabinfo(
      std::string(kHeader) +
          "big 1 1 1 1 4294967296 : tunables 0 0 0 : slabdata 1 4294967296 0\n"
          "big_objs 1 4294967296 4294967296 1 1\n"
          "huge_number 1 18446744073709551616 1 1 1\n"
          "max 1 1 1 1 1 : tunables 0 0 0 : slabdata 1 4503599627370495 0\n"
          "pushes_total_over 1 1 1 1 1 : tunables 0 0 0 : slabdata 1 4503599627370495 0\n",
      kPage);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->malformed_lines, 4u);
  ASSERT_EQ(s->caches.size(), 1u);
  EXPECT_EQ(s->caches[0].name, "max");
  EXPECT_EQ(s->total_bytes, 4503599627370495ull * kPage);
}

TEST(ParseSlabinfo, KeepsRepeatedNames) {
  Expected<Slabinfo> s = ParseSlabinfo(
      std::string(kHeader) + "zs_handle 1 1 8 1 1 : tunables 0 0 0 : slabdata 1 1 0\n" +
          "zs_handle 1 1 8 1 1 : tunables 0 0 0 : slabdata 2 2 0\n",
      kPage);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->caches.size(), 2u);
  EXPECT_EQ(s->total_bytes, 3u * kPage);
}

TEST(ParseSlabinfo, SurvivesBinaryGarbage) {
  constexpr char kGarbage[] = "\x00\x01\xff\n\x80 1 2 3 4 5\n";
  EXPECT_FALSE(ParseSlabinfo(std::string(kGarbage, sizeof(kGarbage) - 1), kPage).has_value());
  Expected<Slabinfo> after_header =
      ParseSlabinfo(std::string(kHeader) + std::string(kGarbage, sizeof(kGarbage) - 1), kPage);
  ASSERT_TRUE(after_header.has_value());
  EXPECT_EQ(after_header->caches.size(), 0u);
  EXPECT_EQ(after_header->malformed_lines, 2u);
}

TEST(ReadSlabinfo, ReadsCapturedLocalKernel) {
  // The reader uses this machine's page size; the capture was made with 4 KiB pages.
  if (::sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "page size is not 4 KiB";
  Expected<Slabinfo> s = ReadSlabinfo(testing::LocalRoot());
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->caches.size(), 235u);
  EXPECT_EQ(s->malformed_lines, 0u);
  EXPECT_EQ(s->caches.front().name, "btrfs_delayed_node");
  EXPECT_EQ(s->caches.back().name, "kmem_cache");
  EXPECT_EQ(s->total_bytes, 81526784u);
  const SlabCache* dentry = Find(*s, "dentry");
  ASSERT_NE(dentry, nullptr);
  EXPECT_EQ(dentry->active_objects, 43512u);
  EXPECT_EQ(dentry->objects, 43512u);
  EXPECT_EQ(dentry->object_size, 192u);
  EXPECT_EQ(dentry->objects_per_slab, 21u);
  EXPECT_EQ(dentry->slabs, 2072u);
  EXPECT_EQ(dentry->bytes, 2072u * 4096);
  const SlabCache* kmalloc8k = Find(*s, "kmalloc-8k");
  ASSERT_NE(kmalloc8k, nullptr);
  EXPECT_EQ(kmalloc8k->pages_per_slab, 8u);
  EXPECT_EQ(kmalloc8k->bytes, 8u * 8 * 4096);
}

TEST(ReadSlabinfo, FailsWithEnoentWhenFileMissing) {
  Expected<Slabinfo> s = ReadSlabinfo(testing::MinimalRoot());
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, ENOENT);
  EXPECT_NE(s.error().message.find("slabinfo"), std::string::npos);
}

}  // namespace
}  // namespace iodrift::proc
