#include "collectors/probes/buffered.h"

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "collectors/probes/calibration.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/readers.h"
#include "collectors/probes/residency_witness.h"
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

  // Drop this region's cached pages and prove it (before every step of a readers curve) with
  // the first witness that answers (residency_witness.h): the region's residency now, or else
  // the readers' own read_bytes after the step (verify_from_storage).
  const bool task_io = TaskIoWitnessApplies(result.target_info);
  auto drop_and_verify = [&]() -> bool {
    const auto before_drop = MeasureResidency(hold->get(), 0, region);
    std::optional<Residency> resident;
    // Pages under read I/O are locked and survive DONTNEED: a previous run's readahead still
    // in flight (a throttled device serves it slowly) is waited out, at most 0.75 s in all,
    // before the clock starts.
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (attempt > 1) std::this_thread::sleep_for(std::chrono::milliseconds(50 << (attempt - 2)));
      posix_fadvise(hold->get(), 0, drop_len, POSIX_FADV_DONTNEED);
      resident = MeasureResidency(hold->get(), 0, region);
      if (!resident || resident->Fraction() <= kMaxResidentFraction) break;
    }
    if (!resident) {
      result.residency_witness = task_io ? kWitnessTaskIo : kWitnessNone;
      if (!task_io) AddSuspect(result, "residency_unverified");
      return true;
    }
    result.residency_witness = resident->method;
    if (!result.extra.count("resident_before_fraction"))
      result.extra["resident_before_fraction"] = resident->Fraction();
    if (resident->Fraction() <= kMaxResidentFraction) return true;
    AddSuspect(result, "cache_not_dropped");
    const bool no_effect = before_drop && before_drop->resident_bytes > 0 &&
                           resident->resident_bytes >= before_drop->resident_bytes;
    if (no_effect || IsMemoryBackedFs(result.target_info.fstype)) result.supported = false;
    MarkFailed(
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
    return false;
  };

  // The task_io witness, after a step: did the readers fetch (nearly) every byte they timed?
  auto verify_from_storage = [&](const SequentialStep& step, bool first_step) -> bool {
    const std::optional<std::uint64_t> fetched = step.StorageReadBytes();
    if (!fetched) {
      result.residency_witness = kWitnessNone;
      AddSuspect(result, "residency_unverified");  // /proc/thread-self/io unreadable
      return true;
    }
    const double fraction = StorageReadFraction(step.bytes, *fetched);
    if (first_step) result.extra["storage_read_fraction"] = fraction;
    if (ReadFromStorage(step.bytes, *fetched)) return true;
    AddSuspect(result, "cache_not_dropped");
    MarkFailed(result, Outcome::kSkipped,
               "cache not dropped: the readers fetched " + std::to_string(*fetched) +
                   " bytes from storage for " + std::to_string(step.bytes) + " bytes read of " +
                   dt->path + " (" + std::to_string(static_cast<int>(fraction * 100)) +
                   " %, /proc/thread-self/io read_bytes); the rest came from the page cache "
                   "(pages mapped, locked or being read by another process)");
    return false;
  };

  const double time_budget = std::chrono::duration<double>(spec.time_budget).count();
  const double timeout = std::chrono::duration<double>(spec.timeout).count();
  const std::vector<std::uint32_t> counts = ReaderCounts(spec);
  for (std::size_t k = 0; k < counts.size(); ++k) {
    if (!drop_and_verify()) return;
    const std::uint32_t n = counts[k];
    // Each reader: its own buffer and a fresh fd (fresh readahead state).
    std::vector<AlignedBuffer> buffers;
    std::vector<UniqueFd> fds;
    std::vector<char*> buffer_ptrs;
    std::vector<int> fd_numbers;
    for (std::uint32_t i = 0; i < n; ++i) {
      auto buffer = AlignedBuffer::Make(kSequentialChunkBytes, 4096);
      if (!buffer) return MarkFailed(result, Outcome::kError, buffer.error().message);
      auto fd = OpenDataTarget(*dt);
      if (!fd) return MarkFailed(result, Outcome::kError, fd.error().message);
      buffer_ptrs.push_back(buffer->data());
      fd_numbers.push_back(fd->get());
      buffers.push_back(std::move(*buffer));
      fds.push_back(std::move(*fd));
    }
    const SequentialStep step = ReadSequentialStep(fd_numbers, buffer_ptrs, kSequentialChunkBytes,
                                                   ReaderSlices(region, n, PageSize()), time_budget,
                                                   control, env, result.target_info.device);
    result.bytes += step.bytes;
    if (k == 0) result.time_seconds = step.time_parts;
    if (k == 0 && step.bytes > 0) {
      const std::uint64_t read_span = n == 1 ? step.bytes : region;
      if (auto after = MeasureResidency(hold->get(), 0, read_span)) {
        result.extra["resident_after_fraction"] = after->Fraction();
      }
    }
    posix_fadvise(hold->get(), 0, drop_len, POSIX_FADV_DONTNEED);  // no footprint
    if (const SequentialReadStats* failed = step.Failed()) {
      if (!CheckReadStop(result, *failed, dt->path, timeout)) return;
    }
    if (step.bytes == 0 || step.seconds <= 0) {
      return MarkFailed(result, Outcome::kError, "read " + dt->path + ": no data");
    }
    if (result.residency_witness == kWitnessTaskIo && !verify_from_storage(step, k == 0)) return;
    // The first step gives the probe's figures (and calibrates).
    RecordSequentialStep(step, k == 0, !spec.readers.empty(), result);
    if (k > 0) continue;
    if (budget.calibrating)
      FinishCalibration(spec, env.state_dir, step.bytes, step.StoppedByTimeBudget(), result);
  }
  if (!CheckTargetUnchanged(*dt, hold->get(), result)) return;
  FillScalingEfficiency(result.readers);
  result.outcome = Outcome::kOk;
}

}  // namespace iodrift::probes
