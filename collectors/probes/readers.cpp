#include "collectors/probes/readers.h"

#include <algorithm>
#include <exception>
#include <latch>
#include <mutex>
#include <thread>
#include <tuple>

#include "collectors/probes/io_util.h"
#include "collectors/probes/residency_witness.h"

namespace iodrift::probes {

std::vector<std::uint32_t> ReaderCounts(const ProbeSpec& spec) {
  if (spec.readers.empty()) return {1};
  return spec.readers;
}

std::vector<Slice> SplitRegion(std::uint64_t length, std::uint32_t n, std::uint64_t align) {
  std::vector<Slice> slices;
  if (n == 0) return slices;
  if (align == 0) align = 1;
  const std::uint64_t units = length / align;
  const std::uint64_t per = units / n;
  slices.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint64_t first = per * i;
    const std::uint64_t count = i + 1 == n ? units - first : per;
    slices.push_back(Slice{first * align, count * align});
  }
  return slices;
}

std::pair<double, double> Spread(const std::vector<double>& rates) {
  if (rates.empty()) return {0, 0};
  const auto [lo, hi] = std::minmax_element(rates.begin(), rates.end());
  return {*lo, *hi};
}

std::optional<double> ScalingEfficiency(double rate_n, std::uint32_t n, double rate_1) {
  if (n == 0 || !(rate_1 > 0)) return std::nullopt;
  return rate_n / (static_cast<double>(n) * rate_1);
}

void FillScalingEfficiency(std::vector<ReaderStep>& steps) {
  const auto one = std::find_if(steps.begin(), steps.end(),
                                [](const ReaderStep& s) { return s.readers == 1 && s.rate > 0; });
  if (one == steps.end()) return;
  const double rate_1 = one->rate;
  for (auto& step : steps)
    step.scaling_efficiency = ScalingEfficiency(step.rate, step.readers, rate_1);
}

namespace {

// body(i) between reader i's own accounting samples; its timed seconds by its own clock.
void AccountedBody(std::uint32_t i, const std::function<void(std::uint32_t)>& body,
                   StepAccounting* accounting, double* end) {
  if (accounting) accounting->BeginReader(i);
  const double t0 = MonotonicSeconds();
  body(i);
  *end = MonotonicSeconds();
  if (accounting) accounting->EndReader(i, *end - t0);
}

}  // namespace

double RunReaders(std::uint32_t n, const ProbeEnv& env,
                  const std::function<void(std::uint32_t)>& body, StepAccounting* accounting) {
  if (n <= 1) {
    if (accounting) accounting->BeginStep();
    const double t0 = MonotonicSeconds();
    double end = t0;
    try {
      AccountedBody(0, body, accounting, &end);
    } catch (...) {
      if (accounting) accounting->EndStep();
      throw;
    }
    if (accounting) accounting->EndStep();
    return end - t0;
  }
  std::latch ready(n);
  std::latch go(1);
  std::mutex mu;
  std::exception_ptr failure;
  std::vector<double> ends(n, 0.0);
  std::vector<std::thread> threads;
  threads.reserve(n);
  bool abandon = false;  // a thread could not start: the started ones run nothing
  std::exception_ptr start_failure;
  for (std::uint32_t i = 0; i < n && !start_failure; ++i) {
    try {
      threads.emplace_back([&, i] {
        ScopedThreadPriority priority(env.io_class, env.io_level, env.nice);
        ready.count_down();
        go.wait();
        if (abandon) return;
        try {
          AccountedBody(i, body, accounting, &ends[i]);
        } catch (...) {
          std::lock_guard lock(mu);
          if (!failure) failure = std::current_exception();
          ends[i] = MonotonicSeconds();
        }
      });
    } catch (...) {  // EAGAIN: out of threads
      start_failure = std::current_exception();
      abandon = true;
      ready.count_down(static_cast<std::ptrdiff_t>(n - threads.size()));
    }
  }
  ready.wait();
  if (accounting && !abandon) accounting->BeginStep();
  const double t0 = MonotonicSeconds();
  go.count_down();
  for (auto& t : threads) t.join();
  if (accounting && !abandon) accounting->EndStep();
  if (start_failure) std::rethrow_exception(start_failure);
  if (failure) std::rethrow_exception(failure);
  return *std::max_element(ends.begin(), ends.end()) - t0;
}

std::vector<Slice> ReaderSlices(std::uint64_t region, std::uint32_t n, std::uint64_t align) {
  std::vector<Slice> slices = SplitRegion(region, n, align);
  if (!slices.empty()) slices.back().length = region - slices.back().offset;
  return slices;
}

const SequentialReadStats* SequentialStep::Failed() const {
  for (const auto& r : readers) {
    if (r.stop == StopReason::kError || r.stop == StopReason::kTimeout ||
        r.stop == StopReason::kCancelled || r.stop == StopReason::kEof)
      return &r;
  }
  return nullptr;
}

bool SequentialStep::StoppedByTimeBudget() const {
  return std::any_of(readers.begin(), readers.end(),
                     [](const auto& r) { return r.stop == StopReason::kTimeBudget; });
}

std::optional<std::uint64_t> SequentialStep::StorageReadBytes() const {
  std::uint64_t sum = 0;
  for (const auto& r : readers) {
    if (!r.storage_read_bytes) return std::nullopt;
    sum += *r.storage_read_bytes;
  }
  return sum;
}

void RecordSequentialStep(const SequentialStep& step, bool first, bool curve, ProbeResult& result) {
  if (curve) result.readers.push_back(step.Figures());
  if (!first) return;
  result.throughput_bytes_per_second = static_cast<double>(step.bytes) / step.seconds;
  result.extra["read_seconds"] = step.seconds;
  result.extra["first_chunk_seconds"] = step.readers[0].first_chunk_seconds;
  result.extra["stopped_by_time_budget"] = step.StoppedByTimeBudget() ? 1 : 0;
}

ReaderStep SequentialStep::Figures() const {
  ReaderStep step;
  step.readers = static_cast<std::uint32_t>(readers.size());
  step.bytes = bytes;
  step.seconds = seconds;
  step.rate = seconds > 0 ? static_cast<double>(bytes) / seconds : 0;
  std::vector<double> rates;
  for (const auto& r : readers) {
    rates.push_back(r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds : 0);
  }
  std::tie(step.per_reader_min, step.per_reader_max) = Spread(rates);
  step.time_seconds = time_parts;
  return step;
}

SequentialStep ReadSequentialStep(const std::vector<int>& fds, const std::vector<char*>& buffers,
                                  std::size_t chunk, const std::vector<Slice>& slices,
                                  double time_budget_s, const RunControl& control,
                                  const ProbeEnv& env, const std::string& device) {
  SequentialStep step;
  const auto n = static_cast<std::uint32_t>(slices.size());
  step.readers.resize(n);
  StepAccounting accounting(env.proc_root, env.sys_root, device, n);
  const double wall = RunReaders(
      n, env,
      [&](std::uint32_t i) {
        step.readers[i] = ReadSequential(fds[i], buffers[i], chunk, slices[i].offset,
                                         slices[i].length, time_budget_s, control);
      },
      &accounting);
  for (std::uint32_t i = 0; i < n; ++i)
    step.readers[i].storage_read_bytes = accounting.readers()[i].read_bytes;
  step.time_parts = accounting.Parts();
  for (const auto& r : step.readers) step.bytes += r.bytes;
  step.seconds = n == 1 ? step.readers[0].seconds : wall;
  return step;
}

}  // namespace iodrift::probes
