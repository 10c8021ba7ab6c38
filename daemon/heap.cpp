#include "daemon/heap.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cstdlib>

namespace iodrift::daemon {
namespace {

bool DetectGlibcMalloc() {
  // The malloc every call in this process reaches (the first definition in lookup order: an
  // interposer such as libasan, libtsan or a preloaded allocator wins) against libc's own.
  void* global = dlsym(RTLD_DEFAULT, "malloc");
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (libc == nullptr) return false;
  void* own = dlsym(libc, "malloc");
  dlclose(libc);
  return global != nullptr && global == own;
}

}  // namespace

bool GlibcMallocInUse() {
  static const bool in_use = DetectGlibcMalloc();
  return in_use;
}

// A small long-running daemon (~10 mostly idle threads):
//  - one arena: by default every thread that allocates may get an arena of its own (up to
//    8 × cores), each keeping its freed memory; a second arena held ~1 MiB of the HTTP and
//    collector threads' memory apart from the main heap (0.3 MiB more resident than one arena
//    holding both; docs/benchmarks.md). The threads' tcaches keep lock traffic low;
//  - a fixed mmap threshold of 128 KiB and a trim threshold of 256 KiB: glibc otherwise raises
//    both after the first large free (up to 32/64 MiB), and buffers of that size then stay in
//    the heap as resident memory after they are freed.
bool TuneAllocator() {
  if (!GlibcMallocInUse()) return false;
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 1);
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, 256 * 1024);
  return true;
}

}  // namespace iodrift::daemon
