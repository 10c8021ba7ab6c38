#include "collectors/probes/metadata.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>

#include "collectors/probes/accounting.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/target.h"

namespace iodrift::probes {
namespace {

std::vector<std::string> FileNames(std::uint32_t count) {
  int width = 3;
  for (std::uint32_t n = count > 0 ? count - 1 : 0; n >= 1000; n /= 10) ++width;
  std::vector<std::string> names;
  names.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    std::string digits = std::to_string(i);
    names.push_back(
        "f" +
        std::string(static_cast<std::size_t>(width) -
                        std::min<std::size_t>(digits.size(), static_cast<std::size_t>(width)),
                    '0') +
        digits);
  }
  return names;
}

// The phase's median, when it has enough samples for one (HonestPercentile).
std::optional<double> PhaseP50(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return HonestPercentile(v, 0.5);
}

}  // namespace

void RunMetadataProbe(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                      ProbeResult& result) {
  if (spec.files == 0) return MarkFailed(result, Outcome::kError, "metadata probe: files is 0");
  struct stat tst {};
  if (stat(spec.target.c_str(), &tst) == 0 && !S_ISDIR(tst.st_mode)) {
    return MarkFailed(result, Outcome::kError,
                      "metadata probe needs a directory target; " + spec.target + " is a " +
                          (S_ISBLK(tst.st_mode) ? "block device" : "regular file"));
  }
  result.target_info = DescribeTarget(spec.target, env.sys_root);
  // Everything below goes through this directory fd: a path swapped for a symlink during the run
  // cannot redirect a single create or delete.
  auto dfd = OpenMetaDir(spec.target);
  if (!dfd) return MarkFailed(result, Outcome::kError, dfd.error().message);
  const auto meta = std::filesystem::path(spec.target) / kMetaDirName;
  const auto names = FileNames(spec.files);
  const std::uint32_t n = spec.files;

  int leftovers = 0;
  for (const auto& name : names) {
    if (unlinkat(dfd->get(), name.c_str(), 0) == 0) ++leftovers;
  }
  result.extra["leftovers_removed"] = leftovers;

  std::vector<bool> exists(n, false);
  auto cleanup = [&]() {
    for (std::uint32_t i = 0; i < n; ++i) {
      if (exists[i]) unlinkat(dfd->get(), names[i].c_str(), 0);
    }
  };
  auto fail = [&](Outcome outcome, std::string message) {
    cleanup();
    MarkFailed(result, outcome, std::move(message));
  };
  auto stop_requested = [&](double now) -> bool {
    if (control.Cancelled()) {
      fail(Outcome::kSkipped, "metadata probe: cancelled");
      return true;
    }
    if (control.PastDeadline(now)) {
      fail(Outcome::kTimeout, "metadata probe in " + meta.string() + ": timed out");
      return true;
    }
    return false;
  };
  const std::string dir = meta.string() + "/";

  std::vector<double> create_lat, stat_lat, delete_lat, all;
  // Wall time of each phase, first call to last return: bonnie++'s definition of a phase's rate
  // (files / phase time) also counts the gaps between calls, where a busy CPU preempts too.
  double create_wall = 0, stat_wall = 0, delete_wall = 0;
  ScopedTimedRead timed(env, result);  // the three phases
  double phase_start = MonotonicSeconds();
  for (std::uint32_t i = 0; i < n; ++i) {
    const double t0 = MonotonicSeconds();
    const int fd = openat(dfd->get(), names[i].c_str(),
                          O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_NOCTTY | O_CLOEXEC, 0600);
    if (fd < 0) return fail(Outcome::kError, SystemErrorMessage("create " + dir + names[i], errno));
    exists[i] = true;
    const int close_rc = close(fd);
    const double t1 = MonotonicSeconds();
    if (close_rc != 0)
      return fail(Outcome::kError, SystemErrorMessage("close " + dir + names[i], errno));
    create_lat.push_back(t1 - t0);
    create_wall = t1 - phase_start;
    if (stop_requested(t1)) return;
  }

  std::vector<std::uint32_t> order(n);
  for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937 rng{std::random_device{}()};
  std::shuffle(order.begin(), order.end(), rng);
  phase_start = MonotonicSeconds();
  for (std::uint32_t i : order) {
    struct stat st {};
    const double t0 = MonotonicSeconds();
    const int rc = fstatat(dfd->get(), names[i].c_str(), &st, AT_SYMLINK_NOFOLLOW);
    const double t1 = MonotonicSeconds();
    if (rc != 0) return fail(Outcome::kError, SystemErrorMessage("stat " + dir + names[i], errno));
    stat_lat.push_back(t1 - t0);
    stat_wall = t1 - phase_start;
    if (stop_requested(t1)) return;
  }

  std::shuffle(order.begin(), order.end(), rng);
  phase_start = MonotonicSeconds();
  for (std::uint32_t i : order) {
    const double t0 = MonotonicSeconds();
    const int rc = unlinkat(dfd->get(), names[i].c_str(), 0);
    const double t1 = MonotonicSeconds();
    if (rc != 0)
      return fail(Outcome::kError, SystemErrorMessage("delete " + dir + names[i], errno));
    exists[i] = false;
    delete_lat.push_back(t1 - t0);
    delete_wall = t1 - phase_start;
    if (stop_requested(t1)) return;
  }

  timed.Stop();
  auto rate = [&](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return sum > 0 ? static_cast<double>(v.size()) / sum : 0.0;
  };
  result.ops_per_second["create"] = rate(create_lat);
  result.ops_per_second["stat"] = rate(stat_lat);
  result.ops_per_second["delete"] = rate(delete_lat);
  for (const auto& [phase, lat] :
       {std::pair<const char*, const std::vector<double>*>{"create", &create_lat},
        {"stat", &stat_lat},
        {"delete", &delete_lat}}) {
    if (auto p50 = PhaseP50(*lat)) result.extra[std::string(phase) + "_p50_seconds"] = *p50;
  }
  for (const auto& [phase, wall] : {std::pair<const char*, double>{"create", create_wall},
                                    {"stat", stat_wall},
                                    {"delete", delete_wall}}) {
    if (wall > 0) result.extra[std::string(phase) + "_wall_ops_per_second"] = n / wall;
  }
  result.extra["files"] = n;
  all = create_lat;
  all.insert(all.end(), stat_lat.begin(), stat_lat.end());
  all.insert(all.end(), delete_lat.begin(), delete_lat.end());
  result.latency = BuildLatencyHistogram(std::move(all));
  result.outcome = Outcome::kOk;
}

}  // namespace iodrift::probes
