// The vmstat collector's default field set: lean beside node_exporter, yet every
// field the shipped rules and the probes' memory context read is in it; `all` and a custom regex
// still work.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "collectors/proc/state_collectors.h"
#include "collectors/proc/vmstat.h"
#include "config/config.h"
#include "tests/collectors/proc/proc_fixtures.h"

namespace iodrift::proc {
namespace {

std::set<std::string> Exported(const std::string& fields) {
  config::VmstatOptions options;
  options.fields = fields;
  std::vector<prometheus::MetricFamily> out;
  auto result = MakeVmstatCollector(options)->Collect(testing::LocalRoot(), out);
  EXPECT_TRUE(result) << (result ? "" : result.error().message);
  std::set<std::string> names;
  for (const auto& f : out) names.insert(f.name.substr(std::string("iodrift_vmstat_").size()));
  return names;
}

TEST(VmstatDefaultFields, TheConfigDefaultIsTheShortList) {
  EXPECT_EQ(config::VmstatOptions{}.fields, "default");
  const auto names = Exported(config::VmstatOptions{}.fields);
  auto all = ReadVmstat(testing::LocalRoot());
  ASSERT_TRUE(all);
  // 192 fields in the 6.18 fixture; the default keeps the few dozen that explain a slow read.
  EXPECT_GE(all->fields.size(), 150u);
  EXPECT_GE(names.size(), 30u);
  EXPECT_LE(names.size(), 50u);
  for (const char* want :
       {"pgscan_kswapd", "pgscan_direct", "pgsteal_direct", "allocstall_normal", "compact_stall",
        "compact_fail", "workingset_refault_file", "workingset_refault_anon", "thp_fault_alloc",
        "thp_fault_fallback", "nr_anon_transparent_hugepages", "pgmajfault", "pgpgin", "pswpin",
        "nr_dirty", "nr_writeback", "oom_kill"}) {
    EXPECT_TRUE(names.count(want)) << want << " is not in the default set";
  }
  for (const char* not_wanted : {"nr_free_pages", "numa_hit", "pgalloc_normal", "nr_mlock",
                                 "unevictable_pgs_culled", "htlb_buddy_alloc_success"}) {
    EXPECT_FALSE(names.count(not_wanted)) << not_wanted << " is in the default set";
  }
}

TEST(VmstatDefaultFields, AllAndCustomRegexesStillWork) {
  auto all = ReadVmstat(testing::LocalRoot());
  ASSERT_TRUE(all);
  EXPECT_EQ(Exported("all").size(), all->fields.size());
  EXPECT_EQ(Exported(".*").size(), all->fields.size());
  EXPECT_EQ(Exported("").size(), all->fields.size());
  EXPECT_EQ(Exported("pgscan_kswapd|nr_free_pages"),
            (std::set<std::string>{"pgscan_kswapd", "nr_free_pages"}));
  EXPECT_EQ(VmstatFieldsRegex("nr_.*"), "nr_.*");
}

// Every iodrift_vmstat_<field> that the shipped recording and alert rules read must be exported
// by default: a rule on a dropped field would be empty without an error anywhere.
TEST(VmstatDefaultFields, CoversEveryFieldTheShippedRulesRead) {
  const std::regex fields(VmstatFieldsRegex("default"));
  const auto rules = std::filesystem::path(IODRIFT_TEST_FIXTURES) / ".." / ".." / "dashboards";
  const std::regex use("iodrift_vmstat_([a-z0-9_]+)");
  std::size_t seen = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(rules)) {
    const auto name = entry.path().filename().string();
    if (!(name.ends_with(".rules.yml") || name.ends_with(".json"))) continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (std::sregex_iterator it(s.begin(), s.end(), use), end; it != end; ++it) {
      ++seen;
      EXPECT_TRUE(std::regex_match((*it)[1].str(), fields))
          << entry.path() << " reads iodrift_vmstat_" << (*it)[1] << ", not in the default set";
    }
  }
  EXPECT_GT(seen, 5u) << "no vmstat field found in " << rules << " (moved?)";
}

}  // namespace
}  // namespace iodrift::proc
