// Parallel readers: the `readers:` option of buffered, direct and random (tiotest's threads).
//
// A step of N readers splits the probe's region (sequential kinds) or its request slots (random)
// into N disjoint, consecutive slices and reads them on N threads released together; the step's
// budget (size or requests, time_budget) is the whole step's, shared by its readers, and the
// probe's timeout covers every step of the run. A list (`readers: [1, 2, 4, 8]`) runs one step
// per count, in order, and is the scaling curve.
//
// Figures (ProbeResult::readers, one ReaderStep per count):
//   rate            buffered/direct: bytes of all readers / wall time of the step (common start
//                   to the last reader's end); random: sum of the readers' service IOPS (each
//                   reader's requests / its summed latency — fio's group IOPS), so a one-reader
//                   step equals the classic figures.
//   per_reader_min/max  the slowest and fastest reader's own rate (spread).
//   scaling_efficiency  rate(N) / (N x rate(1)), with rate(1) from the same run's one-reader
//                   step: 1 = perfect scaling, 1/N = no gain at all; absent without a 1 step.
//
// Thread-safety: the pure functions are reentrant; RunReaders runs `body` on N threads at once
// (body must only touch its own reader's state).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "collectors/probes/accounting.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"

namespace iodrift::probes {

// The reader counts of `spec`, in order: {1} when `readers:` is not set.
std::vector<std::uint32_t> ReaderCounts(const ProbeSpec& spec);

struct Slice {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// [0, length) as `n` disjoint consecutive slices whose offsets are multiples of `align`
// (length is first aligned down to `align`); the last slice takes the remainder. Slices are
// empty when there are fewer aligned units than readers. n == 0 gives none.
std::vector<Slice> SplitRegion(std::uint64_t length, std::uint32_t n, std::uint64_t align);

// Slowest and fastest of `rates` ({0, 0} when empty).
std::pair<double, double> Spread(const std::vector<double>& rates);

// rate_n / (n x rate_1); nullopt when n == 0 or rate_1 <= 0.
std::optional<double> ScalingEfficiency(double rate_n, std::uint32_t n, double rate_1);

// Sets every step's scaling_efficiency from the first one-reader step with a positive rate.
void FillScalingEfficiency(std::vector<ReaderStep>& steps);

// Runs body(0) … body(n-1) on n threads released together (n == 1: on the calling thread, the
// classic probe), each at the probe's I/O priority (env.io_class/io_level/nice). Returns the
// wall seconds from the common start to the end of the last reader. An exception in a reader is
// rethrown here after all readers ended.
// With `accounting` (made for n readers): BeginStep before the release, each reader's
// BeginReader/EndReader on its own thread immediately around body(i) (timed by body's own
// clock reading), EndStep after the last one ended.
double RunReaders(std::uint32_t n, const ProbeEnv& env,
                  const std::function<void(std::uint32_t)>& body,
                  StepAccounting* accounting = nullptr);

// One step of a sequential kind: reader i reads slices[i] of fds[i] (the same fd may be shared)
// into buffers[i] with ReadSequential, all at once. Each reader's accounting (accounting.h)
// samples its own thread just before and after its loop; its read_bytes delta is
// storage_read_bytes.
struct SequentialStep {
  std::vector<SequentialReadStats> readers;
  double seconds = 0;  // wall time of the step (one reader: its own loop time, as before)
  std::uint64_t bytes = 0;
  TimeParts time_parts;  // the step's, summed over its readers (time_parts.h)

  // The first reader that stopped on an error, timeout or cancellation; nullptr when none did.
  const SequentialReadStats* Failed() const;
  bool StoppedByTimeBudget() const;
  // The readers' storage_read_bytes summed (a reader's readahead may fetch the start of the next
  // reader's slice); nullopt when any reader's is unknown.
  std::optional<std::uint64_t> StorageReadBytes() const;
  // The ReaderStep figures (rate = bytes / seconds; spread of bytes_i / seconds_i; time parts).
  ReaderStep Figures() const;
};

// Records one step of a sequential run (buffered, direct): its figures on the readers curve when
// the spec has one (`curve`), and for the first step the run's own figures (throughput,
// extra read_seconds, first_chunk_seconds, stopped_by_time_budget). step.seconds > 0.
void RecordSequentialStep(const SequentialStep& step, bool first, bool curve, ProbeResult& result);

// The slices of `region` for `n` readers (offsets multiples of `align`, the last one running to
// `region` itself, so one reader reads exactly [0, region) as the classic probe did).
std::vector<Slice> ReaderSlices(std::uint64_t region, std::uint32_t n, std::uint64_t align);

// `device`: the target's device (TargetInfo::device) for the step's device figures.
SequentialStep ReadSequentialStep(const std::vector<int>& fds, const std::vector<char*>& buffers,
                                  std::size_t chunk, const std::vector<Slice>& slices,
                                  double time_budget_s, const RunControl& control,
                                  const ProbeEnv& env, const std::string& device);

}  // namespace iodrift::probes
