// The memory room of the calling process's cgroup: how much more its memory cgroup lets it use
// before the limit (cgroup v2 memory.max / memory.high of its cgroup and every ancestor, the
// tightest; cgroup v1 the memory controller's hierarchical_memory_limit). Used by the recovery
// experiment's warm step and by every probe run and --check-config (probes/memory_room.h).
//
// Thread-safety: pure functions and reads through a ProcRoot and a cgroup mount path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "collectors/common/proc_root.h"

namespace iodrift::proc {

// The cgroup v2 path of a process from its /proc/PID/cgroup text (the "0::PATH" line); nullopt
// on cgroup v1 only or unreadable text.
std::optional<std::string> CgroupV2Path(const std::string& proc_cgroup);
// The cgroup v1 memory controller's path ("N:memory:PATH" or a line whose controllers include
// memory); nullopt when there is none.
std::optional<std::string> CgroupV1MemoryPath(const std::string& proc_cgroup);
// memory.max / memory.high contents: bytes, or nullopt for "max" (no limit) and bad text.
std::optional<std::uint64_t> ParseMemoryLimit(const std::string& text);
// A "KEY VALUE" line of memory.stat (v2 "file", v1 "total_cache", "hierarchical_memory_limit").
std::optional<std::uint64_t> MemoryStatValue(const std::string& memory_stat,
                                             const std::string& key);

struct CgroupMemoryRoom {
  std::uint64_t limit = 0;        // the tightest limit's bytes
  std::uint64_t used = 0;         // memory.current (v1 memory.usage_in_bytes) where it applies
  std::uint64_t left = 0;         // limit − used (0 when over)
  std::uint64_t reclaimable = 0;  // page cache charged there (memory.stat file / total_cache)
  std::string file;               // "memory.max", "memory.high" or "memory.limit_in_bytes"
  std::string cgroup;             // its cgroup path
};
// The tightest memory limit of the calling process's cgroup (read through `proc_root`'s
// self/cgroup and the cgroup mount at `cgroup_root`: v2 files there, v1 under
// `cgroup_root`/memory); nullopt when no limit applies or it cannot be read.
std::optional<CgroupMemoryRoom> ReadCgroupMemoryRoom(const ProcRoot& proc_root,
                                                     const std::filesystem::path& cgroup_root);

}  // namespace iodrift::proc
