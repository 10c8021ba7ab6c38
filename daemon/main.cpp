// iodriftd: the iodrift daemon. All logic lives in iodrift_core; see daemon/app.h.
#include <malloc.h>

#include <cstdlib>

#include "daemon/app.h"

namespace {

// glibc malloc settings for a small long-running daemon, before any thread starts
// (docs/benchmarks.md "Memory"). Each setting is left alone when its MALLOC_*_ environment variable
// is set.
//  - at most 2 arenas: by default every thread that allocates may get an arena of its own (up to
//    8 × cores), each keeping its freed memory; the daemon has ~10 mostly idle threads.
//  - a fixed mmap threshold of 128 KiB and a trim threshold of 256 KiB: glibc otherwise raises
//    both after the first large free (up to 32/64 MiB), and buffers of that size then stay in
//    the heap as resident memory after they are freed.
void TuneAllocator() {
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, 256 * 1024);
}

}  // namespace

int main(int argc, char** argv) {
  TuneAllocator();
  return iodrift::daemon::Main(argc, argv);
}
