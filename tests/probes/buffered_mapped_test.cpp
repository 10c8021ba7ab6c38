// The buffered probe's message when posix_fadvise(DONTNEED) drops none of the cached pages
// because they are mapped by another process (or dirty, or locked): it says so, instead of
// claiming that the filesystem ignores fadvise.
#include <sys/mman.h>

#include <gtest/gtest.h>

#include "collectors/probes/buffered.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/runner.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

TEST(BufferedProbe, MappedPagesThatStayCachedAreNamedAsSuch) {
  testing::TempDir dir;
  const std::string file = (dir.path() / "f").string();
  constexpr std::size_t kSize = 4 << 20;
  ASSERT_TRUE(testing::WriteRandomFile(file, kSize));
  auto fd = OpenReadOnly(file);
  ASSERT_TRUE(fd);
  // Another user's mapping of the whole file, every page faulted in: fadvise cannot drop them.
  void* map = mmap(nullptr, kSize, PROT_READ, MAP_SHARED, fd->get(), 0);
  ASSERT_NE(map, MAP_FAILED);
  volatile unsigned sum = 0;
  for (std::size_t off = 0; off < kSize; off += 4096) {
    sum = sum + static_cast<unsigned char*>(map)[off];
  }
  auto spec = testing::MakeSpec("b", probes::ProbeKind::kBuffered, file, kSize);
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(dir.path()));
  munmap(map, kSize);
  if (IsMemoryBackedFs(r.target_info.fstype)) GTEST_SKIP() << "/tmp is " << r.target_info.fstype;
  ASSERT_EQ(r.outcome, Outcome::kSkipped) << r.error;
  EXPECT_NE(r.error.find("dropped none of them"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("mapped"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find("(" + r.target_info.fstype + " ignores fadvise)"), std::string::npos)
      << r.error;
}

}  // namespace
}  // namespace iodrift::probes
