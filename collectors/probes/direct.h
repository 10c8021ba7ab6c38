// `direct` probe: O_DIRECT sequential reads — the device alone, no page cache (docs/probes.md,
// "Kinds").
//
// Method: region [0, B) as for `buffered` (same default offset; own calibrated budget), rounded
// down to the O_DIRECT offset alignment. Open O_RDONLY|O_DIRECT. Alignment from
// statx(STATX_DIOALIGN) (offset = stx_dio_offset_align, buffer = max(4096, stx_dio_mem_align)),
// else BLKSSZGET for a device, else the disk's queue/logical_block_size, else 4096. pread() 1 MiB
// chunks (a multiple of every alignment up to 1 MiB) into one posix_memalign buffer until B bytes
// or time_budget. throughput = bytes / read_seconds.
//
// Never a silent buffered read: `open` refusing O_DIRECT (EINVAL: ramfs, procfs, some FUSE),
// statx reporting offset alignment 0, or a pread EINVAL that persists after one retry at 4096
// alignment give outcome skipped with supported = false. tmpfs accepts O_DIRECT since 6.6 but
// then measures memory: the run is kept, fstype says tmpfs and suspect `memory_backed_fs` is
// set. A loop device with dio=0 reads its backing file's page cache: see target_info.loop_dio.
// extra: region_bytes, read_seconds, first_chunk_seconds, offset_align, mem_align,
// stopped_by_time_budget, calibrated, budget_bytes.
//
// Thread-safety: RunDirectProbe is reentrant.
#pragma once

#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"

namespace iodrift::probes {

// Fills `result`'s figures, outcome and target_info (not context/CPU: see runner.h).
void RunDirectProbe(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                    ProbeResult& result);

}  // namespace iodrift::probes
