#include "daemon/probe_report.h"

#include <gtest/gtest.h>

#include "collectors/probes/io_util.h"

namespace iodrift::daemon {
namespace {

probes::ProbeResult BufferedOk() {
  probes::ProbeResult r;
  r.name = "sda-buffered";
  r.kind = probes::ProbeKind::kBuffered;
  r.target = "/dev/sda";
  r.outcome = probes::Outcome::kOk;
  r.duration_seconds = 0.25;
  r.bytes = 64ull << 20;
  r.throughput_bytes_per_second = 256.0 * (1 << 20);
  r.cpu_user_seconds = 0.001;
  r.cpu_system_seconds = 0.2;
  r.context = {{"MemFree", 1024}, {"Cached", 2048}};
  r.suspect = {"low_free_memory"};
  return r;
}

TEST(FormatRate, UsesBinaryUnitsLikeHdparm) {
  EXPECT_EQ(FormatRate(253.4 * (1 << 20)), "253 MiB/s");
  EXPECT_EQ(FormatRate(9.02 * (1ull << 30)), "9.02 GiB/s");
  EXPECT_EQ(FormatRate(512), "512 B/s");
}

TEST(FormatSeconds, PicksAReadableUnit) {
  EXPECT_EQ(FormatSeconds(89e-6), "89 µs");
  EXPECT_EQ(FormatSeconds(0.00152), "1.52 ms");
  EXPECT_EQ(FormatSeconds(2.5), "2.50 s");
}

TEST(ProbeResultsJson, HasTheContractFieldsWithNullsForKindsThatDoNotApply) {
  std::string json = ProbeResultsJson(std::string("abc"), 123.5, {BufferedOk()});
  EXPECT_NE(
      json.find(
          R"({"boot_id":"abc","uptime_seconds":123.5,"probes":[{"name":"sda-buffered","kind":"buffered","target":"/dev/sda","success":true)"),
      std::string::npos)
      << json;
  EXPECT_NE(
      json.find(
          R"("bytes":67108864,"throughput_bytes_per_second":268435456,"ops_per_second":null,"latency_seconds":{"p50":null,"p99":null,"count":null})"),
      std::string::npos)
      << json;
  EXPECT_NE(
      json.find(
          R"("cpu_seconds":{"user":0.001,"system":0.2},"suspect":["low_free_memory"],"context":{"Cached":2048,"MemFree":1024})"),
      std::string::npos)
      << json;
}

TEST(ProbeResultsTable, AlignsColumnsAndListsErrorsBelow) {
  auto failed = BufferedOk();
  failed.name = "x";
  failed.outcome = probes::Outcome::kTimeout;
  failed.error = "no answer from /dev/sdb within 30 s";
  failed.suspect.clear();
  std::string table = ProbeResultsTable({BufferedOk(), failed});
  EXPECT_NE(table.find("sda-buffered  buffered  /dev/sda  ok       256 MiB/s"), std::string::npos)
      << table;
  EXPECT_NE(table.find("\n  x: no answer from /dev/sdb within 30 s\n"), std::string::npos) << table;
  EXPECT_NE(table.find("sda-buffered: figure doubtful: low_free_memory"), std::string::npos);
  EXPECT_NE(table.find("  sda-buffered: buffered disk reads: 64.00 MiB = 256 MiB/s\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("    context: MemFree 1.00 KiB, Cached 2.00 KiB\n"), std::string::npos)
      << table;
}

TEST(ProbeResultsTable, ShowsOnlyThePercentilesTheSampleCountSupportsAndTheCount) {
  probes::ProbeResult r;
  r.name = "sda-random";
  r.kind = probes::ProbeKind::kRandom;
  r.target = "/dev/sda";
  r.outcome = probes::Outcome::kOk;
  r.ops_per_second["read"] = 5000;
  std::vector<double> lat;
  for (int i = 1; i <= 64; ++i) lat.push_back(i * 1e-6);
  r.latency = probes::BuildLatencyHistogram(lat);  // 64 samples: p50 yes, p99 no
  std::string table = ProbeResultsTable({r});
  EXPECT_NE(table.find("5000 read/s (p50 32"), std::string::npos) << table;
  EXPECT_NE(table.find(", n=64)"), std::string::npos) << table;
  EXPECT_EQ(table.find("p99"), std::string::npos) << table;
  for (int i = 65; i <= 100; ++i) lat.push_back(i * 1e-6);
  r.latency = probes::BuildLatencyHistogram(lat);
  table = ProbeResultsTable({r});
  EXPECT_NE(table.find("p99 99"), std::string::npos) << table;
  EXPECT_NE(table.find(", n=100)"), std::string::npos) << table;
}

}  // namespace
}  // namespace iodrift::daemon
