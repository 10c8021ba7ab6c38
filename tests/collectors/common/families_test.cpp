#include "collectors/common/families.h"

#include <gtest/gtest.h>

#include "collectors/proc/name_filter.h"

namespace iodrift {
namespace {

TEST(SanitizeMetricName, KeepsKernelNamesReadable) {
  EXPECT_EQ(SanitizeMetricName("MemTotal"), "MemTotal");
  EXPECT_EQ(SanitizeMetricName("Active(file)"), "Active_file");
  EXPECT_EQ(SanitizeMetricName("Inactive(anon)"), "Inactive_anon");
  EXPECT_EQ(SanitizeMetricName("nr_zone_inactive_anon"), "nr_zone_inactive_anon");
  EXPECT_EQ(SanitizeMetricName("a.b-c"), "a_b_c");
  EXPECT_EQ(SanitizeMetricName("4k"), "_4k");
}

TEST(AddSample, StoresTheValueInTheMemberOfTheFamilyType) {
  auto counter = MakeFamily("c_total", "h", prometheus::MetricType::Counter);
  AddSample(counter, 3, {{"a", "b"}});
  EXPECT_EQ(counter.metric.at(0).counter.value, 3);
  EXPECT_EQ(counter.metric.at(0).label.at(0).value, "b");
  auto untyped = MakeFamily("u", "h", prometheus::MetricType::Untyped);
  AddSample(untyped, 5);
  EXPECT_EQ(untyped.metric.at(0).untyped.value, 5);
}

TEST(NameFilter, WholeNameIncludeAndExclude) {
  proc::NameFilter filter("kmalloc-[0-9]+|dentry", "kmalloc-8");
  EXPECT_TRUE(filter.Matches("dentry"));
  EXPECT_TRUE(filter.Matches("kmalloc-64"));
  EXPECT_FALSE(filter.Matches("kmalloc-8"));
  EXPECT_FALSE(filter.Matches("dentry_extra"));  // whole-name match, not search
  EXPECT_TRUE(filter.Matches("dentry"));         // cached answer is the same
  proc::NameFilter all(".*", "");
  EXPECT_TRUE(all.Matches("anything"));
}

}  // namespace
}  // namespace iodrift
