// Memory room for a run: what one run of a probe allocates at its largest step, against what
// the daemon's memory cgroup still allows (proc/cgroup_memory.h, the reading the recovery
// experiment's warm step uses too) and the host's MemAvailable. A run that does not fit is
// refused as an error with the figures (the runner, before every run) and named by
// `iodriftd --check-config` — never started to be OOM-killed (a crash loop under
// Restart=on-failure).
//
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "collectors/common/proc_root.h"
#include "collectors/probes/probe_spec.h"
#include "collectors/proc/cgroup_memory.h"

namespace iodrift::probes {

// Bytes one run of `spec` keeps in memory at its largest step: the read buffers of its readers
// (buffered, direct: 1 MiB each; random: one request each) and their threads, the cached kind's
// locked buffer and cached region, the memory probe's two copy buffers. `why` (may be null)
// gets how that adds up ("64 readers × 1 MiB read buffer + ...").
std::uint64_t RunMemoryBytes(const ProbeSpec& spec, std::string* why = nullptr);

struct MemoryRoom {
  std::optional<proc::CgroupMemoryRoom> cgroup;  // nullopt: no memory limit applies
  std::optional<std::uint64_t> mem_available;    // /proc/meminfo MemAvailable
};
// Reads both now (`cgroup_root`: the cgroup mount, /sys/fs/cgroup).
MemoryRoom ReadMemoryRoom(const ProcRoot& proc_root, const std::filesystem::path& cgroup_root);

// nullopt when a run of `spec` fits in `room`, else why not: "probe NAME: a run needs 68 MiB (64
// readers × 1 MiB read buffer ...) but the daemon's memory cgroup /x allows 41 MiB more
// (memory.max 64 MiB, 23 MiB in use, of which 0 MiB page cache); ...". The cgroup's page cache
// counts as room (it is reclaimed first).
std::optional<std::string> RoomProblem(const ProbeSpec& spec, const MemoryRoom& room);

}  // namespace iodrift::probes
