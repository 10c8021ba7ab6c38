// `cached` probe: page-cache read speed, the `hdparm -T` analogue (docs/probes.md, "Kinds").
//
// Method: open the target read-only (a directory's probe file) and keep the fd open for the
// whole run (for a device that stops the kernel dropping its cache at last close); region =
// the first 2 MiB (less for a smaller file); buffer 2 MiB, posix_memalign(4096), faulted in,
// mlock()ed when RLIMIT_MEMLOCK allows. Warm up with two pread()s of the region, check residency,
// then time 5 windows of max(10 ms, time_budget/5) each, each window repeating
// pread(fd, buf, region, 0). throughput = median window rate; extra: throughput_max/min,
// throughput_mean (bytes / time over all windows: hdparm -T's own definition, which a
// preempted window pulls down; the median resists that),
// region_bytes, resident_fraction (before measuring), windows. A region found evicted after the
// windows adds suspect `cache_evicted`. bytes = everything pread() returned (warm-up included).
// Where residency cannot be read (the service user on a root-owned file or a device), the
// witness is this thread's /proc/thread-self/io read_bytes over the windows
// (residency_witness.h): more than 1 % of the windows' bytes fetched from storage adds
// `cache_evicted`; extra storage_read_fraction. No witness at all: suspect residency_unverified.
//
// Thread-safety: RunCachedProbe is reentrant.
#pragma once

#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"

namespace iodrift::probes {

inline constexpr std::uint64_t kCachedRegionBytes = 2ull << 20;
inline constexpr int kCachedWindows = 5;

// Fills `result`'s figures, outcome and target_info (not context/CPU: see runner.h).
void RunCachedProbe(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                    ProbeResult& result);

}  // namespace iodrift::probes
