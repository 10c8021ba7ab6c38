// Low-level helpers shared by the probe kinds: clocks, an owned fd, aligned buffers, page-cache
// residency, the sequential read loop and latency statistics.
//
// Everything here is a thin, error-as-value wrapper over one system call family, so the kinds
// (cached.cpp … memory.cpp) read as the method described in docs/probes.md.
//
// Thread-safety: free functions are reentrant; UniqueFd and AlignedBuffer are move-only owners
// used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/common/error.h"
#include "collectors/common/file_util.h"
#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"

namespace iodrift::probes {

inline constexpr std::uint64_t kMiB = 1ull << 20;

// CLOCK_MONOTONIC in seconds (all durations); CLOCK_REALTIME in seconds (start timestamps).
double MonotonicSeconds();
double WallSeconds();

// UniqueFd: collectors/common/file_util.h.

// Opens `path` read-only with O_CLOEXEC | `extra_flags`. Tries O_NOATIME first (so probing a
// file does not even change its atime) and drops it on EPERM (not the owner). Never O_WRONLY or
// O_RDWR: block devices and users' files are only ever read. Errors name the path and, for
// EACCES, the usual fix.
Expected<UniqueFd> OpenReadOnly(const std::string& path, int extra_flags = 0);

// A heap buffer from posix_memalign, faulted in (memset) so page faults never land inside a
// timed loop. Move-only; frees on destruction.
class AlignedBuffer {
 public:
  static Expected<AlignedBuffer> Make(std::size_t size, std::size_t alignment);
  AlignedBuffer() = default;
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();

  char* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
};

// How much of [offset, offset + length) of `fd`'s file is in the page cache.
struct Residency {
  std::uint64_t resident_bytes = 0;
  std::uint64_t total_bytes = 0;
  const char* method = "";  // "cachestat" | "mincore"

  double Fraction() const {
    return total_bytes == 0 ? 0.0 : static_cast<double>(resident_bytes) / total_bytes;
  }
};

// Measures residency with cachestat(2) (Linux ≥ 6.5), falling back to mincore(2) on a read-only
// MAP_SHARED mapping. Returns nullopt when the answer cannot be trusted: since 6.x both calls
// refuse to reveal the page cache of a file the caller neither owns nor may write (cachestat
// returns EPERM; mincore silently reports every page resident), so e.g. an unprivileged daemon
// reading a root-owned 0644 file cannot verify residency at all.
std::optional<Residency> MeasureResidency(int fd, std::uint64_t offset, std::uint64_t length);

// Bytes of [offset, offset + length) of `fd`'s file in dirty or under-writeback pages
// (cachestat(2)): written, but not on the disk yet. nullopt when cachestat cannot tell (Linux <
// 6.5, or EPERM: a file the caller neither owns nor may write).
std::optional<std::uint64_t> PendingWritebackBytes(int fd, std::uint64_t offset,
                                                   std::uint64_t length);

// Page size (sysconf), and `value` rounded down / up to a multiple of `align` (a power of two
// is not required).
std::uint64_t PageSize();
inline std::uint64_t AlignDown(std::uint64_t value, std::uint64_t align) {
  return align == 0 ? value : value / align * align;
}
inline std::uint64_t AlignUp(std::uint64_t value, std::uint64_t align) {
  return align == 0 ? value : (value + align - 1) / align * align;
}

// Why a sequential read loop stopped.
enum class StopReason { kBudget, kTimeBudget, kEof, kCancelled, kTimeout, kError };

struct SequentialReadStats {
  std::uint64_t bytes = 0;
  double seconds = 0;              // the whole loop, CLOCK_MONOTONIC
  double first_chunk_seconds = 0;  // the first pread alone (includes starting readahead)
  StopReason stop = StopReason::kBudget;
  int error = 0;  // errno of the failed pread when stop == kError
  // What the reading thread fetched from storage meanwhile (/proc/thread-self/io read_bytes,
  // residency_witness.h); set by ReadSequentialStep, nullopt when unreadable.
  std::optional<std::uint64_t> storage_read_bytes;
};

// Reads [offset, offset + length) of `fd` with pread() in `chunk`-byte pieces into `buffer`
// (at least `chunk` bytes), stopping at the end of the range, at EOF, after `time_budget_s`
// seconds (checked after each chunk; the first chunk is always read), or when `control` says
// so. A short read continues at the next offset; a failed pread stops with kError.
SequentialReadStats ReadSequential(int fd, char* buffer, std::size_t chunk, std::uint64_t offset,
                                   std::uint64_t length, double time_budget_s,
                                   const RunControl& control);

// Builds the LatencyBucketBounds() histogram and nearest-rank p50/p99 from per-op latencies
// (seconds). count is always set; each percentile only when the count supports it
// (HonestPercentile): p50 from 10 samples, p99 from 100.
LatencyHistogram BuildLatencyHistogram(std::vector<double> samples_seconds);

// Nearest-rank percentile (0 < p ≤ 1) of an ascending-sorted, non-empty vector.
double Percentile(const std::vector<double>& sorted, double p);

// The honest-percentile rule: the fewest samples from which the p-th percentile (0 < p < 1) is
// reported. Two conditions: at least one sample must lie above the nearest-rank percentile
// (n·(1−p) ≥ 1, so a "p99" is never just the largest sample: 100 for p99), and never fewer than
// kMinPercentileSamples, below which no distribution-free 95 % confidence interval of a median
// is narrower than the whole sample (6) with some margin (10 for p50).
inline constexpr std::uint64_t kMinPercentileSamples = 10;
std::uint64_t MinSamplesForPercentile(double p);

// Percentile(sorted, p) when sorted.size() ≥ MinSamplesForPercentile(p), else nullopt.
std::optional<double> HonestPercentile(const std::vector<double>& sorted, double p);

// Sets the calling thread's I/O priority (and nice when given) and restores the previous values
// on destruction. Failures are ignored (an unprivileged process may always lower its priority;
// raising it back may be refused and is then left as is).
class ScopedThreadPriority {
 public:
  ScopedThreadPriority(IoClass io_class, int io_level, std::optional<int> nice);
  ~ScopedThreadPriority();
  ScopedThreadPriority(const ScopedThreadPriority&) = delete;
  ScopedThreadPriority& operator=(const ScopedThreadPriority&) = delete;

 private:
  int old_ioprio_ = -1;
  std::optional<int> old_nice_;
};

// The calling thread's user and system CPU seconds (getrusage(RUSAGE_THREAD)).
struct ThreadCpu {
  double user_seconds = 0;
  double system_seconds = 0;
};
ThreadCpu CurrentThreadCpu();

// Fills `size` bytes at `data` with fast pseudo-random bytes (xoshiro256**), different per call.
void FillPseudoRandom(char* data, std::size_t size, std::uint64_t seed);

// Result helpers shared by the kinds.
void MarkFailed(ProbeResult& result, Outcome outcome, std::string message);
void AddSuspect(ProbeResult& result, const std::string& reason);  // no duplicates
// tmpfs/ramfs (and friends): the "device" is memory; fadvise is a no-op there.
bool IsMemoryBackedFs(const std::string& fstype);
// Maps how a read loop stopped to the run's outcome: kError → error ("read PATH: EIO"),
// kTimeout → timeout, kCancelled → skipped, kEof → error (the kinds read only ranges inside the
// size the run started with, so an early end of file means the target shrank); returns false in
// those cases, true otherwise.
bool CheckReadStop(ProbeResult& result, const SequentialReadStats& stats, const std::string& path,
                   double timeout_seconds);

}  // namespace iodrift::probes
