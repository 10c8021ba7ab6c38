// RunProbe: one run of one probe — the entry point the scheduler, `iodriftd --once` and the
// D-Bus `RunProbe` method share, so every caller gets the same figures.
//
// Order: set the thread's I/O priority (best-effort 7 by default) and nice, snapshot the memory
// context and CPU time (context.h), run the kind, take the deltas and suspects, restore the
// priority. The kind honours spec.size / time_budget and polls env.cancel and spec.timeout
// between system calls; a call blocked in the kernel cannot be interrupted here — callers that
// must not hang run RunProbe on its own thread (daemon/scheduler.h does).
//
// Thread-safety: reentrant; run at most one probe per device at a time (the metadata probe's
// fixed names and the buffered probe's residency checks assume it).
#pragma once

#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"

namespace iodrift::probes {

// Runs `spec` once on the calling thread. Never throws; every failure is in the result
// (outcome error/timeout/skipped with a one-line `error`). Fills name, kind, target, start time,
// duration (the whole run, including opening the target and making a probe file the first time),
// context, CPU seconds and, for buffered/direct, extra system_cpu_seconds_per_gib.
ProbeResult RunProbe(const ProbeSpec& spec, const ProbeEnv& env);

}  // namespace iodrift::probes
