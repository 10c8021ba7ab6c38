#include "collectors/probes/random.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>
#include <tuple>

#include "collectors/probes/accounting.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/readers.h"
#include "collectors/probes/residency_witness.h"
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
  const double limit = std::max(options.min_time_limit_seconds,
                                std::chrono::duration<double>(spec.time_budget).count());

  // One reader of a step: requests + 1 (the discarded warm-up) at random slots of its own
  // slice, back to back. Failures go into `local` (outcome, error, suspect, supported).
  struct Reader {
    ProbeResult local;
    std::vector<double> latencies;
    std::uint64_t bytes = 0;
    double measured_wall_start = 0;
    double end = 0;
  };
  auto read_slice = [&](Reader& reader, Slice slice, std::uint32_t requests, bool spot_check) {
    ProbeResult& out = reader.local;
    out.outcome = Outcome::kOk;
    if (requests == 0 || slice.length == 0) return;
    auto buffer = AlignedBuffer::Make(request, mem_align);
    if (!buffer) return MarkFailed(out, Outcome::kError, buffer.error().message);
    std::mt19937_64 rng{std::random_device{}()};
    std::uniform_int_distribution<std::uint64_t> pick(slice.offset,
                                                      slice.offset + slice.length - 1);
    const std::uint32_t total = requests + 1;  // + the discarded warm-up
    std::vector<double>& latencies = reader.latencies;
    latencies.reserve(requests);
    auto drop_had_no_effect = [&] {
      AddSuspect(out, "cache_not_dropped");
      out.supported = false;
      MarkFailed(out, Outcome::kSkipped,
                 "O_DIRECT refused and posix_fadvise(DONTNEED) has no effect on " + dt->path +
                     " (" + result.target_info.fstype +
                     "); random reads would only time cache hits");
    };
    // The first (discarded) request of the spot-checking reader proves that the drop works, by
    // residency before it or, where that is hidden, by this thread's read_bytes across it.
    std::optional<std::uint64_t> fetched_before;
    const double start = MonotonicSeconds();
    for (std::uint32_t i = 0; i < total; ++i) {
      const std::uint64_t off = pick(rng) * request;
      if (!direct) {
        DropAround(fd.get(), off);
        if (i == 0 && spot_check) {  // the drop must work here, or we would time cache hits
          auto res = MeasureResidency(fd.get(), off, request);
          if (res) {
            out.residency_witness = res->method;
            if (res->resident_bytes > 0) return drop_had_no_effect();
          } else if (TaskIoWitnessApplies(result.target_info) &&
                     (fetched_before = ThreadStorageReadBytes())) {
            out.residency_witness = kWitnessTaskIo;
          } else {
            out.residency_witness = kWitnessNone;
            AddSuspect(out, "residency_unverified");
          }
        }
      }
      if (i == 1) reader.measured_wall_start = MonotonicSeconds();
      const double t0 = MonotonicSeconds();
      ssize_t n;
      do {
        n = pread(fd.get(), buffer->data(), request, static_cast<off_t>(off));
      } while (n < 0 && errno == EINTR);
      const double t1 = MonotonicSeconds();
      if (n < 0) {
        return MarkFailed(out, Outcome::kError,
                          SystemErrorMessage("read " + std::to_string(request) + " bytes of " +
                                                 dt->path + " at " + std::to_string(off),
                                             errno));
      }
      if (static_cast<std::uint64_t>(n) < request) {  // every slot lies inside the start size
        return MarkFailed(out, Outcome::kError,
                          "read " + dt->path + " at " + std::to_string(off) + ": " +
                              std::to_string(n) + " of " + std::to_string(request) +
                              " bytes (end of file): the target shrank during the run");
      }
      reader.bytes += static_cast<std::uint64_t>(n);
      if (i == 0 && fetched_before) {
        const std::optional<std::uint64_t> fetched_after = ThreadStorageReadBytes();
        if (!fetched_after || *fetched_after < *fetched_before) {
          AddSuspect(out, "residency_unverified");
        } else if (!ReadFromStorage(static_cast<std::uint64_t>(n),
                                    *fetched_after - *fetched_before)) {
          return drop_had_no_effect();
        }
      }
      if (i > 0) latencies.push_back(t1 - t0);
      if (!direct) DropAround(fd.get(), off);  // leave no footprint
      if (control.Cancelled()) return MarkFailed(out, Outcome::kSkipped, "random read: cancelled");
      if (control.PastDeadline(t1)) {
        return MarkFailed(out, Outcome::kTimeout, "random read " + dt->path + ": timed out");
      }
      if (t1 - start >= limit) break;
    }
    reader.end = MonotonicSeconds();
  };

  const std::vector<std::uint32_t> counts = ReaderCounts(spec);
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const std::uint32_t readers = counts[k];
    // Disjoint slot ranges; spec.requests shared out (the first readers take the remainder).
    const std::vector<Slice> slices = SplitRegion(slots, readers, 1);
    std::vector<Reader> state(readers);
    StepAccounting accounting(env.proc_root, env.sys_root, result.target_info.device, readers);
    RunReaders(
        readers, env,
        [&](std::uint32_t i) {
          const std::uint32_t share =
              spec.requests / readers + (i < spec.requests % readers ? 1 : 0);
          read_slice(state[i], slices[i], share, k == 0 && i == 0);
        },
        &accounting);
    const TimeParts time_parts = accounting.Parts();
    if (k == 0) result.time_seconds = time_parts;
    std::vector<double> latencies;
    std::vector<double> rates;
    double measured_start = 0, end = 0;
    for (Reader& reader : state) {
      result.bytes += reader.bytes;
      for (const auto& reason : reader.local.suspect) AddSuspect(result, reason);
      if (!reader.local.residency_witness.empty())
        result.residency_witness = reader.local.residency_witness;
      if (!reader.local.supported) result.supported = false;
    }
    for (Reader& reader : state) {
      if (!reader.local.success()) {
        return MarkFailed(result, reader.local.outcome, reader.local.error);
      }
    }
    for (Reader& reader : state) {
      if (reader.latencies.empty()) continue;
      double sum = 0;
      for (double l : reader.latencies) sum += l;
      if (sum > 0) rates.push_back(static_cast<double>(reader.latencies.size()) / sum);
      latencies.insert(latencies.end(), reader.latencies.begin(), reader.latencies.end());
      if (measured_start == 0 || reader.measured_wall_start < measured_start)
        measured_start = reader.measured_wall_start;
      end = std::max(end, reader.end);
    }
    if (latencies.empty()) {
      return MarkFailed(result, Outcome::kError,
                        "random read " + dt->path + ": no request measured within " +
                            std::to_string(limit) + " s");
    }
    if (!spec.readers.empty()) {
      ReaderStep step;
      step.readers = readers;
      for (const Reader& reader : state) step.bytes += reader.bytes;
      step.seconds = end - measured_start;
      for (double rate : rates) step.rate += rate;
      std::tie(step.per_reader_min, step.per_reader_max) = Spread(rates);
      step.time_seconds = time_parts;
      result.readers.push_back(step);
    }
    if (k > 0) continue;
    // The first step gives the probe's figures.
    const double wall = end - measured_start;
    double max_latency = 0;
    for (double l : latencies) max_latency = std::max(max_latency, l);
    const double n = static_cast<double>(latencies.size());
    result.latency = BuildLatencyHistogram(std::move(latencies));
    if (readers == 1) {
      if (result.latency->sum_seconds > 0)
        result.ops_per_second["read"] = n / result.latency->sum_seconds;
    } else if (!rates.empty()) {
      double sum = 0;
      for (double rate : rates) sum += rate;
      result.ops_per_second["read"] = sum;
    }
    if (wall > 0) result.extra["wall_iops"] = n / wall;
    result.extra["latency_max_seconds"] = max_latency;
  }
  if (!CheckTargetUnchanged(*dt, fd.get(), result)) return;
  FillScalingEfficiency(result.readers);
  result.outcome = Outcome::kOk;
}

}  // namespace iodrift::probes
