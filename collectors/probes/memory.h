// `memory` probe: memcpy bandwidth and first-touch page allocation speed, no I/O — the ceiling
// for `cached` and the allocation cost behind `buffered` (docs/probes.md, "Kinds").
//
// Method:
//   hot     two 2 MiB buffers (the `cached` working set), mmapped and faulted in; two warm-up
//           copies, then 5 windows of max(10 ms, time_budget/5), each repeating a 2 MiB memcpy;
//           extra hot_copy_bytes_per_second (median) and hot_copy_max_bytes_per_second.
//   stream  two anonymous mappings of S bytes each, S = spec.size capped at 7 MiB, default
//           7 MiB (a 14 MiB working set: the run's peak RSS stays within +16 MiB on any
//           machine; the hot buffers are unmapped first); shrunk to MemAvailable/4 (at least
//           1 MiB) when memory is short, adding suspect low_free_memory. extra llc_bytes is the
//           last-level cache when sysfs tells it; extra stream_within_llc is 1 when
//           it is larger than S (part of the copy is then served from cache: the figure reads
//           high). First touch (one write per 4 KiB page of both buffers, the kernel
//           allocates and zeroes each page) is timed alone: extra page_alloc_bytes_per_second
//           (2·S / time) and fault_in_seconds; THP outcomes are in vmstat_delta
//           (thp_fault_alloc/thp_fault_fallback). Then one warm-up pass and 9 timed passes,
//           each one memcpy of S: throughput = extra stream_copy_bytes_per_second (median pass).
//   All buffers are mmapped at probe time and munmapped before returning (the daemon's RSS
//   stays low between runs). bytes = 0 (nothing is read from a device); extra
//   stream_buffer_bytes = S.
//
// Thread-safety: RunMemoryProbe is reentrant.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"

namespace iodrift::probes {

// One stream buffer's size: 7 MiB (two of them: 14 MiB, so a run raises the daemon's peak RSS
// by at most 16 MiB on any machine, page tables included). `requested` (spec.size; 0 = default)
// is rounded up to 1 MiB and capped at 7 MiB.
inline constexpr std::uint64_t kMaxStreamBufferBytes = 7ull << 20;
std::uint64_t StreamBufferBytes(std::uint64_t requested);

// The size of cpu0's last-level data cache (the highest `level` under
// <sys_root>/devices/system/cpu/cpu0/cache/index*/ that is not an instruction cache);
// nullopt when sysfs does not say (VMs often hide it).
std::optional<std::uint64_t> LastLevelCacheBytes(const std::filesystem::path& sys_root);

// Fills `result`'s figures and outcome (not context/CPU: see runner.h).
void RunMemoryProbe(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                    ProbeResult& result);

}  // namespace iodrift::probes
