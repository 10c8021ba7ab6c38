// Human and JSON renderings of probe results: the `iodriftd --once` table (hdparm-like figures),
// the `--once --json` document (shape fixed in docs/probes.md, "One run from the command line"),
// and the unit formatting both the table and iodriftctl use.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collectors/probes/probe.h"
#include "daemon/json_writer.h"

namespace iodrift::daemon {

// Writes one probe result as the JSON object of that document's `probes` array (more fields than
// the contract's minimum: outcome, supported, target_info, extra, vmstat_delta...).
void WriteProbeResultJson(JsonWriter& w, const probes::ProbeResult& result);

// The whole `--once --json` document.
std::string ProbeResultsJson(const std::optional<std::string>& boot_id,
                             const std::optional<double>& uptime_seconds,
                             const std::vector<probes::ProbeResult>& results);

// An aligned table, one probe per line, with a note line per error or suspect figure.
std::string ProbeResultsTable(const std::vector<probes::ProbeResult>& results);

// "9.02 GiB/s", "253.4 MiB/s", "812 KiB/s" (binary units, as hdparm's MB/sec is MiB/s).
std::string FormatRate(double bytes_per_second);
// "89 µs", "1.52 ms", "0.42 s".
std::string FormatSeconds(double seconds);
// "64.0 MiB", "512 B".
std::string FormatBytes(double bytes);

}  // namespace iodrift::daemon
