#include "daemon/dbus/boots_answer.h"

#include <algorithm>

#include "collectors/analysis/boot_record.h"
#include "daemon/boots_report.h"
#include "daemon/dbus/names.h"

namespace iodrift::daemon::dbus {

sdbus::Error UnknownProbeError(const std::string& name) {
  constexpr std::size_t kMax = 64;
  const std::string quoted =
      "'" + (name.size() <= kMax ? name : name.substr(0, kMax) + "...") + "'";
  return sdbus::Error(kErrorUnknownProbe,
                      "no probe named " + quoted + "; ListProbes shows the names");
}

std::pair<std::string, std::string> BootsAnswer(const std::vector<probes::ProbeSpec>& configured,
                                                const analysis::BaselineState& state,
                                                const std::string& name) {
  const bool is_configured = std::any_of(configured.begin(), configured.end(),
                                         [&](const auto& spec) { return spec.name == name; });
  const auto rows = analysis::BootsOf(state, name);
  if (!is_configured && rows.empty()) throw UnknownProbeError(name);
  return {BootsText(name, rows), ProbeBootsJson(name, rows)};
}

}  // namespace iodrift::daemon::dbus
