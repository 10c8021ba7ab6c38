// `buffered` probe: sequential reads through the page cache after dropping only this target's
// cached pages — the `hdparm -t` analogue and the path that slows under memory pressure
// (docs/probes.md, "Kinds").
//
// Method:
//  1. Region [0, B): B = spec.size, or the calibrated budget (calibration.h), clipped to the
//     target's size (page multiple). A directory target reads its probe file.
//  2. Open fd H read-only and hold it for the whole run (a block device's cache would otherwise
//     also vanish at our last close, docs/probes.md "Kernel facts the probes rely on" — holding it
//     keeps the before/after residency checks about our own reads).
//  3. posix_fadvise(H, 0, B, DONTNEED) — no capability needed, works on devices and files; no
//     BLKFLSBUF, no drop_caches. Verify the residency of [0, B) (cachestat, else mincore on a
//     read-only MAP_SHARED mapping). Over 1 % still resident → drop once more → still over 1 %:
//     outcome skipped, suspect `cache_not_dropped`; `supported` = false when the drop had no
//     effect at all (tmpfs/ramfs/DAX ignore fadvise). Residency that cannot be read (neither
//     owner nor writer: the kernel hides it, e.g. the service user on a root-owned file or a
//     device) hands the proof to the readers' own I/O accounting (residency_witness.h): each
//     reader samples /proc/thread-self/io read_bytes around its loop, and the step's readers
//     must have fetched ≥ 99 % of the bytes they timed from storage, else outcome skipped,
//     suspect `cache_not_dropped` (extra storage_read_fraction). Only where that does not apply
//     either (network, FUSE, no task I/O accounting): suspect `residency_unverified`, measured.
//     result.residency_witness names the witness used.
//  4. Read on a fresh fd (fresh readahead state; POSIX_FADV_NORMAL, the device's read_ahead_kb):
//     pread() 1 MiB chunks from offset 0 until B bytes or time_budget, whichever comes first.
//     The whole loop is timed, and the first chunk alone (extra first_chunk_seconds).
//  5. Record the residency of what was read (extra resident_after_fraction: ~1 proves the
//     bytes went through the page cache), then fadvise(DONTNEED) [0, B) again: no footprint.
// throughput = bytes / read_seconds. extra: region_bytes, read_seconds, first_chunk_seconds,
// resident_before_fraction, resident_after_fraction, stopped_by_time_budget (0/1), calibrated,
// budget_bytes.
//
// Thread-safety: RunBufferedProbe is reentrant.
#pragma once

#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"

namespace iodrift::probes {

inline constexpr std::uint64_t kSequentialChunkBytes = 1ull << 20;
inline constexpr double kMaxResidentFraction = 0.01;

// Fills `result`'s figures, outcome and target_info (not context/CPU: see runner.h).
void RunBufferedProbe(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                      ProbeResult& result);

}  // namespace iodrift::probes
