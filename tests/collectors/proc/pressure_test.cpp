// Unit tests for collectors/proc/pressure: inline strings for the edge cases, the captured
// local-6.18 tree for real values.
#include "collectors/proc/pressure.h"

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "tests/collectors/proc/proc_fixtures.h"

namespace iodrift::proc {
namespace {

TEST(ParsePressure, ParsesSomeAndFull) {
  Pressure p = ParsePressure(
      "some avg10=1.50 avg60=2.25 avg300=3.00 total=12345\n"
      "full avg10=0.10 avg60=0.20 avg300=0.30 total=6789\n");
  ASSERT_TRUE(p.some.has_value());
  ASSERT_TRUE(p.full.has_value());
  EXPECT_DOUBLE_EQ(p.some->avg10, 1.50);
  EXPECT_DOUBLE_EQ(p.some->avg60, 2.25);
  EXPECT_DOUBLE_EQ(p.some->avg300, 3.00);
  EXPECT_EQ(p.some->total_us, 12345u);
  EXPECT_DOUBLE_EQ(p.full->avg300, 0.30);
  EXPECT_EQ(p.full->total_us, 6789u);
  EXPECT_EQ(p.malformed_lines, 0u);
}

TEST(ParsePressure, EitherLineMayBeMissing) {
  Pressure cpu_before_5_13 = ParsePressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=15\n");
  EXPECT_TRUE(cpu_before_5_13.some.has_value());
  EXPECT_FALSE(cpu_before_5_13.full.has_value());
  Pressure irq = ParsePressure("full avg10=0.00 avg60=0.00 avg300=0.00 total=8494");
  EXPECT_FALSE(irq.some.has_value());
  ASSERT_TRUE(irq.full.has_value());
  EXPECT_EQ(irq.full->total_us, 8494u);
  EXPECT_EQ(irq.malformed_lines, 0u);
}

TEST(ParsePressure, KeysInAnyOrderAndUnknownKeysIgnored) {
  Pressure p = ParsePressure("some total=7 avg300=3.5 future=abc avg10=1 avg60=2\n");
  ASSERT_TRUE(p.some.has_value());
  EXPECT_EQ(p.some->total_us, 7u);
  EXPECT_DOUBLE_EQ(p.some->avg10, 1.0);
  EXPECT_DOUBLE_EQ(p.some->avg60, 2.0);
  EXPECT_DOUBLE_EQ(p.some->avg300, 3.5);
  EXPECT_EQ(p.malformed_lines, 0u);
}

TEST(ParsePressure, MissingAveragesReadAsZero) {
  Pressure p = ParsePressure("some total=99\n");
  ASSERT_TRUE(p.some.has_value());
  EXPECT_EQ(p.some->total_us, 99u);
  EXPECT_DOUBLE_EQ(p.some->avg10, 0.0);
}

TEST(ParsePressure, LineWithoutParsableTotalIsMalformed) {
  Pressure p = ParsePressure(
      "some avg10=0.00 avg60=0.00 avg300=0.00\n"
      "full avg10=0.00 avg60=0.00 avg300=0.00 total=abc\n");
  EXPECT_FALSE(p.some.has_value());
  EXPECT_FALSE(p.full.has_value());
  EXPECT_EQ(p.malformed_lines, 2u);
}

TEST(ParsePressure, BadKnownValuesAreMalformed) {
  Pressure p = ParsePressure(
      "some avg10=x avg60=0 avg300=0 total=1\n"
      "full avg10=-1 avg60=0 avg300=0 total=1\n");
  EXPECT_FALSE(p.some.has_value());
  EXPECT_FALSE(p.full.has_value());
  EXPECT_EQ(p.malformed_lines, 2u);
  Pressure not_finite = ParsePressure("some avg10=inf total=1\nfull avg10=nan total=1\n");
  EXPECT_EQ(not_finite.malformed_lines, 2u);
  Pressure no_equals = ParsePressure("some avg10 total=1\n");
  EXPECT_EQ(no_equals.malformed_lines, 1u);
}

TEST(ParsePressure, OverflowingTotalIsMalformed) {
  Pressure p = ParsePressure("some total=18446744073709551615\nfull total=18446744073709551616\n");
  ASSERT_TRUE(p.some.has_value());
  EXPECT_EQ(p.some->total_us, 18446744073709551615ull);
  EXPECT_FALSE(p.full.has_value());
  EXPECT_EQ(p.malformed_lines, 1u);
}

TEST(ParsePressure, RepeatedLineKeepsFirst) {
  Pressure p = ParsePressure("some total=1\nsome total=2\n");
  ASSERT_TRUE(p.some.has_value());
  EXPECT_EQ(p.some->total_us, 1u);
  EXPECT_EQ(p.malformed_lines, 1u);
}

TEST(ParsePressure, UnknownWellFormedLinesIgnoredGarbageCounted) {
  Pressure p = ParsePressure("partial avg10=0.00 total=5\nsome total=1\n12345\n");
  EXPECT_TRUE(p.some.has_value());
  EXPECT_EQ(p.malformed_lines, 1u);  // "12345"; "partial ..." is a plausible future line
}

TEST(ParsePressure, TruncatedLastLine) {
  Pressure p = ParsePressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=12\nfull avg10=0.0");
  ASSERT_TRUE(p.some.has_value());
  EXPECT_FALSE(p.full.has_value());
  EXPECT_EQ(p.malformed_lines, 1u);
}

TEST(ParsePressure, EmptyTextAndBinaryGarbage) {
  Pressure empty = ParsePressure("");
  EXPECT_FALSE(empty.some || empty.full);
  EXPECT_EQ(empty.malformed_lines, 0u);
  constexpr char kGarbage[] = "\xff\x00some total=1\nsome\x00 total=2\n\x01=\x02\n";
  Pressure p = ParsePressure(std::string(kGarbage, sizeof(kGarbage) - 1));
  EXPECT_FALSE(p.some || p.full);
  EXPECT_EQ(p.malformed_lines, 3u);
}

TEST(ReadPressure, ReadsCapturedLocalKernel) {
  Expected<Pressure> io = ReadPressure(testing::LocalRoot(), "io");
  ASSERT_TRUE(io.has_value()) << io.error().message;
  ASSERT_TRUE(io->some && io->full);
  EXPECT_DOUBLE_EQ(io->some->avg60, 0.16);
  EXPECT_DOUBLE_EQ(io->some->avg300, 0.56);
  EXPECT_EQ(io->some->total_us, 3849829u);
  EXPECT_DOUBLE_EQ(io->full->avg300, 0.52);
  EXPECT_EQ(io->full->total_us, 3601321u);

  Expected<Pressure> cpu = ReadPressure(testing::LocalRoot(), "cpu");
  ASSERT_TRUE(cpu.has_value()) << cpu.error().message;
  ASSERT_TRUE(cpu->some && cpu->full);  // 6.18 prints "full" for cpu (since 5.13), all zero
  EXPECT_DOUBLE_EQ(cpu->some->avg10, 0.59);
  EXPECT_EQ(cpu->some->total_us, 6753223u);
  EXPECT_EQ(cpu->full->total_us, 0u);

  Expected<Pressure> memory = ReadPressure(testing::LocalRoot(), "memory");
  ASSERT_TRUE(memory.has_value()) << memory.error().message;
  EXPECT_EQ(memory->some->total_us, 0u);
  EXPECT_EQ(memory->malformed_lines, 0u);
}

TEST(ReadPressure, MissingIrqFailsWithEnoentAndHint) {
  Expected<Pressure> irq = ReadPressure(testing::LocalRoot(), "irq");
  ASSERT_FALSE(irq.has_value());
  EXPECT_EQ(irq.error().code, ENOENT);
  EXPECT_NE(irq.error().message.find("PSI"), std::string::npos);
}

TEST(ReadPressure, MissingDirectoryFailsWithEnoent) {
  Expected<Pressure> io = ReadPressure(testing::MinimalRoot(), "io");
  ASSERT_FALSE(io.has_value());
  EXPECT_EQ(io.error().code, ENOENT);
}

TEST(ReadPressure, RejectsUnknownResource) {
  Expected<Pressure> p = ReadPressure(testing::LocalRoot(), "../meminfo");
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().code, EINVAL);
}

}  // namespace
}  // namespace iodrift::proc
