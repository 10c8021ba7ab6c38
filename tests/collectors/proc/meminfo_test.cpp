// Unit tests for collectors/proc/meminfo: inline strings for the edge cases, the captured
// local-6.18 tree for real values.
#include "collectors/proc/meminfo.h"

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "tests/collectors/proc/proc_fixtures.h"

namespace iodrift::proc {
namespace {

TEST(ParseMeminfo, ConvertsKilobytesToBytesAndKeepsCounts) {
  Meminfo m = ParseMeminfo(
      "MemTotal:       24563112 kB\n"
      "Active(file):      25140 kB\n"
      "HugePages_Total:       7\n");
  ASSERT_EQ(m.fields.size(), 3u);
  EXPECT_EQ(m.malformed_lines, 0u);
  EXPECT_EQ(m.fields[0].name, "MemTotal");
  EXPECT_EQ(m.fields[0].value, 24563112ull * 1024);
  EXPECT_TRUE(m.fields[0].is_bytes);
  EXPECT_EQ(m.fields[1].name, "Active(file)");
  EXPECT_EQ(m.fields[1].value, 25140ull * 1024);
  EXPECT_EQ(m.fields[2].name, "HugePages_Total");
  EXPECT_EQ(m.fields[2].value, 7u);
  EXPECT_FALSE(m.fields[2].is_bytes);
}

TEST(ParseMeminfo, GetReturnsNulloptForAbsentField) {
  Meminfo m = ParseMeminfo("MemTotal: 1 kB\n");
  EXPECT_EQ(m.Get("MemTotal"), 1024u);
  EXPECT_EQ(m.Get("MemAvailable"), std::nullopt);
  EXPECT_EQ(m.Get(""), std::nullopt);
}

TEST(ParseMeminfo, KeepsUnknownFieldsInFileOrder) {
  Meminfo m = ParseMeminfo("Zeta: 1 kB\nSomethingNew(6.99): 2 kB\nAlpha: 3\n");
  ASSERT_EQ(m.fields.size(), 3u);
  EXPECT_EQ(m.fields[0].name, "Zeta");
  EXPECT_EQ(m.fields[1].name, "SomethingNew(6.99)");
  EXPECT_EQ(m.fields[2].name, "Alpha");
}

TEST(ParseMeminfo, SkipsAndCountsMalformedLines) {
  Meminfo m = ParseMeminfo(
      "MemTotal: 100 kB\n"
      "no colon here 5 kB\n"
      "Empty:\n"
      "Junk: abc kB\n"
      "Negative: -5 kB\n"
      "WrongUnit: 5 MB\n"
      "TooMany: 5 kB extra\n"
      "Node 0 MemFree: 5 kB\n"
      ": 5 kB\n"
      "MemFree: 200 kB\n");
  EXPECT_EQ(m.malformed_lines, 8u);
  ASSERT_EQ(m.fields.size(), 2u);
  EXPECT_EQ(m.Get("MemTotal"), 100u * 1024);
  EXPECT_EQ(m.Get("MemFree"), 200u * 1024);
}

TEST(ParseMeminfo, OverflowingValuesAreMalformedNotWrapped) {
  Meminfo m = ParseMeminfo(
      "Huge: 18014398509481984 kB\n"     // 2^54 kB = 2^64 bytes: does not fit
      "Max: 18014398509481983 kB\n"      // 2^54 - 1 kB: fits
      "TooBig: 18446744073709551616\n"   // 2^64
      "Count: 18446744073709551615\n");  // 2^64 - 1
  EXPECT_EQ(m.malformed_lines, 2u);
  EXPECT_EQ(m.Get("Huge"), std::nullopt);
  EXPECT_EQ(m.Get("Max"), 18014398509481983ull * 1024);
  EXPECT_EQ(m.Get("TooBig"), std::nullopt);
  EXPECT_EQ(m.Get("Count"), 18446744073709551615ull);
}

TEST(ParseMeminfo, RepeatedNameKeepsFirstAndCountsRepeat) {
  Meminfo m = ParseMeminfo("Cached: 1 kB\nCached: 2 kB\n");
  ASSERT_EQ(m.fields.size(), 1u);
  EXPECT_EQ(m.Get("Cached"), 1024u);
  EXPECT_EQ(m.malformed_lines, 1u);
}

TEST(ParseMeminfo, AcceptsTruncatedLastLineWithoutNewline) {
  Meminfo m = ParseMeminfo("MemTotal: 10 kB\nMemFree: 5 kB");
  EXPECT_EQ(m.Get("MemFree"), 5u * 1024);
  EXPECT_EQ(m.malformed_lines, 0u);
  // Cut in the middle of the name: that part is malformed, the rest still parses.
  Meminfo cut = ParseMeminfo("MemTotal: 10 kB\nMemFr");
  EXPECT_EQ(cut.fields.size(), 1u);
  EXPECT_EQ(cut.malformed_lines, 1u);
}

TEST(ParseMeminfo, EmptyAndBlankTextYieldNothing) {
  EXPECT_TRUE(ParseMeminfo("").fields.empty());
  Meminfo blank = ParseMeminfo("\n\n  \n\t\n");
  EXPECT_TRUE(blank.fields.empty());
  EXPECT_EQ(blank.malformed_lines, 0u);
}

TEST(ParseMeminfo, SurvivesBinaryGarbage) {
  constexpr char kGarbage[] = "\x00\xff\x01:\x02 kB\n\x7f\x80:9\n\x00\x00\x00";
  std::string garbage(kGarbage, sizeof(kGarbage) - 1);
  Meminfo m = ParseMeminfo(garbage);
  EXPECT_TRUE(m.fields.empty());
  EXPECT_EQ(m.malformed_lines, 3u);
}

TEST(ReadMeminfo, ReadsCapturedLocalKernel) {
  Expected<Meminfo> m = ReadMeminfo(testing::LocalRoot());
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->fields.size(), 54u);
  EXPECT_EQ(m->malformed_lines, 0u);
  EXPECT_EQ(m->fields.front().name, "MemTotal");
  EXPECT_EQ(m->fields.back().name, "DirectMap1G");
  EXPECT_EQ(m->Get("MemTotal"), 24683584ull * 1024);
  EXPECT_EQ(m->Get("MemAvailable"), 24404788ull * 1024);
  EXPECT_EQ(m->Get("Active(file)"), 25140ull * 1024);
  EXPECT_EQ(m->Get("SReclaimable"), 63460ull * 1024);
  EXPECT_EQ(m->Get("VmallocTotal"), 34359738367ull * 1024);
  EXPECT_EQ(m->Get("HugePages_Total"), 0u);
  EXPECT_EQ(m->Get("HardwareCorrupted"), std::nullopt);
}

TEST(ReadMeminfo, ReadsMinimalTreeWithoutMemAvailable) {
  Expected<Meminfo> m = ReadMeminfo(testing::MinimalRoot());
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->fields.size(), 9u);
  EXPECT_EQ(m->Get("MemFree"), 512000ull * 1024);
  EXPECT_EQ(m->Get("MemAvailable"), std::nullopt);
}

TEST(ReadMeminfo, FailsWithErrnoWhenFileMissing) {
  Expected<Meminfo> m = ReadMeminfo(testing::MissingRoot());
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code, ENOENT);
  EXPECT_NE(m.error().message.find("meminfo"), std::string::npos);
}

}  // namespace
}  // namespace iodrift::proc
