#include "collectors/probes/members.h"

#include <algorithm>
#include <set>
#include <system_error>

#include "collectors/probes/io_util.h"

namespace iodrift::probes {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxDepth = 16;

std::vector<std::string> DirEntries(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void CollectMembers(const std::string& name, const fs::path& sys_root, int depth,
                    std::set<std::string>& seen, std::set<std::string>& out) {
  if (depth > kMaxDepth || !seen.insert(name).second) return;
  const std::string disk = DiskOfBlockName(name, sys_root);
  auto slaves = DirEntries(sys_root / "block" / disk / "slaves");
  if (disk != name) {
    // A partition of a stacked device (md0p1) has its own slaves dir only on the disk.
    auto own = DirEntries(sys_root / "class/block" / name / "slaves");
    slaves.insert(slaves.end(), own.begin(), own.end());
  }
  if (slaves.empty()) {
    if (depth > 0) out.insert(disk);
    return;
  }
  for (const auto& slave : slaves) CollectMembers(slave, sys_root, depth + 1, seen, out);
}

double Figure(const ProbeResult& r) {
  if (r.throughput_bytes_per_second) return *r.throughput_bytes_per_second;
  if (auto it = r.ops_per_second.find("read"); it != r.ops_per_second.end()) return it->second;
  return 0;
}

}  // namespace

std::string DiskOfBlockName(const std::string& name, const fs::path& sys_root) {
  std::error_code ec;
  const fs::path cls = sys_root / "class/block" / name;
  if (fs::exists(cls / "partition", ec)) {
    const fs::path real = fs::canonical(cls, ec);
    if (!ec) return real.parent_path().filename().string();
  }
  if (fs::exists(sys_root / "block" / name, ec)) return name;
  for (const auto& disk : DirEntries(sys_root / "block")) {
    if (fs::exists(sys_root / "block" / disk / name / "partition", ec)) return disk;
  }
  return name;
}

std::vector<std::string> ArrayMembers(const std::string& name, const fs::path& sys_root) {
  if (name.empty()) return {};
  std::set<std::string> seen, out;
  CollectMembers(name, sys_root, 0, seen, out);
  return {out.begin(), out.end()};
}

std::vector<std::string> BtrfsMembers(const std::string& name, const fs::path& sys_root) {
  if (name.empty()) return {};
  const fs::path root = sys_root / "fs/btrfs";
  for (const auto& fsid : DirEntries(root)) {
    const auto devices = DirEntries(root / fsid / "devices");
    if (std::find(devices.begin(), devices.end(), name) == devices.end()) continue;
    std::set<std::string> out;
    for (const auto& dev : devices) {
      auto below = ArrayMembers(dev, sys_root);
      if (below.empty()) {
        out.insert(DiskOfBlockName(dev, sys_root));
      } else {
        out.insert(below.begin(), below.end());
      }
    }
    return {out.begin(), out.end()};
  }
  return {};
}

std::string JoinDevices(const std::vector<std::string>& devices) {
  std::string s;
  for (const auto& d : devices) {
    if (!s.empty()) s += ',';
    s += d;
  }
  return s;
}

void ProbeMembers(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                  const RunKindFn& run_kind, ProbeResult& result) {
  const double array_figure = Figure(result);
  for (const auto& member : result.target_info.members) {
    if (control.Cancelled() || control.PastDeadline(MonotonicSeconds())) {
      result.member_errors[member] = "not probed: the run's timeout passed";
      continue;
    }
    ProbeSpec member_spec = spec;
    member_spec.members = false;
    member_spec.target = "/dev/" + member;
    ProbeResult r;
    r.name = spec.name;
    r.kind = spec.kind;
    r.target = member_spec.target;
    run_kind(member_spec, env, control, r);
    result.extra["member_bytes"] += static_cast<double>(r.bytes);
    const double figure = Figure(r);
    if (!r.success() || figure <= 0) {
      result.member_errors[member] = r.error.empty() ? "no figure" : r.error;
      continue;
    }
    result.member_figures[member] = figure;
    if (array_figure > 0) result.member_ratios[member] = array_figure / figure;
  }
}

}  // namespace iodrift::probes
