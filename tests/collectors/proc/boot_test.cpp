// Unit tests for collectors/proc/boot: /proc/stat btime, /proc/uptime and boot_id, inline and
// from the captured local-6.18 and hand-made minimal trees.
#include "collectors/proc/boot.h"

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "tests/collectors/proc/proc_fixtures.h"

namespace iodrift::proc {
namespace {

TEST(ParseStatBootTime, FindsBtimeAmongOtherLines) {
  EXPECT_EQ(ParseStatBootTime("cpu  1 2 3\nintr 5 0 0\nctxt 9\nbtime 1764685000\nprocesses 7\n"),
            1764685000u);
  EXPECT_EQ(ParseStatBootTime("btime 42"), 42u);  // first line, no trailing newline
}

TEST(ParseStatBootTime, SurvivesA130kCharacterIntrLine) {
  std::string stat = "cpu  1 2 3 4 5 6 7 8 9 10\nintr 999";
  for (int i = 0; i < 65961; ++i) stat += " 0";
  stat += "\nctxt 1\nbtime 1418183276\n";
  ASSERT_GT(stat.size(), 130000u);
  EXPECT_EQ(ParseStatBootTime(stat), 1418183276u);
}

TEST(ParseStatBootTime, NulloptWhenAbsentOrMalformed) {
  EXPECT_EQ(ParseStatBootTime(""), std::nullopt);
  EXPECT_EQ(ParseStatBootTime("cpu 1 2 3\n"), std::nullopt);
  EXPECT_EQ(ParseStatBootTime("btime\n"), std::nullopt);
  EXPECT_EQ(ParseStatBootTime("btime -5\n"), std::nullopt);
  EXPECT_EQ(ParseStatBootTime("btime 5 6\n"), std::nullopt);
  EXPECT_EQ(ParseStatBootTime("btime 18446744073709551616\n"), std::nullopt);
  EXPECT_EQ(ParseStatBootTime("btimes 5\n"), std::nullopt);
  EXPECT_EQ(ParseStatBootTime(" btime 5\n"), std::nullopt);  // the kernel prints it at column 0
  EXPECT_EQ(ParseStatBootTime("btime 17646"), 17646u);       // truncated: still a number
  constexpr char kGarbage[] = "\x00\xff\nbtime \x01\n";
  EXPECT_EQ(ParseStatBootTime(std::string(kGarbage, sizeof(kGarbage) - 1)), std::nullopt);
}

TEST(ParseUptime, TakesTheFirstField) {
  EXPECT_DOUBLE_EQ(ParseUptime("4011.52 7890.12\n").value(), 4011.52);
  EXPECT_DOUBLE_EQ(ParseUptime("86400.25 170000.50").value(), 86400.25);
  EXPECT_DOUBLE_EQ(ParseUptime("12.5\n").value(), 12.5);
}

TEST(ParseUptime, NulloptOnJunk) {
  EXPECT_EQ(ParseUptime(""), std::nullopt);
  EXPECT_EQ(ParseUptime("\n"), std::nullopt);
  EXPECT_EQ(ParseUptime("abc 1.0\n"), std::nullopt);
  EXPECT_EQ(ParseUptime("-1.0 2.0\n"), std::nullopt);
  EXPECT_EQ(ParseUptime("inf 2.0\n"), std::nullopt);
  EXPECT_EQ(ParseUptime("nan 2.0\n"), std::nullopt);
  EXPECT_EQ(ParseUptime("1.0 2.0 3.0\n"), std::nullopt);
  EXPECT_EQ(ParseUptime("1e999 2.0\n"), std::nullopt);
  EXPECT_EQ(ParseUptime(std::string("\x00\x01", 2)), std::nullopt);
}

TEST(ParseBootId, AcceptsCanonicalUuid) {
  EXPECT_EQ(ParseBootId("ca2e609e-6f3b-4179-a275-c77dc5735a5e\n"),
            "ca2e609e-6f3b-4179-a275-c77dc5735a5e");
  EXPECT_EQ(ParseBootId("  CA2E609E-6F3B-4179-A275-C77DC5735A5E"),
            "CA2E609E-6F3B-4179-A275-C77DC5735A5E");
}

TEST(ParseBootId, RejectsAnythingElse) {
  EXPECT_EQ(ParseBootId(""), std::nullopt);
  EXPECT_EQ(ParseBootId("ca2e609e-6f3b-4179-a275-c77dc5735a5"), std::nullopt);    // short
  EXPECT_EQ(ParseBootId("ca2e609e-6f3b-4179-a275-c77dc5735a5ee"), std::nullopt);  // long
  EXPECT_EQ(ParseBootId("ca2e609e6f3b-4179-a275-c77dc5735a5e-"), std::nullopt);   // dashes moved
  EXPECT_EQ(ParseBootId("ga2e609e-6f3b-4179-a275-c77dc5735a5e"), std::nullopt);   // not hex
  EXPECT_EQ(ParseBootId("ca2e609e-6f3b-4179-a275-c77dc5735a5e\nx"), std::nullopt);
  EXPECT_EQ(ParseBootId(std::string(36, '\0')), std::nullopt);
}

TEST(ReadBootState, ReadsCapturedLocalKernel) {
  Expected<BootState> b = ReadBootState(testing::LocalRoot());
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(b->boot_time_seconds, 1796227906u);
  ASSERT_TRUE(b->uptime_seconds.has_value());
  EXPECT_DOUBLE_EQ(*b->uptime_seconds, 288.18);
  EXPECT_EQ(b->boot_id, "ca2e609e-6f3b-4179-a275-c77dc5735a5e");
}

TEST(ReadBootState, ReadsHandMadeTreeWithoutTrailingNewline) {
  Expected<BootState> b = ReadBootState(testing::MinimalRoot());
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(b->boot_time_seconds, 1700000000u);
  EXPECT_DOUBLE_EQ(b->uptime_seconds.value(), 86400.25);
  EXPECT_EQ(b->boot_id, "00000000-1111-4222-8333-444444444444");
}

TEST(ReadBootState, EachPartIsOptional) {
  Expected<BootState> only_uptime =
      ReadBootState(testing::ScratchRoot("boot-only-uptime", {{"uptime", "5.00 1.00\n"}}));
  ASSERT_TRUE(only_uptime.has_value());
  EXPECT_EQ(only_uptime->boot_time_seconds, std::nullopt);
  EXPECT_DOUBLE_EQ(only_uptime->uptime_seconds.value(), 5.0);
  EXPECT_EQ(only_uptime->boot_id, std::nullopt);

  // Readable but unparsable still counts as "read": the field is absent, no error.
  Expected<BootState> junk =
      ReadBootState(testing::ScratchRoot("boot-junk", {{"sys/kernel/random/boot_id", "junk"}}));
  ASSERT_TRUE(junk.has_value());
  EXPECT_EQ(junk->boot_id, std::nullopt);
}

TEST(ReadBootState, FailsOnlyWhenNothingCouldBeRead) {
  Expected<BootState> b = ReadBootState(testing::MissingRoot());
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().code, ENOENT);
  EXPECT_NE(b.error().message.find("stat"), std::string::npos);
  EXPECT_NE(b.error().message.find("uptime"), std::string::npos);
  EXPECT_NE(b.error().message.find("boot_id"), std::string::npos);
}

}  // namespace
}  // namespace iodrift::proc
