// The standard process_* self metrics of Prometheus client libraries, for iodriftd itself:
// process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds.
//
// Always reads the live /proc/self (never --proc-root: the fixture tree has no iodriftd in it).
// Thread-safety: stateless; safe for concurrent Collect().
#pragma once

#include <memory>

#include "collectors/common/collector.h"

namespace iodrift::self {

std::unique_ptr<Collector> MakeProcessCollector();

}  // namespace iodrift::self
