// The daemon's use of glibc's allocator: settings at start and a trim after each probe run
// (docs/benchmarks.md "Memory" has what each buys, measured).
//
// Both act only when glibc's malloc is the process's allocator. Under ASan, TSan or a preloaded
// allocator (jemalloc, tcmalloc) `malloc` resolves elsewhere and glibc's heap is unused: calling
// malloc_trim() there walks arenas that another allocator's hooks never initialised (ASan: SEGV
// in mtrim), and mallopt() tunes nothing.
//
// Thread-safety: TuneAllocator() before any thread starts; TrimHeap() from any thread.
#pragma once

namespace iodrift::daemon {

// True when the global `malloc` symbol is glibc's own (checked once, cached).
bool GlibcMallocInUse();

// At most 2 arenas, mmap threshold 128 KiB, trim threshold 256 KiB; each left alone when its
// MALLOC_*_ environment variable is set, all of them when glibc's malloc is not in use.
void TuneAllocator();

// Hands freed heap pages back to the kernel (malloc_trim(0)); a no-op when glibc's malloc is
// not in use or MALLOC_TRIM_THRESHOLD_ is set (glibc's own trimming then applies, as the
// operator chose). Returns whether it trimmed.
bool TrimHeap();

}  // namespace iodrift::daemon
