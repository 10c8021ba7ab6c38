// daemon/heap.h: glibc's heap is trimmed only when glibc's malloc is the allocator in use.
#include "daemon/heap.h"

#include <cstdlib>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace iodrift::daemon {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerAllocator = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerAllocator = true;
#else
constexpr bool kSanitizerAllocator = false;
#endif
#else
constexpr bool kSanitizerAllocator = false;
#endif

TEST(Heap, TrimsOnlyGlibcsOwnHeap) {
  // Under ASan/TSan malloc is the sanitizer's: malloc_trim() there crashed (SEGV in mtrim).
  EXPECT_EQ(GlibcMallocInUse(), !kSanitizerAllocator);
  EXPECT_EQ(TrimHeap(), !kSanitizerAllocator && std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr);
}

TEST(Heap, TrimFromThreadsAfterLargeFrees) {
  // What the scheduler's lane workers do after every probe run.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 8; ++i) {
        std::vector<char> buffer(std::size_t{4} << 20, 'x');
        EXPECT_EQ(buffer.back(), 'x');
        buffer = {};
        TrimHeap();
      }
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace iodrift::daemon
