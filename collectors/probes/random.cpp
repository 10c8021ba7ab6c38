#include "collectors/probes/random.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>

#include "collectors/probes/io_util.h"
#include "collectors/probes/target.h"

namespace iodrift::probes {
namespace {

// Large folios (ext4, xfs, tmpfs on 6.x) cache up to 2 MiB per page-cache entry, and
// POSIX_FADV_DONTNEED only drops entries that lie wholly inside its range: a 4 KiB drop inside
// a 64 KiB folio does nothing (seen on 6.18 ext4). Drop the PMD-sized window around a request.
constexpr std::uint64_t kDropWindow = 2ull << 20;

void DropAround(int fd, std::uint64_t off) {
  posix_fadvise(fd, static_cast<off_t>(AlignDown(off, kDropWindow)),
                static_cast<off_t>(kDropWindow), POSIX_FADV_DONTNEED);
}

}  // namespace

void RunRandomProbe(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                    ProbeResult& result, const RandomOptions& options) {
  auto dt = PrepareKindTarget(spec, env, control, result);
  if (!dt) return;

  // Pick the mode: O_DIRECT where the filesystem takes it, else ioping's fadvise mode.
  bool direct = !options.force_fadvise_mode;
  UniqueFd fd;
  std::uint64_t request = 4096;
  std::uint32_t mem_align = 4096;
  if (direct) {
    auto dfd = OpenDataTarget(*dt, O_DIRECT);
    if (!dfd && dfd.error().code != EINVAL) {
      return MarkFailed(result, Outcome::kError, dfd.error().message);
    }
    if (dfd) {
      const DioAlignment align = QueryDioAlignment(dfd->get(), env.sys_root);
      if (align.refused) {
        direct = false;
      } else {
        fd = std::move(*dfd);
        request = std::max<std::uint64_t>(4096, align.offset_align);
        mem_align = align.mem_align;
      }
    } else {
      direct = false;
    }
  }
  if (!direct) {
    auto bfd = OpenDataTarget(*dt);
    if (!bfd) return MarkFailed(result, Outcome::kError, bfd.error().message);
    fd = std::move(*bfd);
    request = std::max<std::uint64_t>(4096, PageSize());
    posix_fadvise(fd.get(), 0, 0, POSIX_FADV_RANDOM);
  }
  result.mode = direct ? "direct" : "fadvise";
  if (direct && IsMemoryBackedFs(result.target_info.fstype)) AddSuspect(result, "memory_backed_fs");
  result.extra["request_bytes"] = static_cast<double>(request);

  const std::uint64_t slots = dt->size / request;
  if (slots == 0) {
    return MarkFailed(result, Outcome::kError,
                      "target " + dt->path + " is smaller than one request (" +
                          std::to_string(request) + " bytes)");
  }
  auto buffer = AlignedBuffer::Make(request, mem_align);
  if (!buffer) return MarkFailed(result, Outcome::kError, buffer.error().message);

  std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<std::uint64_t> pick(0, slots - 1);
  const double limit = std::max(options.min_time_limit_seconds,
                                std::chrono::duration<double>(spec.time_budget).count());
  const std::uint32_t total = spec.requests + 1;  // + the discarded warm-up
  std::vector<double> latencies;
  latencies.reserve(spec.requests);
  const double start = MonotonicSeconds();
  double measured_wall_start = 0;
  for (std::uint32_t i = 0; i < total; ++i) {
    const std::uint64_t off = pick(rng) * request;
    if (!direct) {
      DropAround(fd.get(), off);
      if (i == 0) {  // spot check: the drop must work here, or we would time cache hits
        auto res = MeasureResidency(fd.get(), off, request);
        if (!res) {
          AddSuspect(result, "residency_unverified");
        } else if (res->resident_bytes > 0) {
          AddSuspect(result, "cache_not_dropped");
          result.supported = false;
          return MarkFailed(result, Outcome::kSkipped,
                            "O_DIRECT refused and posix_fadvise(DONTNEED) has no effect on " +
                                dt->path + " (" + result.target_info.fstype +
                                "); random reads would only time cache hits");
        }
      }
    }
    if (i == 1) measured_wall_start = MonotonicSeconds();
    const double t0 = MonotonicSeconds();
    ssize_t n;
    do {
      n = pread(fd.get(), buffer->data(), request, static_cast<off_t>(off));
    } while (n < 0 && errno == EINTR);
    const double t1 = MonotonicSeconds();
    if (n < 0) {
      return MarkFailed(result, Outcome::kError,
                        SystemErrorMessage("read " + std::to_string(request) + " bytes of " +
                                               dt->path + " at " + std::to_string(off),
                                           errno));
    }
    result.bytes += static_cast<std::uint64_t>(n);
    if (i > 0) latencies.push_back(t1 - t0);
    if (!direct) DropAround(fd.get(), off);  // leave no footprint
    if (control.Cancelled()) return MarkFailed(result, Outcome::kSkipped, "random read: cancelled");
    if (control.PastDeadline(t1)) {
      return MarkFailed(result, Outcome::kTimeout, "random read " + dt->path + ": timed out");
    }
    if (t1 - start >= limit) break;
  }
  const double wall = MonotonicSeconds() - measured_wall_start;
  if (latencies.empty()) {
    return MarkFailed(
        result, Outcome::kError,
        "random read " + dt->path + ": no request measured within " + std::to_string(limit) + " s");
  }
  double max_latency = 0;
  for (double l : latencies) max_latency = std::max(max_latency, l);
  result.latency = BuildLatencyHistogram(latencies);
  const double n = static_cast<double>(latencies.size());
  if (result.latency->sum_seconds > 0)
    result.ops_per_second["read"] = n / result.latency->sum_seconds;
  if (wall > 0) result.extra["wall_iops"] = n / wall;
  result.extra["latency_max_seconds"] = max_latency;
  result.outcome = Outcome::kOk;
}

}  // namespace iodrift::probes
