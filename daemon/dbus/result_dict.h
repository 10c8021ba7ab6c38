// ProbeResult <-> the a{sv} dictionary of org.iodrift.Monitor1 (RunProbe's answer and the
// ProbeCompleted signal).
//
// The keys are those of one probe of `iodriftd --once --json` (daemon/probe_report.h), with the
// same names and units; a key whose JSON value would be null is left out (a{sv} has no null):
//   name s, kind s, target s, success b, result s, supported b, error s, start_time_seconds d,
//   duration_seconds d, bytes t, throughput_bytes_per_second d?, ops_per_second a{sd}?,
//   latency_seconds a{sv}? {p50 d?, p99 d?, count t}, cpu_seconds a{sd} {user, system},
//   suspect as, context a{st}, vmstat_delta a{sx}, extra a{sd}, target_info a{ss}
//   {device, fstype, scheduler, read_ahead_kb, rotational}, uptime_seconds d?, mode s?.
// FromDict is the inverse, so iodriftctl prints exactly what `--once` prints.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>

#include <sdbus-c++/Types.h>

#include "collectors/probes/probe.h"

namespace iodrift::daemon::dbus {

using Dict = std::map<std::string, sdbus::Variant>;

Dict ToDict(const probes::ProbeResult& result);

// Rebuilds a result from a dictionary made by ToDict. Missing keys keep ProbeResult's defaults;
// keys of an unexpected type are ignored (a newer daemon may add some). Never throws.
probes::ProbeResult FromDict(const Dict& dict);

}  // namespace iodrift::daemon::dbus
