#include "collectors/proc/cgroup_memory.h"

#include <sstream>

#include "collectors/common/proc_root.h"

namespace iodrift::proc {
namespace {

// cgroup v1 reports "no limit" as the largest page-aligned signed 64-bit value.
constexpr std::uint64_t kV1NoLimit = 1ull << 62;

std::optional<std::string> ReadSmall(const std::filesystem::path& path) {
  auto text = ReadWholeFile(path, 65536);
  if (!text) return std::nullopt;
  return std::move(*text);
}

}  // namespace

std::optional<std::string> CgroupV2Path(const std::string& proc_cgroup) {
  std::istringstream in(proc_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0 && line.size() > 3 && line[3] == '/') return line.substr(3);
  }
  return std::nullopt;
}

std::optional<std::string> CgroupV1MemoryPath(const std::string& proc_cgroup) {
  std::istringstream in(proc_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    std::istringstream controllers(line.substr(first + 1, second - first - 1));
    std::string controller;
    while (std::getline(controllers, controller, ',')) {
      if (controller == "memory" && second + 1 < line.size() && line[second + 1] == '/') {
        return line.substr(second + 1);
      }
    }
  }
  return std::nullopt;
}

std::optional<std::uint64_t> ParseMemoryLimit(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t.empty() || t == "max" || t.find_first_not_of("0123456789") != std::string::npos ||
      t.size() > 19) {
    return std::nullopt;
  }
  return std::stoull(t);
}

std::optional<std::uint64_t> MemoryStatValue(const std::string& memory_stat,
                                             const std::string& key) {
  std::istringstream in(memory_stat);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
        line[key.size()] == ' ') {
      return ParseMemoryLimit(line.substr(key.size() + 1));
    }
  }
  return std::nullopt;
}

std::optional<CgroupMemoryRoom> ReadCgroupMemoryRoom(const ProcRoot& proc_root,
                                                     const std::filesystem::path& cgroup_root) {
  auto self = proc_root.Read("self/cgroup");
  if (!self) return std::nullopt;
  std::optional<CgroupMemoryRoom> room;
  if (auto path = CgroupV2Path(*self)) {
    std::filesystem::path rel = std::filesystem::path(*path).relative_path();
    for (;;) {
      const auto dir = cgroup_root / rel;
      if (auto current = ReadSmall(dir / "memory.current")) {
        const auto used = ParseMemoryLimit(*current).value_or(0);
        for (const char* file : {"memory.max", "memory.high"}) {
          auto text = ReadSmall(dir / file);
          auto limit = text ? ParseMemoryLimit(*text) : std::nullopt;
          if (!limit) continue;
          const std::uint64_t left = *limit > used ? *limit - used : 0;
          if (room && left >= room->left) continue;
          room = CgroupMemoryRoom{*limit, used, left, 0, file, "/" + rel.string()};
          if (auto stat = ReadSmall(dir / "memory.stat")) {
            room->reclaimable = MemoryStatValue(*stat, "file").value_or(0);
          }
        }
      }
      if (rel.empty() || rel == rel.parent_path()) break;
      rel = rel.parent_path();
    }
    // A hybrid host lists its (controller-less) unified hierarchy too: then v1 holds memory.
    if (room) return room;
  }
  if (auto path = CgroupV1MemoryPath(*self)) {
    const auto dir = cgroup_root / "memory" / std::filesystem::path(*path).relative_path();
    auto stat = ReadSmall(dir / "memory.stat");
    auto usage = ReadSmall(dir / "memory.usage_in_bytes");
    if (!stat || !usage) return std::nullopt;
    auto limit = MemoryStatValue(*stat, "hierarchical_memory_limit");
    if (!limit || *limit >= kV1NoLimit) return std::nullopt;
    const auto used = ParseMemoryLimit(*usage).value_or(0);
    return CgroupMemoryRoom{*limit,
                            used,
                            *limit > used ? *limit - used : 0,
                            MemoryStatValue(*stat, "total_cache").value_or(0),
                            "memory.limit_in_bytes",
                            *path};
  }
  return std::nullopt;
}

}  // namespace iodrift::proc
