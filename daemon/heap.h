// The daemon's use of glibc's allocator: settings at start (docs/benchmarks.md "Memory" has what
// they buy, measured).
//
// They apply only when glibc's malloc is the process's allocator. Under ASan, TSan or a preloaded
// allocator (jemalloc, tcmalloc) `malloc` resolves elsewhere and glibc's heap is unused: calling
// into it there is wrong (the malloc_trim() that an earlier version made after every probe run
// walked arenas ASan never initialised: SEGV in mtrim). That trim is gone: measured side by side
// it bought 0.03 MiB of anonymous memory (docs/benchmarks.md "Memory"), since with the
// thresholds below glibc already returns large buffers (mmap) and trims the heap's top itself.
//
// Thread-safety: TuneAllocator() before any thread starts.
#pragma once

namespace iodrift::daemon {

// True when the global `malloc` symbol is glibc's own (checked once, cached).
bool GlibcMallocInUse();

// One arena, mmap threshold 128 KiB, trim threshold 256 KiB; each left alone when its
// MALLOC_*_ environment variable is set, all of them when glibc's malloc is not in use.
// Returns whether glibc's malloc was tuned.
bool TuneAllocator();

}  // namespace iodrift::daemon
