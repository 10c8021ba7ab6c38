#include "collectors/self/process_stat.h"

#include <gtest/gtest.h>

namespace iodrift::self {
namespace {

// Captured from `cat /proc/self/stat` on 6.18.44 (comm edited to contain ") " to test the rule).
constexpr const char* kStat =
    "4242 (io drift) d) S 1 4242 4242 0 -1 4194560 1021 0 0 0 7 3 0 0 20 0 3 0 401234 "
    "165871616 2119 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 "
    "0\n";

TEST(ParseProcessStat, CountsFieldsFromTheLastParenthesis) {
  auto stat = ParseProcessStat(kStat);
  ASSERT_TRUE(stat) << stat.error().message;
  EXPECT_EQ(stat->utime_ticks, 7u);
  EXPECT_EQ(stat->stime_ticks, 3u);
  EXPECT_EQ(stat->start_time_ticks, 401234u);
  EXPECT_EQ(stat->virtual_bytes, 165871616u);
  EXPECT_EQ(stat->rss_pages, 2119u);
}

TEST(ParseProcessStat, RejectsTruncatedInput) {
  EXPECT_FALSE(ParseProcessStat("4242 (x) S 1 2 3"));
  EXPECT_FALSE(ParseProcessStat(""));
  EXPECT_FALSE(ParseProcessStat("no parenthesis at all"));
}

}  // namespace
}  // namespace iodrift::self
