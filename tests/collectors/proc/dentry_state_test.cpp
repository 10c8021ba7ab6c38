// Unit tests for collectors/proc/dentry_state: inline strings and the captured trees.
#include "collectors/proc/dentry_state.h"

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "tests/collectors/proc/proc_fixtures.h"

namespace iodrift::proc {
namespace {

TEST(ParseDentryState, ParsesTabSeparatedFields) {
  Expected<DentryState> d = ParseDentryState("147021\t120011\t45\t0\t30541\t0\n");
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(d->total, 147021u);
  EXPECT_EQ(d->unused, 120011u);
  EXPECT_EQ(d->negative, 30541u);
}

TEST(ParseDentryState, NegativeIsOptional) {
  Expected<DentryState> two = ParseDentryState("10\t5\n");
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->total, 10u);
  EXPECT_EQ(two->negative, std::nullopt);
  Expected<DentryState> four = ParseDentryState("10\t5\t45\t0");
  ASSERT_TRUE(four.has_value());
  EXPECT_EQ(four->negative, std::nullopt);
  Expected<DentryState> junk_fifth = ParseDentryState("10\t5\t45\t0\tx\t0\n");
  ASSERT_TRUE(junk_fifth.has_value());
  EXPECT_EQ(junk_fifth->negative, std::nullopt);
}

TEST(ParseDentryState, ExtraFieldsAndSpacesAreFine) {
  Expected<DentryState> d = ParseDentryState("  1 2 3 4 5 6 7 8\n");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->total, 1u);
  EXPECT_EQ(d->unused, 2u);
  EXPECT_EQ(d->negative, 5u);
}

TEST(ParseDentryState, FailsOnTooFewOrBadFields) {
  EXPECT_FALSE(ParseDentryState("").has_value());
  EXPECT_FALSE(ParseDentryState("\n").has_value());
  EXPECT_FALSE(ParseDentryState("10\n").has_value());
  EXPECT_FALSE(ParseDentryState("10\n5\n").has_value());  // only the first line counts
  EXPECT_FALSE(ParseDentryState("x\t5\n").has_value());
  EXPECT_FALSE(ParseDentryState("-1\t5\n").has_value());
  EXPECT_FALSE(ParseDentryState("18446744073709551616\t5\n").has_value());
  Expected<DentryState> garbage = ParseDentryState(std::string("\x00\xff\t\x01", 4));
  ASSERT_FALSE(garbage.has_value());
  EXPECT_EQ(garbage.error().code, EINVAL);
}

TEST(ReadDentryState, ReadsCapturedLocalKernel) {
  Expected<DentryState> d = ReadDentryState(testing::LocalRoot());
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(d->total, 43484u);
  EXPECT_EQ(d->unused, 42106u);
  EXPECT_EQ(d->negative, 8016u);
}

TEST(ReadDentryState, OldKernelPrintsZeroNegative) {
  Expected<DentryState> d = ReadDentryState(testing::MinimalRoot());
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(d->total, 20000u);
  EXPECT_EQ(d->unused, 15000u);
  EXPECT_EQ(d->negative, 0u);
}

TEST(ReadDentryState, FailsWhenFileMissingOrMalformed) {
  Expected<DentryState> missing = ReadDentryState(testing::MissingRoot());
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ENOENT);
  Expected<DentryState> bad =
      ReadDentryState(testing::ScratchRoot("dentry-bad", {{"sys/fs/dentry-state", "nonsense\n"}}));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, EINVAL);
  EXPECT_NE(bad.error().message.find("dentry-state"), std::string::npos);
}

}  // namespace
}  // namespace iodrift::proc
