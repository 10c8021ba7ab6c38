// KeptFiles: procfs files stay open and are re-read with pread (fresh contents every time);
// files elsewhere (a --proc-root fixture tree) are never kept, so a replaced file is seen; a
// missing file fails with its errno and the path.
#include "collectors/common/kept_files.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "collectors/common/proc_root.h"

namespace iodrift {
namespace {

std::string Field(const std::string& text, const std::string& key) {
  const auto at = text.find(key);
  if (at == std::string::npos) return {};
  return text.substr(at, text.find('\n', at) - at);
}

TEST(KeptFiles, KeepsAProcFileOpenAndReadsFreshContents) {
  KeptFiles files;
  // /proc/self/status's voluntary_ctxt_switches grows between reads that sleep in between.
  auto first = files.Read("/proc/self/status", kMaxProcFileBytes);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(files.KeptCount(), 1u);
  std::string before = Field(*first, "voluntary_ctxt_switches");
  ASSERT_FALSE(before.empty());
  std::string after = before;
  for (int i = 0; i < 100 && after == before; ++i) {
    ::usleep(2000);
    auto again = files.Read("/proc/self/status", kMaxProcFileBytes);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(again->rfind("Name:", 0), 0u) << "not read from offset 0";
    after = Field(*again, "voluntary_ctxt_switches");
  }
  EXPECT_NE(after, before) << "kept fd returned stale contents";
  EXPECT_EQ(files.KeptCount(), 1u);
}

TEST(KeptFiles, DoesNotKeepFilesOutsideProcAndSysfs) {
  char dir_template[] = "/tmp/kept_files_test.XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::filesystem::path dir(dir_template);
  const auto path = dir / "meminfo";
  { std::ofstream(path) << "MemTotal: 1 kB\n"; }
  KeptFiles files;
  auto first = files.Read(path, kMaxProcFileBytes);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, "MemTotal: 1 kB\n");
  EXPECT_EQ(files.KeptCount(), 0u);
  // Replaced by rename (a new inode), as fixture tests do: the new contents are read.
  { std::ofstream(dir / "meminfo.new") << "MemTotal: 2 kB\n"; }
  std::filesystem::rename(dir / "meminfo.new", path);
  auto second = files.Read(path, kMaxProcFileBytes);
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, "MemTotal: 2 kB\n");
  std::filesystem::remove_all(dir);
  auto gone = files.Read(path, kMaxProcFileBytes);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ENOENT);
  EXPECT_NE(gone.error().message.find(path.string()), std::string::npos);
}

TEST(KeptFiles, ProcRootKeepingFilesOpenReadsThroughKeptFds) {
  const ProcRoot root = ProcRoot("/proc").KeepingFilesOpen();
  const ProcRoot copy = root;  // NOLINT(performance-unnecessary-copy-initialization)
  auto a = root.Read("self/stat");
  auto b = copy.Read("self/stat");
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_EQ(a->substr(0, a->find(' ')), std::to_string(::getpid()));
  EXPECT_EQ(b->substr(0, b->find(' ')), std::to_string(::getpid()));
  // A plain root keeps nothing and still reads.
  auto plain = ProcRoot("/proc").Read("self/stat");
  ASSERT_TRUE(plain);
}

}  // namespace
}  // namespace iodrift
