#include "collectors/probes/cached.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "collectors/probes/accounting.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/residency_witness.h"
#include "collectors/probes/target.h"

namespace iodrift::probes {

void RunCachedProbe(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                    ProbeResult& result) {
  auto dt = PrepareKindTarget(spec, env, control, result);
  if (!dt) return;

  auto fd = OpenDataTarget(*dt);
  if (!fd) return MarkFailed(result, Outcome::kError, fd.error().message);
  std::uint64_t region = std::min(kCachedRegionBytes, dt->size);
  if (region > PageSize()) region = AlignDown(region, PageSize());
  auto buffer = AlignedBuffer::Make(kCachedRegionBytes, 4096);
  if (!buffer) return MarkFailed(result, Outcome::kError, buffer.error().message);
  const bool locked = mlock(buffer->data(), buffer->size()) == 0;

  auto read_region = [&]() -> bool {
    std::uint64_t done = 0;
    while (done < region) {
      const ssize_t n =
          pread(fd->get(), buffer->data() + done, region - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        MarkFailed(result, Outcome::kError,
                   n == 0
                       ? "read " + dt->path + ": end of file at byte " + std::to_string(done) +
                             " of " + std::to_string(region) + ": the target shrank during the run"
                       : SystemErrorMessage("read " + dt->path, errno));
        return false;
      }
      done += static_cast<std::uint64_t>(n);
      result.bytes += static_cast<std::uint64_t>(n);
    }
    return true;
  };

  bool ok = read_region() && read_region();  // warm-up: bring the region into the page cache
  if (ok) {
    // The witness that the windows time the page cache (residency_witness.h): the region's
    // residency, or else this thread's read_bytes over the windows.
    std::optional<std::uint64_t> fetched_before;
    if (auto res = MeasureResidency(fd->get(), 0, region)) {
      result.extra["resident_fraction"] = res->Fraction();
      result.residency_witness = res->method;
    } else if (TaskIoWitnessApplies(result.target_info) &&
               (fetched_before = ThreadStorageReadBytes())) {
      result.residency_witness = kWitnessTaskIo;
    } else {
      result.residency_witness = kWitnessNone;
      AddSuspect(result, "residency_unverified");
    }
    const double window_s =
        std::max(0.01, std::chrono::duration<double>(spec.time_budget).count() / kCachedWindows);
    std::vector<double> rates;
    std::uint64_t all_bytes = 0;  // over every window: hdparm -T's definition (bytes / time)
    double all_seconds = 0;
    ScopedTimedRead timed(env, result);
    for (int w = 0; ok && w < kCachedWindows; ++w) {
      std::uint64_t window_bytes = 0;
      const double t0 = MonotonicSeconds();
      double elapsed = 0;
      do {
        const std::uint64_t before = result.bytes;
        if (!(ok = read_region())) break;
        window_bytes += result.bytes - before;
        elapsed = MonotonicSeconds() - t0;
      } while (elapsed < window_s);
      if (!ok) break;
      rates.push_back(static_cast<double>(window_bytes) / elapsed);
      all_bytes += window_bytes;
      all_seconds += elapsed;
      if (control.Cancelled()) {
        MarkFailed(result, Outcome::kSkipped, "cached read " + dt->path + ": cancelled");
        ok = false;
      } else if (control.PastDeadline(MonotonicSeconds())) {
        MarkFailed(result, Outcome::kTimeout, "cached read " + dt->path + ": timed out");
        ok = false;
      }
    }
    timed.Stop();
    if (ok) {
      std::vector<double> sorted = rates;
      std::sort(sorted.begin(), sorted.end());
      // Median of an odd count is its middle element; of an even count the upper middle.
      result.throughput_bytes_per_second = sorted[sorted.size() / 2];
      result.extra["throughput_max_bytes_per_second"] = sorted.back();
      result.extra["throughput_min_bytes_per_second"] = sorted.front();
      // hdparm -T reports bytes / time over its whole 2 s loop, preemptions included; the
      // headline median of short windows resists them. Both are kept (docs/benchmarks.md
      // "Accuracy").
      if (all_seconds > 0)
        result.extra["throughput_mean_bytes_per_second"] =
            static_cast<double>(all_bytes) / all_seconds;
      result.extra["windows"] = static_cast<double>(sorted.size());
      result.extra["window_seconds"] = window_s;
      if (fetched_before) {
        const std::optional<std::uint64_t> fetched_after = ThreadStorageReadBytes();
        if (fetched_after && *fetched_after >= *fetched_before) {
          const std::uint64_t fetched = *fetched_after - *fetched_before;
          result.extra["storage_read_fraction"] = StorageReadFraction(all_bytes, fetched);
          if (!ReadFromPageCache(all_bytes, fetched)) AddSuspect(result, "cache_evicted");
        } else {
          AddSuspect(result, "residency_unverified");
        }
      } else if (auto res = MeasureResidency(fd->get(), 0, region); res && res->Fraction() < 0.99) {
        AddSuspect(result, "cache_evicted");
      }
      if (CheckTargetUnchanged(*dt, fd->get(), result)) result.outcome = Outcome::kOk;
    }
  }
  result.extra["region_bytes"] = static_cast<double>(region);
  if (locked) munlock(buffer->data(), buffer->size());
}

}  // namespace iodrift::probes
