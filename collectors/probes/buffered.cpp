#include "collectors/probes/buffered.h"

#include <fcntl.h>

#include <algorithm>

#include "collectors/probes/calibration.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/target.h"

namespace iodrift::probes {

void RunBufferedProbe(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                      ProbeResult& result) {
  auto dt = PrepareKindTarget(spec, env, control, result);
  if (!dt) return;

  const SequentialBudget budget = ResolveBudget(spec, env.state_dir);
  std::uint64_t region = std::min(budget.read_limit, dt->size);
  if (region > PageSize()) region = AlignDown(region, PageSize());
  result.extra["region_bytes"] = static_cast<double>(region);

  auto hold = OpenDataTarget(*dt);
  if (!hold) return MarkFailed(result, Outcome::kError, hold.error().message);

  // fadvise(DONTNEED) keeps a folio that straddles the end of the range, and since 6.16 ext4
  // (like XFS) caches in large folios of up to 2 MiB, naturally aligned: the last readahead
  // folio of the previous run would survive and count as "cached". So the drop covers the
  // region rounded up to 2 MiB, and runs to EOF (length 0) when that reaches the end.
  constexpr std::uint64_t kLargestFolio = 2ull << 20;
  const std::uint64_t drop_end = (region + kLargestFolio - 1) / kLargestFolio * kLargestFolio;
  const off_t drop_len = drop_end >= dt->size ? 0 : static_cast<off_t>(drop_end);

  // Drop this region's cached pages and prove it.
  const auto before_drop = MeasureResidency(hold->get(), 0, region);
  std::optional<Residency> resident;
  for (int attempt = 0; attempt < 2; ++attempt) {
    posix_fadvise(hold->get(), 0, drop_len, POSIX_FADV_DONTNEED);
    resident = MeasureResidency(hold->get(), 0, region);
    if (!resident || resident->Fraction() <= kMaxResidentFraction) break;
  }
  if (!resident) {
    AddSuspect(result, "residency_unverified");
  } else {
    result.extra["resident_before_fraction"] = resident->Fraction();
    if (resident->Fraction() > kMaxResidentFraction) {
      AddSuspect(result, "cache_not_dropped");
      const bool no_effect = before_drop && before_drop->resident_bytes > 0 &&
                             resident->resident_bytes >= before_drop->resident_bytes;
      if (no_effect || IsMemoryBackedFs(result.target_info.fstype)) result.supported = false;
      return MarkFailed(
          result, Outcome::kSkipped,
          "cache not dropped: " + std::to_string(static_cast<int>(resident->Fraction() * 100)) +
              " % of " + dt->path + " [0, " + std::to_string(region) +
              ") still cached after posix_fadvise(DONTNEED)" +
              (IsMemoryBackedFs(result.target_info.fstype)
                   ? " (" + result.target_info.fstype + " keeps its pages in memory)"
               : no_effect ? " (posix_fadvise dropped none of them: dirty, mapped or locked "
                             "pages stay cached, or " +
                                 result.target_info.fstype + " ignores fadvise)"
                           : " (mapped, dirty or locked pages stay cached)"));
    }
  }

  auto buffer = AlignedBuffer::Make(kSequentialChunkBytes, 4096);
  if (!buffer) return MarkFailed(result, Outcome::kError, buffer.error().message);
  auto fd = OpenDataTarget(*dt);  // fresh fd: fresh readahead state
  if (!fd) return MarkFailed(result, Outcome::kError, fd.error().message);
  const double time_budget = std::chrono::duration<double>(spec.time_budget).count();
  const double timeout = std::chrono::duration<double>(spec.timeout).count();
  const SequentialReadStats stats = ReadSequential(fd->get(), buffer->data(), kSequentialChunkBytes,
                                                   0, region, time_budget, control);
  result.bytes = stats.bytes;
  if (stats.bytes > 0) {
    if (auto after = MeasureResidency(hold->get(), 0, stats.bytes)) {
      result.extra["resident_after_fraction"] = after->Fraction();
    }
  }
  posix_fadvise(hold->get(), 0, drop_len, POSIX_FADV_DONTNEED);  // no footprint
  if (!CheckReadStop(result, stats, dt->path, timeout)) return;
  if (stats.bytes == 0 || stats.seconds <= 0) {
    return MarkFailed(result, Outcome::kError, "read " + dt->path + ": no data");
  }
  result.throughput_bytes_per_second = static_cast<double>(stats.bytes) / stats.seconds;
  result.extra["read_seconds"] = stats.seconds;
  result.extra["first_chunk_seconds"] = stats.first_chunk_seconds;
  result.extra["stopped_by_time_budget"] = stats.stop == StopReason::kTimeBudget ? 1 : 0;
  if (budget.calibrating)
    FinishCalibration(spec, env.state_dir, stats.bytes, stats.stop == StopReason::kTimeBudget,
                      result);
  result.outcome = Outcome::kOk;
}

}  // namespace iodrift::probes
