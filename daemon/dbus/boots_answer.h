// The answer of the D-Bus method Boots(s name) -> (s text, s json): probe `name`'s record of its
// last boots (collectors/analysis/boot_record.h) as `iodriftctl boots NAME` prints it and as
// JSON {"name", "boots": [BOOT, …]} (daemon/boots_report.h, the BOOT objects of GET
// /api/v1/boots). Also the UnknownProbe error every method taking a probe name answers.
//
// Pure: no bus state. Thread-safety: pure functions.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <sdbus-c++/sdbus-c++.h>

#include "collectors/analysis/baseline_store.h"
#include "collectors/probes/probe_spec.h"

namespace iodrift::daemon::dbus {

// org.iodrift.Error.UnknownProbe for `name`, echoed quoted and cut at 64 bytes (a 1 MiB name must
// not come back).
sdbus::Error UnknownProbeError(const std::string& name);

// {text, json} for probe `name`: a name configured now or one the record holds (a probe removed
// from the config still shows its past boots). Throws UnknownProbeError for any other name.
std::pair<std::string, std::string> BootsAnswer(const std::vector<probes::ProbeSpec>& configured,
                                                const analysis::BaselineState& state,
                                                const std::string& name);

}  // namespace iodrift::daemon::dbus
