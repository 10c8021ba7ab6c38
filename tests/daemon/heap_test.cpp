// daemon/heap.h: glibc's allocator is tuned only when glibc's malloc is the allocator in use.
#include "daemon/heap.h"

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

TEST(Heap, TunesOnlyGlibcsOwnAllocator) {
  // Under ASan/TSan malloc is the sanitizer's: calling into glibc's heap there crashed
  // (malloc_trim: SEGV in mtrim). The detection must see which allocator is in use.
  EXPECT_EQ(GlibcMallocInUse(), !kSanitizerAllocator);
  EXPECT_EQ(TuneAllocator(), !kSanitizerAllocator);
}

}  // namespace
}  // namespace iodrift::daemon
