// The memory-state collectors: one per /proc source, each read at scrape time from a ProcRoot.
//
// Metric names follow docs/metrics.md ("Memory state"). Each collector's one word is its
// config key under `collectors:` and its `collector` label. The implementations live one per
// file (`<name>_collector.cpp`); this header only declares the factories, so the daemon builds
// the set from one explicit list (MakeStateCollectors).
//
// Thread-safety: every collector returned here is safe for concurrent Collect() calls.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "collectors/common/collector.h"
#include "collectors/proc/collector_options.h"

namespace iodrift::proc {

std::unique_ptr<Collector> MakeMeminfoCollector();
std::unique_ptr<Collector> MakeVmstatCollector(const VmstatOptions& options);
std::unique_ptr<Collector> MakeSlabinfoCollector(const SlabinfoOptions& options);
std::unique_ptr<Collector> MakePressureCollector();
std::unique_ptr<Collector> MakeBuddyinfoCollector();
std::unique_ptr<Collector> MakeBootCollector();
std::unique_ptr<Collector> MakeDentriesCollector();
// Reads sysfs (not the proc root): /sys/bus/virtio/drivers/virtio_balloon, page_reporting.
std::unique_ptr<Collector> MakeBalloonCollector(const std::filesystem::path& sys_root = "/sys");

// The enabled collectors of `config`, in a fixed order. Throws std::regex_error only if the
// regexes were not validated (the config loader validates them).
std::vector<std::unique_ptr<Collector>> MakeStateCollectors(const CollectorsOptions& config);

}  // namespace iodrift::proc
