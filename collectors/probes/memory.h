// `memory` probe: memcpy bandwidth and first-touch page allocation speed, no I/O — the ceiling
// for `cached` and the allocation cost behind `buffered` (PROBES.md §4.6).
//
// Method:
//   hot     two 2 MiB buffers (the `cached` working set), mmapped and faulted in; two warm-up
//           copies, then 5 windows of max(10 ms, time_budget/5), each repeating a 2 MiB memcpy;
//           extra hot_copy_bytes_per_second (median) and hot_copy_max_bytes_per_second.
//   stream  two anonymous mappings of S bytes each, S = spec.size, else clamp(2 × LLC size from
//           /sys/devices/system/cpu/cpu0/cache/index3/size, 64 MiB, 512 MiB); shrunk to
//           MemAvailable/4 (at least 16 MiB) when memory is short, adding suspect
//           low_free_memory. First touch (one write per 4 KiB page of both buffers, the kernel
//           allocates and zeroes each page) is timed alone: extra page_alloc_bytes_per_second
//           (2·S / time) and fault_in_seconds; THP outcomes are in vmstat_delta
//           (thp_fault_alloc/thp_fault_fallback). Then one warm-up pass and one timed pass
//           copying S in 2 MiB chunks: throughput = extra stream_copy_bytes_per_second.
//   All buffers are mmapped at probe time and munmapped before returning (the daemon's RSS
//   stays low between runs). bytes = 0 (nothing is read from a device); extra
//   stream_buffer_bytes = S.
//
// Thread-safety: RunMemoryProbe is reentrant.
#pragma once

#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"

namespace iodrift::probes {

// clamp(2 × LLC, 64 MiB, 512 MiB); 64 MiB when the LLC size is unknown.
std::uint64_t DefaultStreamBytes(const std::filesystem::path& sys_root);

// Fills `result`'s figures and outcome (not context/CPU: see runner.h).
void RunMemoryProbe(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                    ProbeResult& result);

}  // namespace iodrift::probes
