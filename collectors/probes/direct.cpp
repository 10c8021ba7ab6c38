#include "collectors/probes/direct.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>

#include "collectors/probes/buffered.h"
#include "collectors/probes/calibration.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/readers.h"
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
  // The first step also finds the alignment that works (pread EINVAL: retry once at 4096);
  // later steps of a readers curve use it. All readers share the O_DIRECT fd (no readahead).
  const std::vector<std::uint32_t> counts = ReaderCounts(spec);
  std::uint64_t region = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const std::uint32_t n = counts[k];
    SequentialStep step;
    for (int attempt = (k == 0 ? 0 : 1); attempt < 2; ++attempt) {
      if (k == 0 && attempt == 1) {  // pread EINVAL: alignment was wrong; retry once at 4096
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
      std::vector<AlignedBuffer> buffers;
      std::vector<char*> buffer_ptrs;
      for (std::uint32_t i = 0; i < n; ++i) {
        auto buffer = AlignedBuffer::Make(chunk, align.mem_align);
        if (!buffer) return MarkFailed(result, Outcome::kError, buffer.error().message);
        buffer_ptrs.push_back(buffer->data());
        buffers.push_back(std::move(*buffer));
      }
      step = ReadSequentialStep(std::vector<int>(n, fd->get()), buffer_ptrs, chunk,
                                ReaderSlices(region, n, align.offset_align), time_budget, control,
                                env, result.target_info.device);
      const SequentialReadStats* failed = step.Failed();
      if (!(k == 0 && failed && failed->stop == StopReason::kError && failed->error == EINVAL &&
            step.bytes == 0))
        break;
      if (attempt == 1) {
        result.supported = false;
        return MarkFailed(result, Outcome::kSkipped,
                          "O_DIRECT read of " + dt->path +
                              " refused (invalid argument, also at 4096-byte alignment); direct "
                              "reads not measured");
      }
    }
    result.bytes += step.bytes;
    if (k == 0) {
      result.time_seconds = step.time_parts;
      result.extra["region_bytes"] = static_cast<double>(region);
      result.extra["offset_align"] = align.offset_align;
      result.extra["mem_align"] = align.mem_align;
    }
    if (const SequentialReadStats* failed = step.Failed()) {
      if (!CheckReadStop(result, *failed, dt->path, timeout)) return;
    }
    if (step.bytes == 0 || step.seconds <= 0) {
      return MarkFailed(result, Outcome::kError, "read " + dt->path + ": no data");
    }
    RecordSequentialStep(step, k == 0, !spec.readers.empty(), result);
    if (k > 0) continue;
    if (budget.calibrating) {
      FinishCalibration(spec, env.state_dir, step.bytes, step.StoppedByTimeBudget(), result);
    }
  }
  if (!CheckTargetUnchanged(*dt, fd->get(), result)) return;
  FillScalingEfficiency(result.readers);
  result.outcome = Outcome::kOk;
}

}  // namespace iodrift::probes
