#include "collectors/probes/members.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <string_view>
#include <system_error>

#include "collectors/common/error.h"
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

// Why /dev/<name> must not be probed as a member, or "" when it may. The name comes from a
// sysfs tree (`sys_root` may name any directory), so it must be a plain name and /dev/<name>
// itself, not followed, a block device: never a directory such as /dev/shm, where a probe
// would create its probe file.
std::string MemberNodeProblem(const std::string& name) {
  if (name.empty() || name == "." || name == ".." ||
      name.find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
    return "not probed: not a device name";
  }
  const std::string node = "/dev/" + name;
  struct stat st {};
  if (fstatat(AT_FDCWD, node.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return "not probed: " + SystemErrorMessage("stat " + node, errno);
  }
  if (!S_ISBLK(st.st_mode)) return "not probed: " + node + " is not a block device";
  return "";
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
    if (std::string problem = MemberNodeProblem(member); !problem.empty()) {
      result.member_errors[member] = std::move(problem);
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
