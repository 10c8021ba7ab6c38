// `iodriftctl boots` text and JSON (daemon/boots_report.h): every column of the heading, one line
// per boot with "-" for marks not reached, and the JSON of one probe.
#include "daemon/boots_report.h"

#include <gtest/gtest.h>

namespace iodrift::daemon {
namespace {

analysis::BootRow Row(const std::string& id, bool current) {
  analysis::BootRow row;
  row.boot_id = id;
  row.boot_time_seconds = 1764950000;
  row.current = current;
  row.key.kind = probes::ProbeKind::kBuffered;
  row.key.target = "/srv/probe";
  row.baseline = 100e6;
  row.worst_ratio = 0.42;
  row.uptime_at_worst = 90000;
  row.record.worst_verdict = "memory_reclaim";
  row.record.at[0] = 0.97;
  row.record.last_ratio = 0.5;
  row.record.last_uptime = 95000;
  return row;
}

TEST(BootsReport, TextHasEveryColumnAndOneLinePerBoot) {
  const std::string text =
      BootsText("disk", {Row("0123456789abcdef", true), Row("fedcba9876543210", false)});
  const std::string heading = text.substr(text.find('\n') + 1);
  for (const char* column :
       {"boot time", "1h", "1d", "7d", "30d", "last", "worst", "at", "verdict"}) {
    EXPECT_NE(heading.substr(0, heading.find('\n')).find(column), std::string::npos) << column;
  }
  EXPECT_NE(
      text.find("\n  01234567  2025-12-05 15:53   0.97      -      -      -   0.50   0.42 1d 1h "
                "    memory_reclaim  (this boot)\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  fedcba98 "), std::string::npos) << text;
  EXPECT_EQ(BootsText("disk", {}).find("no boots recorded yet"), text.find('\n') + 3);
}

TEST(BootsReport, ProbeJsonHoldsEveryBoot) {
  const std::string json = ProbeBootsJson("disk", {Row("a", true), Row("b", false)});
  EXPECT_EQ(json.rfind("{\"name\":\"disk\",\"boots\":[{\"boot_id\":\"a\"", 0), 0u) << json;
  EXPECT_NE(json.find("\"ratio_1h\":0.97,\"ratio_1d\":null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"worst_verdict\":\"memory_reclaim\""), std::string::npos) << json;
  EXPECT_NE(json.find("{\"boot_id\":\"b\",\"boot_time_seconds\":1764950000,\"current\":false"),
            std::string::npos)
      << json;
}

}  // namespace
}  // namespace iodrift::daemon
