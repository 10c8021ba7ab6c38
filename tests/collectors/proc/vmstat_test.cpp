// Unit tests for collectors/proc/vmstat: inline strings for the edge cases, the captured
// local-6.18 tree for real values.
#include "collectors/proc/vmstat.h"

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "tests/collectors/proc/proc_fixtures.h"

namespace iodrift::proc {
namespace {

TEST(ParseVmstat, KeepsNamesAndValuesInFileOrder) {
  Vmstat v = ParseVmstat("nr_free_pages 5767632\npgscan_kswapd 0\nsome_new_counter 42\n");
  ASSERT_EQ(v.fields.size(), 3u);
  EXPECT_EQ(v.malformed_lines, 0u);
  EXPECT_EQ(v.fields[0].name, "nr_free_pages");
  EXPECT_EQ(v.fields[0].value, 5767632);
  EXPECT_EQ(v.fields[2].name, "some_new_counter");
  EXPECT_EQ(v.Get("pgscan_kswapd"), 0);
  EXPECT_EQ(v.Get("pgscan_direct"), std::nullopt);
}

TEST(ParseVmstat, KeepsNegativeGauges) {
  Vmstat v = ParseVmstat("nr_isolated_anon -3\n");
  EXPECT_EQ(v.Get("nr_isolated_anon"), -3);
  EXPECT_EQ(v.malformed_lines, 0u);
}

TEST(ParseVmstat, SkipsAndCountsLinesThatAreNotNameAndNumber) {
  Vmstat v = ParseVmstat(
      "good 1\n"
      "missing_value\n"
      "extra 1 2\n"
      "letters abc\n"
      "float 1.5\n"
      "plus +5\n"
      "also_good\t2\n");
  EXPECT_EQ(v.malformed_lines, 5u);
  ASSERT_EQ(v.fields.size(), 2u);
  EXPECT_EQ(v.Get("also_good"), 2);
}

TEST(ParseVmstat, OverflowIsMalformedNotWrapped) {
  Vmstat v = ParseVmstat(
      "max 9223372036854775807\n"
      "over 9223372036854775808\n"
      "min -9223372036854775808\n"
      "under -9223372036854775809\n");
  EXPECT_EQ(v.Get("max"), INT64_MAX);
  EXPECT_EQ(v.Get("min"), INT64_MIN);
  EXPECT_EQ(v.Get("over"), std::nullopt);
  EXPECT_EQ(v.Get("under"), std::nullopt);
  EXPECT_EQ(v.malformed_lines, 2u);
}

TEST(ParseVmstat, RepeatedNameKeepsFirst) {
  Vmstat v = ParseVmstat("pgfault 1\npgfault 2\n");
  ASSERT_EQ(v.fields.size(), 1u);
  EXPECT_EQ(v.Get("pgfault"), 1);
  EXPECT_EQ(v.malformed_lines, 1u);
}

TEST(ParseVmstat, TruncatedLastLine) {
  Vmstat v = ParseVmstat("pgfault 1\npgmajfault 2");  // no newline: still a whole line
  EXPECT_EQ(v.Get("pgmajfault"), 2);
  Vmstat cut = ParseVmstat("pgfault 1\npgmajf");  // cut inside the name
  EXPECT_EQ(cut.fields.size(), 1u);
  EXPECT_EQ(cut.malformed_lines, 1u);
}

TEST(ParseVmstat, EmptyTextAndBinaryGarbage) {
  EXPECT_TRUE(ParseVmstat("").fields.empty());
  EXPECT_EQ(ParseVmstat("\n\n").malformed_lines, 0u);
  constexpr char kGarbage[] = "\x01\x02 7\n\xff\xfe\x00 8\n\x00";
  Vmstat v = ParseVmstat(std::string(kGarbage, sizeof(kGarbage) - 1));
  EXPECT_TRUE(v.fields.empty());
  EXPECT_EQ(v.malformed_lines, 3u);
}

TEST(ReadVmstat, ReadsCapturedLocalKernel) {
  Expected<Vmstat> v = ReadVmstat(testing::LocalRoot());
  ASSERT_TRUE(v.has_value()) << v.error().message;
  EXPECT_EQ(v->fields.size(), 192u);
  EXPECT_EQ(v->malformed_lines, 0u);
  EXPECT_EQ(v->fields.front().name, "nr_free_pages");
  EXPECT_EQ(v->fields.back().name, "nr_unstable");
  EXPECT_EQ(v->Get("nr_free_pages"), 1213998);
  EXPECT_EQ(v->Get("pgpgin"), 953189);
  EXPECT_EQ(v->Get("workingset_refault_file"), 2224);
  EXPECT_EQ(v->Get("pgscan_kswapd"), 0);
}

TEST(ReadVmstat, ReadsMinimalTree) {
  Expected<Vmstat> v = ReadVmstat(testing::MinimalRoot());
  ASSERT_TRUE(v.has_value()) << v.error().message;
  EXPECT_EQ(v->fields.size(), 5u);
  EXPECT_EQ(v->Get("workingset_refault"), 7);
}

TEST(ReadVmstat, FailsWithErrnoWhenFileMissing) {
  Expected<Vmstat> v = ReadVmstat(testing::MissingRoot());
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code, ENOENT);
}

}  // namespace
}  // namespace iodrift::proc
