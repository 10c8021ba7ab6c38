// The boot record (collectors/analysis/boot_record.h) as JSON and as text: GET /api/v1/boots,
// `iodriftctl boots NAME [--json]` (from the D-Bus method Boots) — one shape for both.
//
//   GET /api/v1/boots:
//   {"boot_id": "…"|null, "max_boots": 20, "marks": ["1h", "1d", "7d", "30d"],
//    "probes": [{"name": "…", "boots": [BOOT, …]}, …]}          (probes by name)
//   BOOT (newest first; the current boot, when the probe has an entry in it, first):
//   {"boot_id": "…", "boot_time_seconds": N, "current": true|false, "kind": "buffered",
//    "target": "…", "baseline": N|null, "figure_unit": "bytes/s"|"ops/s",
//    "worst_ratio": N|null, "uptime_at_worst": N|null, "worst_verdict": CAUSE|null,
//    "ratio_1h": N|null, "ratio_1d": N|null, "ratio_7d": N|null, "ratio_30d": N|null,
//    "last_ratio": N|null, "last_uptime_seconds": N|null}
//
// Pure rendering. Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collectors/analysis/boot_record.h"
#include "daemon/json_writer.h"

namespace iodrift::daemon {

// One BOOT object.
void WriteBootJson(JsonWriter& w, const analysis::BootRow& row);

// `iodriftctl boots NAME --json`: {"name": "…", "boots": [BOOT, …]}.
std::string ProbeBootsJson(const std::string& name, const std::vector<analysis::BootRow>& rows);

// GET /api/v1/boots.
std::string BootsApiJson(const std::optional<std::string>& boot_id,
                         const analysis::BaselineState& state);

// `iodriftctl boots NAME`: a heading and one line per boot, newest first (ratios to the boot's
// own baseline; "-" for a point not reached or not known).
std::string BootsText(const std::string& name, const std::vector<analysis::BootRow>& rows);

}  // namespace iodrift::daemon
