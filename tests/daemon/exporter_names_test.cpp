// The exporter on a /proc tree with hostile contents: two meminfo fields that sanitise to one
// metric name ("Active(file)" and "Active_file") give one family (the first), counted in
// iodrift_collector_name_collisions; a vmstat with 100k fields is capped.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "daemon/exporter.h"

namespace iodrift::daemon {
namespace {

namespace fs = std::filesystem;

class TempRoot {
 public:
  TempRoot() {
    char name[] = "/tmp/iodrift-exporter-names-XXXXXX";
    dir_ = ::mkdtemp(name);
  }
  ~TempRoot() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

std::size_t Count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}

TEST(ExporterNames, CollidingNamesKeepTheFirstAndAreCounted) {
  TempRoot root;
  root.Write("meminfo", "MemTotal: 100 kB\nActive(file): 1 kB\nActive_file: 2 kB\n");
  root.Write("vmstat", "nr_free_pages 5\n");
  Exporter exporter(ProcRoot(root.dir()), config::CollectorsConfig{});
  const std::string text = exporter.RenderText();
  EXPECT_EQ(Count(text, "# HELP iodrift_meminfo_Active_file_bytes "), 1u) << text;
  EXPECT_NE(text.find("\niodrift_meminfo_Active_file_bytes 1024\n"), std::string::npos) << text;
  EXPECT_NE(text.find("iodrift_collector_name_collisions{collector=\"meminfo\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("iodrift_collector_name_collisions{collector=\"vmstat\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("iodrift_collector_success{collector=\"meminfo\"} 1\n"), std::string::npos);
}

TEST(ExporterNames, VmstatFieldsAreCapped) {
  TempRoot root;
  root.Write("meminfo", "MemTotal: 100 kB\n");
  std::string vmstat;
  for (int i = 0; i < 100000; ++i) vmstat += "field_" + std::to_string(i) + " " + "1\n";
  root.Write("vmstat", vmstat);
  config::CollectorsConfig collectors;
  collectors.vmstat.fields = ".*";  // every field, whatever the default set is
  Exporter exporter(ProcRoot(root.dir()), collectors);
  const std::string text = exporter.RenderText();
  const std::size_t families = Count(text, "# TYPE iodrift_vmstat_");
  EXPECT_GT(families, 0u);
  EXPECT_LE(families, 1024u);
  EXPECT_LT(text.size(), 1u << 20);
  EXPECT_NE(text.find("iodrift_collector_success{collector=\"vmstat\"} 1\n"), std::string::npos);
}

}  // namespace
}  // namespace iodrift::daemon
