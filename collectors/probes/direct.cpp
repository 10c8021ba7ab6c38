#include "collectors/probes/direct.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>

#include "collectors/probes/buffered.h"
#include "collectors/probes/calibration.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/target.h"

namespace iodrift::probes {

void RunDirectProbe(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
                    ProbeResult& result) {
  auto dt = PrepareKindTarget(spec, env, control, result);
  if (!dt) return;
  const std::string fstype = result.target_info.fstype.empty() ? "this" : result.target_info.fstype;

  auto fd = OpenDataTarget(*dt, O_DIRECT);
  if (!fd) {
    if (fd.error().code == EINVAL) {
      result.supported = false;
      return MarkFailed(result, Outcome::kSkipped,
                        "O_DIRECT refused by the " + fstype + " filesystem (open " + dt->path +
                            ": invalid argument); direct reads not measured");
    }
    return MarkFailed(result, Outcome::kError, fd.error().message);
  }
  DioAlignment align = QueryDioAlignment(fd->get(), env.sys_root);
  if (align.refused) {
    result.supported = false;
    return MarkFailed(result, Outcome::kSkipped,
                      "statx reports no O_DIRECT support for " + dt->path + " (" + fstype +
                          "); direct reads not measured");
  }
  if (IsMemoryBackedFs(result.target_info.fstype)) AddSuspect(result, "memory_backed_fs");

  const SequentialBudget budget = ResolveBudget(spec, env.state_dir);
  const double time_budget = std::chrono::duration<double>(spec.time_budget).count();
  const double timeout = std::chrono::duration<double>(spec.timeout).count();
  SequentialReadStats stats;
  std::uint64_t region = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt == 1) {  // pread EINVAL: alignment was wrong; retry once at 4096
      align.offset_align = align.mem_align = 4096;
      align.source = "retry-4096";
    }
    const std::uint64_t chunk = std::max<std::uint64_t>(
        AlignDown(kSequentialChunkBytes, align.offset_align), align.offset_align);
    region = AlignDown(std::min(budget.read_limit, dt->size), align.offset_align);
    if (region == 0) {
      return MarkFailed(result, Outcome::kError,
                        "target " + dt->path + " is smaller than one O_DIRECT block (" +
                            std::to_string(align.offset_align) + " bytes)");
    }
    auto buffer = AlignedBuffer::Make(chunk, align.mem_align);
    if (!buffer) return MarkFailed(result, Outcome::kError, buffer.error().message);
    stats = ReadSequential(fd->get(), buffer->data(), chunk, 0, region, time_budget, control);
    if (!(stats.stop == StopReason::kError && stats.error == EINVAL && stats.bytes == 0)) break;
    if (attempt == 1) {
      result.supported = false;
      return MarkFailed(result, Outcome::kSkipped,
                        "O_DIRECT read of " + dt->path +
                            " refused (invalid argument, also at 4096-byte alignment); direct "
                            "reads not measured");
    }
  }
  result.bytes = stats.bytes;
  result.extra["region_bytes"] = static_cast<double>(region);
  result.extra["offset_align"] = align.offset_align;
  result.extra["mem_align"] = align.mem_align;
  if (!CheckReadStop(result, stats, dt->path, timeout)) return;
  if (stats.bytes == 0 || stats.seconds <= 0) {
    return MarkFailed(result, Outcome::kError, "read " + dt->path + ": no data");
  }
  result.throughput_bytes_per_second = static_cast<double>(stats.bytes) / stats.seconds;
  result.extra["read_seconds"] = stats.seconds;
  result.extra["first_chunk_seconds"] = stats.first_chunk_seconds;
  result.extra["stopped_by_time_budget"] = stats.stop == StopReason::kTimeBudget ? 1 : 0;
  if (budget.calibrating) {
    FinishCalibration(spec, env.state_dir, stats.bytes, stats.stop == StopReason::kTimeBudget,
                      result);
  }
  result.outcome = Outcome::kOk;
}

}  // namespace iodrift::probes
