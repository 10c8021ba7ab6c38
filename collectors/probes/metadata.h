// `metadata` probe: small-file create/stat/delete rate in iodrift's own directory, the
// `bonnie++ -n` analogue at about 1/256 of its size (docs/probes.md, "Kinds").
//
// Method: the target must be a directory; the probe works only in <dir>/iodrift-meta (made once,
// mode 0700), and only through its directory fd (OpenMetaDir: O_NOFOLLOW|O_DIRECTORY, owned by
// iodriftd's euid, writable by it alone; a target directory others may write is refused unless
// sticky), so a path swapped for a symlink mid-run cannot redirect a create or delete. Names are
// fixed, f000 … f<N-1> (N = spec.files), so every cycle reuses the negative dentries the previous
// one left and the dcache does not grow. Leftovers with those names (a crash mid-run) are removed
// first (extra leftovers_removed). Phases, each operation timed on CLOCK_MONOTONIC:
//   create  openat(O_CREAT|O_EXCL|O_WRONLY, 0600) + close — empty files, like bonnie++ -n;
//   stat    fstatat(AT_SYMLINK_NOFOLLOW) in shuffled order;
//   delete  unlinkat in shuffled order.
// Any failure (ENOSPC, EROFS, EACCES, EDQUOT, …) ends the run as an error naming the call and
// file; every file this run created is removed first, so nothing is left behind.
// Exports: ops_per_second create/stat/delete = N / Σ that phase's latencies; one latency
// histogram over all 3·N operations; extra create/stat/delete_wall_ops_per_second (N / phase wall
// time, first call to last return: bonnie++'s definition), create/stat/delete_p50_seconds (only
// from 10 files: HonestPercentile), files. bytes = 0.
//
// Thread-safety: reentrant, but two runs on the same directory at once would collide on the
// fixed names (the scheduler never does that: one probe per device at a time).
#pragma once

#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"

namespace iodrift::probes {

// Fills `result`'s figures, outcome and target_info (not context/CPU: see runner.h).
void RunMetadataProbe(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                      ProbeResult& result);

}  // namespace iodrift::probes
