// `random` probe: 4 KiB reads at random aligned offsets, queue depth 1 — IOPS and latency, the
// fio randread/ioping analogue (docs/probes.md, "Kinds").
//
// Method (mode "direct", the default): open O_RDONLY|O_DIRECT; request size max(4096,
// stx_dio_offset_align); offsets uniform over the whole device or file (a directory's probe
// file), aligned to the request size, from a PRNG seeded per run. spec.requests + 1 requests
// back to back (no gaps: gaps add idle wake-up latency, docs/probes.md "Kinds"); the first is a
// warm-up and is discarded, as ioping does. Stops early after max(time_budget, 1 s).
//
// Mode "fadvise" (ioping's default), only where O_DIRECT is refused: POSIX_FADV_RANDOM on the fd,
// posix_fadvise(DONTNEED) before (and after) each pread — over the 2 MiB-aligned window around
// the request, because a 4 KiB drop inside a large folio (ext4 on 6.18) drops nothing — and a
// spot check of the first request (its residency, or where that is hidden this thread's
// /proc/thread-self/io read_bytes across it: residency_witness.h; result.residency_witness
// names which, "" in mode direct); where the drop does not work (tmpfs, ramfs: fadvise is a no-op)
// the run is skipped with supported = false and suspect `cache_not_dropped` — buffered random reads
// without the drop would only time cache hits.
//
// Default 1000 requests (4 MiB, ~0.1 s on an SSD or a loop device, cut at 1 s on a disk): p99
// is then the 10th-slowest read, not the slowest, and one outlier moves the mean IOPS by well
// under 10 % (64 requests gave p99 = max, 2.25x fio's, and IOPS 0.74x; docs/benchmarks.md
// "Accuracy"). Exports: latency histogram (count = requests measured) with exact p50/p99, each only
// when the count supports it (HonestPercentile: p50 from 10 requests, p99 from 100);
// ops_per_second["read"] = measured requests / Σ latency (ioping's service IOPS); extra:
// wall_iops (measured requests / wall time), latency_max_seconds, request_bytes. bytes = all
// bytes read, warm-up included. result.mode = "direct" | "fadvise".
//
// Thread-safety: RunRandomProbe is reentrant.
#pragma once

#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"

namespace iodrift::probes {

struct RandomOptions {
  bool force_fadvise_mode = false;  // tests: take the fadvise path even where O_DIRECT works
  double min_time_limit_seconds = 1.0;
};

// Fills `result`'s figures, outcome and target_info (not context/CPU: see runner.h).
void RunRandomProbe(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                    ProbeResult& result, const RandomOptions& options = {});

}  // namespace iodrift::probes
