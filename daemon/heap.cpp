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
//  - at most 2 arenas: by default every thread that allocates may get an arena of its own (up to
//    8 × cores), each keeping its freed memory;
//  - a fixed mmap threshold of 128 KiB and a trim threshold of 256 KiB: glibc otherwise raises
//    both after the first large free (up to 32/64 MiB), and buffers of that size then stay in
//    the heap as resident memory after they are freed.
void TuneAllocator() {
  if (!GlibcMallocInUse()) return;
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, 256 * 1024);
}

bool TrimHeap() {
  // MALLOC_TRIM_THRESHOLD_ set: the operator chose glibc's own trimming; leave it to glibc.
  static const bool operator_trims = std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr;
  if (!GlibcMallocInUse() || operator_trims) return false;
  malloc_trim(0);
  return true;
}

}  // namespace iodrift::daemon
