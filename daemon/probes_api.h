// GET /api/v1/probes: the last result of every probe that ran, as JSON — the same fields as one
// element of `iodriftd --once --json`'s `probes` array (probe_report.h WriteProbeResultJson, not
// repeated here) — plus its baseline, ratio and recent history (collectors/analysis/history.h):
//
//   {"boot_id": "…" | null, "uptime_seconds": N | null, "history_runs": 240,
//    "probes": [{<--once --json fields>,
//                "figure": N|null, "figure_unit": "bytes/s"|"ops/s", "baseline": N|null,
//                "ratio": N|null, "worst_ratio": N|null, "uptime_at_worst": N|null,
//                "baseline_runs_needed": N, "baseline_runs_counted": N,
//                "verdict": "device"|"device_busy"|"memory_reclaim"|"memory_compaction"|
//                           "page_allocation"|"hypervisor_reclaim"|"cpu_contention"|
//                           "remote_filesystem"|"undetermined" (verdict.h AllCauses),
//                "verdict_text": "Verdict: …" (collectors/analysis/verdict.h),
//                "explain": "<the iodriftctl explain text>",
//                "runs": {"ok": N, "error": N, "timeout": N, "skipped": N},
//                "history": [{"time_seconds": N, "boot_id": "…"|null, "uptime_seconds": N|null,
//                             "result": "ok", "figure": N|null, "baseline": N|null,
//                             "ratio": N|null, "drift_window": true|false,
//                             "features": {"mem_free_bytes": N|null, …}}]}]}
//
// `drift_window`: the run went into the drift window behind the correlations (a valid figure,
// not suspect of a cache that was not dropped or of I/O pressure).
//
// `history` is oldest first and holds every point of the ring (status.history_runs per probe), or
// only the newest `last_points` of them when that is set (GET /api/v1/probes?runs=N).
//
// Pure rendering. Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collectors/analysis/probe_states.h"
#include "collectors/common/error.h"

namespace iodrift::daemon {

std::string ProbesApiJson(const std::optional<std::string>& boot_id,
                          const std::optional<double>& uptime_seconds, std::size_t history_runs,
                          const analysis::ProbeSnapshot& states,
                          std::optional<std::size_t> last_points = std::nullopt);

// The `runs` query argument of GET /api/v1/probes: a whole number 0 … 1000000, else an error
// (EINVAL) whose message names `runs` and what was given.
Expected<std::size_t> ParseRunsArgument(const std::string& text);

}  // namespace iodrift::daemon
