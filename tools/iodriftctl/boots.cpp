#include "tools/iodriftctl/boots.h"

#include <cstdio>

#include "collectors/common/text.h"

namespace iodrift::ctl {

const char* const kBootsHelp = R"(Usage: iodriftctl [--bus BUS] boots NAME [--json]

Compares the boots of probe NAME: does it drift after a long uptime, and does a reboot bring
it back? Prints one line per boot, this boot first, then up to 19 past boots newest first
(the daemon keeps 20 per probe in its baselines state file):
  boot       the boot id (first 8 characters) and the boot time (UTC)
  1h 1d 7d 30d
             the ratio (figure / that boot's own post-boot baseline; below 1 is slower)
             of the first run at or after that uptime and before twice it, taken once as
             reached; "-" until the boot reached it, or when no run fell in that window
             (the daemon was not running then)
  last       the latest ratio of the boot: for a past boot, the last one before shutdown
  worst at   the boot's worst ratio and the uptime it happened at
  verdict    the cause the verdict gave at that worst run (docs/reading-drift.md "Reading a
             slowdown"), "-" when none was known
Only runs that count for the worst ratio count here (a baseline exists, no cache left
undropped, no I/O pressure). Each boot is measured against its own baseline, so a line
compares how far a boot fell, not absolute speeds; docs/reading-drift.md "Boots compared"
says how to read it. Nothing is run: the answer comes from the daemon's record. A probe
removed from the config still shows its past boots.
  --json    {"name", "boots": [BOOT, ...]}, BOOT as in GET /api/v1/boots: boot_id,
            boot_time_seconds, current, kind, target, baseline, figure_unit, worst_ratio,
            uptime_at_worst, worst_verdict, ratio_1h, ratio_1d, ratio_7d, ratio_30d,
            last_ratio, last_uptime_seconds (null when not known)

Exit status: 0 ok, 2 unknown probe (neither configured nor recorded) or usage, 3 daemon
unreachable.
)";

int PrintBoots(const std::string& text, const std::string& json_text, bool json) {
  // The JSON too comes from the service as text: the daemon's (JsonWriter) holds no byte that
  // TerminalSafe changes, so only a broken or impostor service's output is altered.
  std::fputs(text::TerminalSafe(json ? json_text : text).c_str(), stdout);
  return 0;
}

}  // namespace iodrift::ctl
