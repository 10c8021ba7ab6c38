#include "collectors/probes/memory_room.h"

#include <algorithm>
#include <cmath>

#include "collectors/probes/buffered.h"
#include "collectors/probes/cached.h"
#include "collectors/probes/memory.h"
#include "collectors/probes/readers.h"
#include "collectors/proc/meminfo.h"

namespace iodrift::probes {
namespace {

// What a reader thread keeps resident besides its buffer (kernel and touched user stack).
constexpr std::uint64_t kReaderThreadBytes = 64ull << 10;
// The largest request the random kind makes (an O_DIRECT alignment rarely exceeds 4 KiB).
constexpr std::uint64_t kRandomRequestBytes = 64ull << 10;

std::string Mib(std::uint64_t bytes) {
  return std::to_string(
             static_cast<std::uint64_t>(std::ceil(static_cast<double>(bytes) / (1 << 20)))) +
         " MiB";
}

}  // namespace

std::uint64_t RunMemoryBytes(const ProbeSpec& spec, std::string* why) {
  std::uint32_t readers = 1;
  for (std::uint32_t n : ReaderCounts(spec)) readers = std::max(readers, n);
  auto per_reader = [&](std::uint64_t buffer, const char* what) {
    if (why) *why = std::to_string(readers) + " readers × " + what + " and its thread";
    return readers * (buffer + kReaderThreadBytes);
  };
  switch (spec.kind) {
    case ProbeKind::kBuffered:
    case ProbeKind::kDirect:
      return per_reader(kSequentialChunkBytes, "1 MiB read buffer");
    case ProbeKind::kRandom:
      return per_reader(kRandomRequestBytes, "one request's buffer");
    case ProbeKind::kCached:
      if (why) *why = "its locked buffer and the cached region it keeps resident";
      return 2 * kCachedRegionBytes;
    case ProbeKind::kMemory:
      if (why) *why = "its two copy buffers";
      return 2 * StreamBufferBytes(spec.size);
    case ProbeKind::kMetadata:
      break;
  }
  if (why) *why = "no buffers of note";
  return 0;
}

MemoryRoom ReadMemoryRoom(const ProcRoot& proc_root, const std::filesystem::path& cgroup_root) {
  MemoryRoom room;
  room.cgroup = proc::ReadCgroupMemoryRoom(proc_root, cgroup_root);
  if (auto meminfo = proc::ReadMeminfo(proc_root))
    room.mem_available = meminfo->Get("MemAvailable");
  return room;
}

std::optional<std::string> RoomProblem(const ProbeSpec& spec, const MemoryRoom& room) {
  std::string how;
  const std::uint64_t need = RunMemoryBytes(spec, &how);
  if (need == 0) return std::nullopt;
  const std::string head =
      "probe " + spec.name + ": a run needs " + Mib(need) + " of memory (" + how + ")";
  if (room.cgroup) {
    const proc::CgroupMemoryRoom& c = *room.cgroup;
    const std::uint64_t allows = c.left + std::min(c.reclaimable, c.used);
    if (need > allows) {
      return head + " but the daemon's memory cgroup " + c.cgroup + " allows " + Mib(allows) +
             " more (" + c.file + " " + Mib(c.limit) + ", " + Mib(c.used) + " in use of which " +
             Mib(c.reclaimable) +
             " page cache); it would be OOM-killed: use fewer readers (or a smaller size) or "
             "raise the limit";
    }
  }
  if (room.mem_available && need > *room.mem_available) {
    return head + " but MemAvailable is " + Mib(*room.mem_available) +
           "; use fewer readers (or a smaller size)";
  }
  return std::nullopt;
}

}  // namespace iodrift::probes
