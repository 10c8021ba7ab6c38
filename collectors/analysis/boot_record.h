// The boot record: per probe, how each of its last kMaxBootRecords boots drifted — the ratio
// (figure / baseline, baseline_store.h) at fixed uptimes, the last ratio before shutdown and the
// verdict at the worst run — so that boots can be compared ("falls after a long uptime, comes
// back after a reboot"). Pure rules; the fields are stored on the `probe` and `pastprobe` lines
// of the baselines state file (baseline_store.h) and read by the status page, GET
// /api/v1/boots, `iodriftctl boots` and the D-Bus method Boots.
//
// Rules (NoteBootRun, on every run whose ratio counts for the worst ratio: a baseline exists and
// the run is not suspect of a cache that was not dropped or of I/O pressure):
//   - mark i (kBootMarks: 1 h, 1 d, 7 d, 30 d of uptime) takes the ratio of the first such run
//     whose uptime is at or after it and before twice it (kBootMarkWindow), once ("as
//     reached"): absent until reached, never overwritten. A mark whose window passed without a
//     counted run (the daemon was not running then, or started later in the boot) stays absent:
//     a ratio taken at 25 h is not the ratio at 1 h, and the chart draws a mark at its uptime;
//   - `last` is the ratio (and uptime) of the latest such run: on a past boot, the last ratio
//     before shutdown;
//   - the worst ratio and its uptime stay in ProbeBaseline / PastProbe; `worst_verdict` is the
//     cause name (verdict.h CauseName) the verdict gave at that worst run, "" when unknown.
// A new boot (ForBoot) moves the record with the probe's baseline into the past; of the past
// boots holding a probe only the newest kMaxBootRecords - 1 keep its record fields (older ones
// keep the baseline and worst ratio only, as before), so with the current boot a probe shows
// at most kMaxBootRecords boots.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "collectors/analysis/baseline_store.h"

namespace iodrift::analysis {

inline constexpr std::size_t kMaxBootRecords = 20;
inline constexpr std::array<double, 4> kBootMarks = {3600, 86400, 7 * 86400, 30 * 86400};
inline constexpr std::array<const char*, 4> kBootMarkNames = {"1h", "1d", "7d", "30d"};
// A mark is taken only by a run before this many times its uptime.
inline constexpr double kBootMarkWindow = 2;

// Applies one counted run (ratio at `uptime_seconds`; uptime unknown: only `last` moves).
// Returns whether anything changed.
bool NoteBootRun(BootRecord& record, double ratio, const std::optional<double>& uptime_seconds);

// Clears the record fields of `state`'s past entries of each probe beyond the newest
// kMaxBootRecords - 1 past boots holding that probe. Returns how many entries it cleared.
std::size_t TrimBootRecords(BaselineState& state);

// One boot of one probe, newest first in BootsOf.
struct BootRow {
  std::string boot_id;
  std::uint64_t boot_time_seconds = 0;
  bool current = false;
  BaselineKey key;
  std::optional<double> baseline;
  std::optional<double> worst_ratio;
  std::optional<double> uptime_at_worst;
  BootRecord record;
};

// The boots of probe `name`: the current boot (when the probe has an entry) then the newest
// kMaxBootRecords - 1 past boots holding it, newest first.
std::vector<BootRow> BootsOf(const BaselineState& state, const std::string& name);
// Every probe name in `state` (current and past boots), sorted.
std::vector<std::string> BootProbeNames(const BaselineState& state);

}  // namespace iodrift::analysis
