// The exporter across reloads with a collector file whose read blocks in the kernel (buddyinfo is
// a FIFO without a writer: open() waits like a hung FUSE file): the first scrape waits the
// deadline and reports it stuck; after any number of Reconfigure() calls — with the same
// collectors or other ones — every scrape reports it stuck at once (duration 0), no thread is
// added and the failure is logged once; when the read returns it is read again.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "daemon/exporter.h"
#include "tests/daemon/process_threads.h"

namespace iodrift::daemon {
namespace {

using testing::ProcessThreads;

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class TempRoot {
 public:
  TempRoot() {
    char name[] = "/tmp/iodrift-exporter-reload-XXXXXX";
    dir_ = ::mkdtemp(name);
  }
  ~TempRoot() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

// The value of `series` (name and labels, as exposed) in `text`, or "" when absent.
std::string Value(const std::string& text, const std::string& series) {
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return "";
  const auto start = at + series.size() + 2;
  return text.substr(start, text.find('\n', start) - start);
}

TEST(ExporterReload, BlockedReadStaysKnownAcrossReconfigure) {
  TempRoot root;
  std::ofstream(root.dir() / "meminfo") << "MemTotal: 100 kB\n";
  const fs::path fifo = root.dir() / "buddyinfo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  config::CollectorsConfig all;
  config::CollectorsConfig fewer;
  fewer.pressure = false;

  Exporter exporter(ProcRoot(root.dir()), all, 300ms);
  const std::string stuck = "iodrift_collector_stuck{collector=\"buddyinfo\"}";
  const std::string took = "iodrift_collector_duration_seconds{collector=\"buddyinfo\"}";
  std::string text = exporter.RenderText();
  ASSERT_EQ(Value(text, stuck), "1");
  EXPECT_EQ(Value(text, "iodrift_collector_success{collector=\"buddyinfo\"}"), "0");
  EXPECT_EQ(Value(text, "iodrift_collector_success{collector=\"meminfo\"}"), "1");

  exporter.Reconfigure(ProcRoot(root.dir()), all);  // the first reload and scrape
  text = exporter.RenderText();
  ASSERT_EQ(Value(text, stuck), "1");
  const int threads = ProcessThreads();
  ASSERT_GT(threads, 0);
  for (int i = 0; i < 40; ++i) {
    // Pairs: a reload that rebuilds the collectors, one that keeps them.
    exporter.Reconfigure(ProcRoot(root.dir()), (i / 2) % 2 == 0 ? fewer : all);
    text = exporter.RenderText();
    EXPECT_EQ(Value(text, stuck), "1") << "reload " << i;
    EXPECT_EQ(Value(text, took), "0") << "reload " << i << " waited for the blocked read again";
    EXPECT_EQ(Value(text, "iodrift_collector_success{collector=\"meminfo\"}"), "1");
  }
  // (At most: a thread another test freed may still have been exiting at the first count.)
  EXPECT_LE(ProcessThreads(), threads);

  // A writer opens the FIFO: the blocked open returns. The path becomes a regular file before
  // the writer closes (the reader then sees EOF), so the next read does not block again.
  const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(writer, 0) << "no reader blocked on the FIFO";
  std::ofstream(root.dir() / "buddyinfo.new") << "Node 0, zone   Normal      1      2\n";
  fs::rename(root.dir() / "buddyinfo.new", fifo);
  ::close(writer);
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (Value(text, stuck) != "0" && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(10ms);
    text = exporter.RenderText();
  }
  EXPECT_EQ(Value(text, stuck), "0") << "still stuck after the blocked read returned";
}

}  // namespace
}  // namespace iodrift::daemon
