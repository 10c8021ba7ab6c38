// ProbeResult <-> the a{sv} dictionary of org.iodrift.Monitor1 (RunProbe's answer and the
// ProbeCompleted signal).
//
// ToDict writes the one description of a result (collectors/probes/result_fields.h): the keys
// are those of one probe of `iodriftd --once --json`, with the same names and units; a key whose
// JSON value would be null, and an empty map, is left out (a{sv} has no null). Scalars are s, b,
// d, t, x and as; maps of data keys are typed (ops_per_second, cpu_seconds, extra a{sd};
// context, dentry_state, pressure_delta_us a{st}; vmstat_delta a{sx}); records of fixed keys
// are a{sv} (latency_seconds {p50 d, p99 d, count t}, target_info {device, fstype, scheduler,
// read_ahead_kb, rotational, loop_dio s, logical_block_size t}).
// FromDict is the inverse, so iodriftctl prints exactly what `--once` prints; a test
// (ResultFields.EveryOutputCarriesEveryField) fails when a field is missing from either.
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
