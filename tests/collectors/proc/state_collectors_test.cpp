// The metric collectors over fixture roots: family names, labels, and the failure contract
// (an unreadable source is an error value, nothing partial is exported).
#include "collectors/proc/state_collectors.h"

#include <set>

#include <gtest/gtest.h>

#include "collectors/proc/balloon.h"
#include "tests/collectors/proc/proc_fixtures.h"

namespace iodrift::proc {
namespace {

using testing::LocalRoot;
using testing::MinimalRoot;
using testing::ScratchRoot;

std::vector<prometheus::MetricFamily> CollectAll(const Collector& c, const ProcRoot& root,
                                                 bool expect_ok = true) {
  std::vector<prometheus::MetricFamily> out;
  auto result = c.Collect(root, out);
  EXPECT_EQ(static_cast<bool>(result), expect_ok) << (result ? "" : result.error().message);
  return out;
}

const prometheus::MetricFamily* Find(const std::vector<prometheus::MetricFamily>& families,
                                     const std::string& name) {
  for (const auto& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(MeminfoCollector, ExportsKernelNamesWithBytesSuffixOnlyForKbFields) {
  auto families = CollectAll(*MakeMeminfoCollector(), LocalRoot());
  const auto* total = Find(families, "iodrift_meminfo_MemTotal_bytes");
  ASSERT_NE(total, nullptr);
  EXPECT_GT(total->metric.at(0).gauge.value, 1e9);
  EXPECT_NE(Find(families, "iodrift_meminfo_Active_file_bytes"), nullptr);
  EXPECT_NE(Find(families, "iodrift_meminfo_HugePages_Total"), nullptr);
  EXPECT_EQ(Find(families, "iodrift_meminfo_HugePages_Total_bytes"), nullptr);
}

TEST(SlabinfoCollector, SumsCachesThatShareANameSoSeriesStayUnique) {
  auto root = ScratchRoot(
      "slab-dup",
      {{"slabinfo",
        "slabinfo - version: 2.1\n"
        "# name <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> "
        "<batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n"
        "dentry 100 200 192 21 1 : tunables 0 0 0 : slabdata 10 10 0\n"
        "dentry 1 21 192 21 1 : tunables 0 0 0 : slabdata 1 1 0\n"
        "kmalloc-64 5 64 64 64 1 : tunables 0 0 0 : slabdata 1 1 0\n"
        "unrelated_cache 5 64 64 64 1 : tunables 0 0 0 : slabdata 1 1 0\n"}});
  auto families = CollectAll(*MakeSlabinfoCollector({}), root);
  const auto* objects = Find(families, "iodrift_slabinfo_objects");
  ASSERT_NE(objects, nullptr);
  ASSERT_EQ(objects->metric.size(), 2u);  // dentry (merged) and kmalloc-64; not unrelated_cache
  EXPECT_EQ(objects->metric[0].label.at(0).value, "dentry");
  EXPECT_EQ(objects->metric[0].gauge.value, 221);
  const auto* total = Find(families, "iodrift_slabinfo_total_bytes");
  ASSERT_NE(total, nullptr);
  EXPECT_EQ(total->metric.at(0).gauge.value, 13.0 * 4096);  // every cache, selected or not
}

TEST(PressureCollector, MissingPsiIsAnErrorAndExportsNothing) {
  std::vector<prometheus::MetricFamily> out;
  auto result = MakePressureCollector()->Collect(MinimalRoot(), out);
  EXPECT_FALSE(result);
  EXPECT_TRUE(out.empty());
}

TEST(PressureCollector, ExportsTheResourcesThisKernelHas) {
  auto families = CollectAll(*MakePressureCollector(), LocalRoot());
  const auto* waiting = Find(families, "iodrift_pressure_waiting_seconds_total");
  ASSERT_NE(waiting, nullptr);
  std::set<std::string> resources;
  for (const auto& m : waiting->metric) resources.insert(m.label.at(0).value);
  EXPECT_EQ(resources, (std::set<std::string>{"cpu", "io", "memory"}));  // no irq on 6.18 here
}

TEST(MakeStateCollectors, BuildsOnlyTheEnabledOnesInAFixedOrder) {
  CollectorsOptions cfg;
  cfg.slabinfo.enabled = false;
  cfg.pressure = false;
  auto collectors = MakeStateCollectors(cfg);
  std::vector<std::string> names;
  for (const auto& c : collectors) names.emplace_back(c->Name());
  EXPECT_EQ(names, (std::vector<std::string>{"meminfo", "vmstat", "buddyinfo", "boot", "dentries",
                                             "balloon"}));
}

TEST(StateCollectors, EveryCollectorFailsCleanlyOnAMissingRoot) {
  CollectorsOptions cfg;
  cfg.balloon = false;  // reads sysfs, not the proc root
  for (const auto& c : MakeStateCollectors(cfg)) {
    std::vector<prometheus::MetricFamily> out;
    EXPECT_FALSE(c->Collect(testing::MissingRoot(), out)) << c->Name();
    EXPECT_TRUE(out.empty()) << c->Name();
  }
}

TEST(VirtioFeatureBit, ReadsTheCharacterAtTheBitIndex) {
  EXPECT_EQ(VirtioFeatureBit("0110010100\n", 5), true);
  EXPECT_EQ(VirtioFeatureBit("0110000100", 5), false);
  EXPECT_EQ(VirtioFeatureBit("0110", 5), std::nullopt);
  EXPECT_EQ(VirtioFeatureBit("01x0010100", 5), std::nullopt);
}

TEST(BalloonCollector, ExportsReportingStateAndNothingWithoutABalloon) {
  auto sys = ScratchRoot("sys-balloon",
                         {{"bus/virtio/drivers/virtio_balloon/virtio0/features",
                           "0110010100000000000000000000000010000000\n"},
                          {"module/page_reporting/parameters/page_reporting_order", "9\n"}});
  auto families = CollectAll(*MakeBalloonCollector(sys.root()), LocalRoot());
  const auto* reporting = Find(families, "iodrift_balloon_free_page_reporting");
  ASSERT_NE(reporting, nullptr);
  EXPECT_EQ(reporting->metric.at(0).gauge.value, 1);
  const auto* order = Find(families, "iodrift_balloon_page_reporting_order");
  ASSERT_NE(order, nullptr);
  EXPECT_EQ(order->metric.at(0).gauge.value, 9);
  auto empty = ScratchRoot("sys-none", {{"bus/virtio/drivers/.keep", ""}});
  EXPECT_TRUE(CollectAll(*MakeBalloonCollector(empty.root()), LocalRoot()).empty());
}

}  // namespace
}  // namespace iodrift::proc
