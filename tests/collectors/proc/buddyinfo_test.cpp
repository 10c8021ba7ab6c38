// Unit tests for collectors/proc/buddyinfo: inline strings for the edge cases, the captured
// local-6.18 tree for real values.
#include "collectors/proc/buddyinfo.h"

#include <cerrno>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/collectors/proc/proc_fixtures.h"

namespace iodrift::proc {
namespace {

using Counts = std::vector<std::uint64_t>;

TEST(ParseBuddyinfo, ParsesNodesZonesAndOrders) {
  Buddyinfo b = ParseBuddyinfo(
      "Node 0, zone      DMA      1      1      1      0      2      1      1      0      1      1"
      "      3 \n"
      "Node 1, zone    DMA32      3      4      4      3      5      4      4      5      4      5"
      "    726 \n");
  ASSERT_EQ(b.zones.size(), 2u);
  EXPECT_EQ(b.malformed_lines, 0u);
  EXPECT_EQ(b.zones[0].node, "0");
  EXPECT_EQ(b.zones[0].zone, "DMA");
  EXPECT_EQ(b.zones[0].free_blocks, (Counts{1, 1, 1, 0, 2, 1, 1, 0, 1, 1, 3}));
  EXPECT_EQ(b.zones[1].node, "1");
  EXPECT_EQ(b.zones[1].zone, "DMA32");
  EXPECT_EQ(b.zones[1].free_blocks.back(), 726u);
}

TEST(ParseBuddyinfo, AcceptsAnyNumberOfOrdersAndNoTrailingSpace) {
  Buddyinfo b = ParseBuddyinfo("Node 0, zone Normal 5 6 7\nNode 0, zone Movable 1 2 3");
  ASSERT_EQ(b.zones.size(), 2u);
  EXPECT_EQ(b.zones[0].free_blocks, (Counts{5, 6, 7}));
  EXPECT_EQ(b.zones[1].free_blocks, (Counts{1, 2, 3}));
  Buddyinfo arm64_64k = ParseBuddyinfo("Node 0, zone Normal 1 2 3 4 5 6 7 8 9 10 11 12 13 14\n");
  ASSERT_EQ(arm64_64k.zones.size(), 1u);
  EXPECT_EQ(arm64_64k.zones[0].free_blocks.size(), 14u);
}

TEST(ParseBuddyinfo, RejectsMismatchedBucketCounts) {
  // A truncated last line has fewer orders than the others: dropped, not read as zeros.
  Buddyinfo b = ParseBuddyinfo(
      "Node 0, zone DMA 1 2 3 4\n"
      "Node 0, zone DMA32 5 6 7 8\n"
      "Node 0, zone Normal 9 10\n");
  ASSERT_EQ(b.zones.size(), 2u);
  EXPECT_EQ(b.zones[1].zone, "DMA32");
  EXPECT_EQ(b.malformed_lines, 1u);
  // On a tie the wider width wins (a truncated read only ever shortens a line).
  Buddyinfo tie = ParseBuddyinfo("Node 0, zone DMA 1 2 3 4\nNode 0, zone Normal 1 2\n");
  ASSERT_EQ(tie.zones.size(), 1u);
  EXPECT_EQ(tie.zones[0].zone, "DMA");
  // The majority wins over a single wider line.
  Buddyinfo majority =
      ParseBuddyinfo("Node 0, zone A 1 2\nNode 0, zone B 1 2\nNode 0, zone C 1 2 3\n");
  ASSERT_EQ(majority.zones.size(), 2u);
  EXPECT_EQ(majority.malformed_lines, 1u);
}

TEST(ParseBuddyinfo, SkipsAndCountsMalformedLines) {
  Buddyinfo b = ParseBuddyinfo(
      "Node 0, zone Normal 1 2 3\n"
      "Node 0 zone Normal 1 2 3\n"   // no comma after the node
      "Node x, zone Normal 1 2 3\n"  // node not a number
      "Nod 0, zone Normal 1 2 3\n"
      "Node 0, zon Normal 1 2 3\n"
      "Node 0, zone Normal\n"  // no counts
      "Node 0, zone Highmem 1 x 3\n"
      "Node 0, zone Highmem 1 -2 3\n"
      "Node 0, zone Normal 4 5 6\n"  // repeated (node, zone)
      "Node 1, zone Normal 7 8 9\n");
  EXPECT_EQ(b.malformed_lines, 8u);
  ASSERT_EQ(b.zones.size(), 2u);
  EXPECT_EQ(b.zones[0].free_blocks, (Counts{1, 2, 3}));
  EXPECT_EQ(b.zones[1].node, "1");
}

TEST(ParseBuddyinfo, OverflowingCountIsMalformed) {
  Buddyinfo b = ParseBuddyinfo(
      "Node 0, zone A 18446744073709551615 1\nNode 0, zone B 18446744073709551616 1\n");
  ASSERT_EQ(b.zones.size(), 1u);
  EXPECT_EQ(b.zones[0].free_blocks[0], 18446744073709551615ull);
  EXPECT_EQ(b.malformed_lines, 1u);
}

TEST(ParseBuddyinfo, EmptyTextAndBinaryGarbage) {
  EXPECT_TRUE(ParseBuddyinfo("").zones.empty());
  EXPECT_EQ(ParseBuddyinfo("\n \n").malformed_lines, 0u);
  constexpr char kGarbage[] = "Node 0, zone \x01\x02 1 2\n\xff\xff\n\x00";
  Buddyinfo b = ParseBuddyinfo(std::string(kGarbage, sizeof(kGarbage) - 1));
  EXPECT_TRUE(b.zones.empty());
  EXPECT_EQ(b.malformed_lines, 3u);
}

TEST(ReadBuddyinfo, ReadsCapturedLocalKernel) {
  Expected<Buddyinfo> b = ReadBuddyinfo(testing::LocalRoot());
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(b->malformed_lines, 0u);
  ASSERT_EQ(b->zones.size(), 3u);
  EXPECT_EQ(b->zones[0].zone, "DMA");
  EXPECT_EQ(b->zones[1].zone, "DMA32");
  EXPECT_EQ(b->zones[2].zone, "Normal");
  EXPECT_EQ(b->zones[2].node, "0");
  EXPECT_EQ(b->zones[0].free_blocks, (Counts{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 3}));
  EXPECT_EQ(b->zones[2].free_blocks,
            (Counts{447, 1421, 1018, 732, 461, 296, 209, 119, 75, 62, 320}));
}

TEST(ReadBuddyinfo, ReadsMinimalTree) {
  Expected<Buddyinfo> b = ReadBuddyinfo(testing::MinimalRoot());
  ASSERT_TRUE(b.has_value()) << b.error().message;
  ASSERT_EQ(b->zones.size(), 2u);
  EXPECT_EQ(b->zones[1].free_blocks.back(), 400u);
}

TEST(ReadBuddyinfo, FailsWhenFileMissingOrHasNoZones) {
  Expected<Buddyinfo> missing = ReadBuddyinfo(testing::MissingRoot());
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ENOENT);
  Expected<Buddyinfo> garbage =
      ReadBuddyinfo(testing::ScratchRoot("buddyinfo-garbage", {{"buddyinfo", "not buddyinfo\n"}}));
  ASSERT_FALSE(garbage.has_value());
  EXPECT_EQ(garbage.error().code, EINVAL);
  EXPECT_NE(garbage.error().message.find("1 malformed"), std::string::npos);
}

}  // namespace
}  // namespace iodrift::proc
