#include "collectors/probes/io_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#ifndef __NR_cachestat
#define __NR_cachestat 451  // same number on every architecture (Linux 6.5)
#endif

namespace iodrift::probes {
namespace {

double ClockSeconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Kernel ABI of cachestat(2) (include/uapi/linux/mman.h), spelled out because Debian 12's
// headers predate it.
struct CachestatRange {
  std::uint64_t off;
  std::uint64_t len;
};
struct Cachestat {
  std::uint64_t nr_cache;
  std::uint64_t nr_dirty;
  std::uint64_t nr_writeback;
  std::uint64_t nr_evicted;
  std::uint64_t nr_recently_evicted;
};

// ioprio(2) encoding (include/uapi/linux/ioprio.h).
constexpr int kIoprioWhoProcess = 1;
constexpr int kIoprioClassShift = 13;
constexpr int kIoprioClassBe = 2;
constexpr int kIoprioClassIdle = 3;

// mincore() is trusted only where the kernel reveals the real page cache: anonymous memory, or
// a file the caller owns or may write (mm/mincore.c can_do_mincore(); otherwise every page is
// reported resident).
bool MincoreTrustworthy(int fd) {
  if (geteuid() == 0) return true;  // CAP_FOWNER in the usual case
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  if (st.st_uid == geteuid()) return true;
  std::string self = "/proc/self/fd/" + std::to_string(fd);
  return faccessat(AT_FDCWD, self.c_str(), W_OK, AT_EACCESS) == 0;
}

std::optional<Residency> MincoreResidency(int fd, std::uint64_t offset, std::uint64_t length) {
  if (!MincoreTrustworthy(fd)) return std::nullopt;
  const std::uint64_t page = PageSize();
  const std::uint64_t start = AlignDown(offset, page);
  const std::uint64_t end = AlignUp(offset + length, page);
  Residency r;
  r.method = "mincore";
  r.total_bytes = length;
  // Map in pieces of at most 1 GiB to keep the vector small on huge regions.
  constexpr std::uint64_t kPiece = 1ull << 30;
  std::vector<unsigned char> vec;
  for (std::uint64_t pos = start; pos < end; pos += kPiece) {
    const std::uint64_t len = std::min(kPiece, end - pos);
    void* map = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(pos));
    if (map == MAP_FAILED) return std::nullopt;
    vec.assign(len / page, 0);
    const int rc = mincore(map, len, vec.data());
    munmap(map, len);
    if (rc != 0) return std::nullopt;
    for (std::size_t i = 0; i < vec.size(); ++i) {
      if (vec[i] & 1) {
        // Count only the part of the page that lies inside [offset, offset + length).
        const std::uint64_t p0 = pos + i * page;
        const std::uint64_t lo = std::max(p0, offset);
        const std::uint64_t hi = std::min(p0 + page, offset + length);
        if (hi > lo) r.resident_bytes += hi - lo;
      }
    }
  }
  return r;
}

}  // namespace

double MonotonicSeconds() { return ClockSeconds(CLOCK_MONOTONIC); }
double WallSeconds() { return ClockSeconds(CLOCK_REALTIME); }

Expected<UniqueFd> OpenReadOnly(const std::string& path, int extra_flags) {
  const int base = O_RDONLY | O_CLOEXEC | extra_flags;
  int fd = open(path.c_str(), base | O_NOATIME);
  if (fd < 0 && errno == EPERM) fd = open(path.c_str(), base);
  if (fd < 0) {
    const int err = errno;
    std::string what = "open " + path;
    if (extra_flags & O_DIRECT) what += " (O_DIRECT)";
    std::string msg = SystemErrorMessage(what, err);
    if (err == EACCES)
      msg += " (run as root, or give the iodrift user read access, e.g. group disk)";
    return Fail(err, msg);
  }
  return UniqueFd(fd);
}

Expected<AlignedBuffer> AlignedBuffer::Make(std::size_t size, std::size_t alignment) {
  void* p = nullptr;
  const int rc = posix_memalign(&p, std::max<std::size_t>(alignment, sizeof(void*)), size);
  if (rc != 0)
    return Fail(rc, SystemErrorMessage("allocate " + std::to_string(size) + " bytes", rc));
  std::memset(p, 0, size);
  AlignedBuffer b;
  b.data_ = static_cast<char*>(p);
  b.size_ = size;
  return b;
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

std::uint64_t PageSize() {
  static const std::uint64_t kPage = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  return kPage;
}

std::optional<std::uint64_t> PendingWritebackBytes(int fd, std::uint64_t offset,
                                                   std::uint64_t length) {
  if (length == 0) return 0;
  CachestatRange range{offset, length};
  Cachestat cs{};
  if (syscall(__NR_cachestat, fd, &range, &cs, 0) != 0) return std::nullopt;
  return std::min<std::uint64_t>((cs.nr_dirty + cs.nr_writeback) * PageSize(), length);
}

std::optional<Residency> MeasureResidency(int fd, std::uint64_t offset, std::uint64_t length) {
  if (length == 0) return Residency{0, 0, "cachestat"};
  CachestatRange range{offset, length};
  Cachestat cs{};
  if (syscall(__NR_cachestat, fd, &range, &cs, 0) == 0) {
    Residency r;
    r.method = "cachestat";
    r.total_bytes = length;
    // cachestat counts whole pages touching the range; clamp to the range length.
    r.resident_bytes = std::min<std::uint64_t>(cs.nr_cache * PageSize(), length);
    return r;
  }
  if (errno == EPERM) return std::nullopt;  // not owner/writer: mincore would lie as well
  return MincoreResidency(fd, offset, length);
}

SequentialReadStats ReadSequential(int fd, char* buffer, std::size_t chunk, std::uint64_t offset,
                                   std::uint64_t length, double time_budget_s,
                                   const RunControl& control) {
  SequentialReadStats stats;
  const double t0 = MonotonicSeconds();
  std::uint64_t pos = offset;
  const std::uint64_t end = offset + length;
  bool first = true;
  while (pos < end) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, end - pos));
    const ssize_t n = pread(fd, buffer, want, static_cast<off_t>(pos));
    const double now = MonotonicSeconds();
    if (n < 0) {
      if (errno == EINTR) continue;
      stats.error = errno;
      stats.stop = StopReason::kError;
      stats.seconds = now - t0;
      return stats;
    }
    if (first) {
      stats.first_chunk_seconds = now - t0;
      first = false;
    }
    if (n == 0) {
      stats.stop = StopReason::kEof;
      stats.seconds = now - t0;
      return stats;
    }
    stats.bytes += static_cast<std::uint64_t>(n);
    pos += static_cast<std::uint64_t>(n);
    stats.seconds = now - t0;
    if (pos >= end) break;
    if (control.Cancelled()) {
      stats.stop = StopReason::kCancelled;
      return stats;
    }
    if (control.PastDeadline(now)) {
      stats.stop = StopReason::kTimeout;
      return stats;
    }
    if (stats.seconds >= time_budget_s) {
      stats.stop = StopReason::kTimeBudget;
      return stats;
    }
  }
  stats.stop = StopReason::kBudget;
  return stats;
}

double Percentile(const std::vector<double>& sorted, double p) {
  const auto n = sorted.size();
  auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(n)));
  rank = std::clamp<std::size_t>(rank, 1, n);
  return sorted[rank - 1];
}

std::uint64_t MinSamplesForPercentile(double p) {
  if (!(p > 0 && p < 1)) return kMinPercentileSamples;
  // 1 / (1 − p), with the rounding error of 1 − 0.99 taken off before rounding up.
  const auto above_one = static_cast<std::uint64_t>(std::ceil(1.0 / (1.0 - p) - 1e-9));
  return std::max(kMinPercentileSamples, above_one);
}

std::optional<double> HonestPercentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty() || sorted.size() < MinSamplesForPercentile(p)) return std::nullopt;
  return Percentile(sorted, p);
}

LatencyHistogram BuildLatencyHistogram(std::vector<double> samples_seconds) {
  const auto& bounds = LatencyBucketBounds();
  LatencyHistogram h;
  h.bucket_counts.assign(bounds.size() + 1, 0);
  for (double s : samples_seconds) {
    const auto it = std::lower_bound(bounds.begin(), bounds.end(), s);  // first bound >= s
    ++h.bucket_counts[static_cast<std::size_t>(it - bounds.begin())];
    h.sum_seconds += s;
  }
  h.count = samples_seconds.size();
  if (!samples_seconds.empty()) {
    std::sort(samples_seconds.begin(), samples_seconds.end());
    h.p50_seconds = HonestPercentile(samples_seconds, 0.50);
    h.p99_seconds = HonestPercentile(samples_seconds, 0.99);
  }
  return h;
}

ScopedThreadPriority::ScopedThreadPriority(IoClass io_class, int io_level,
                                           std::optional<int> nice) {
  if (io_class != IoClass::kUnchanged) {
    old_ioprio_ = static_cast<int>(syscall(SYS_ioprio_get, kIoprioWhoProcess, 0));
    const int cls = io_class == IoClass::kIdle ? kIoprioClassIdle : kIoprioClassBe;
    const int level = io_class == IoClass::kIdle ? 0 : std::clamp(io_level, 0, 7);
    syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, (cls << kIoprioClassShift) | level);
  }
  if (nice) {
    // On Linux, PRIO_PROCESS with a thread id sets that thread's nice value.
    const auto tid = static_cast<id_t>(gettid());
    errno = 0;
    const int old = getpriority(PRIO_PROCESS, tid);
    if (errno == 0 && setpriority(PRIO_PROCESS, tid, *nice) == 0) old_nice_ = old;
  }
}

ScopedThreadPriority::~ScopedThreadPriority() {
  if (old_ioprio_ >= 0) syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, old_ioprio_);
  if (old_nice_) setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), *old_nice_);
}

ThreadCpu CurrentThreadCpu() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  ThreadCpu cpu;
  cpu.user_seconds = static_cast<double>(ru.ru_utime.tv_sec) + ru.ru_utime.tv_usec * 1e-6;
  cpu.system_seconds = static_cast<double>(ru.ru_stime.tv_sec) + ru.ru_stime.tv_usec * 1e-6;
  return cpu;
}

void FillPseudoRandom(char* data, std::size_t size, std::uint64_t seed) {
  // splitmix64 to seed xoshiro256**.
  auto splitmix = [&seed]() {
    std::uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  std::uint64_t s[4] = {splitmix(), splitmix(), splitmix(), splitmix()};
  auto rotl = [](std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  std::size_t i = 0;
  while (i < size) {
    const std::uint64_t result = rotl(s[1] * 5, 7) * 9;
    const std::uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    const std::size_t n = std::min<std::size_t>(sizeof(result), size - i);
    std::memcpy(data + i, &result, n);
    i += n;
  }
}

void MarkFailed(ProbeResult& result, Outcome outcome, std::string message) {
  result.outcome = outcome;
  result.error = std::move(message);
}

void AddSuspect(ProbeResult& result, const std::string& reason) {
  if (std::find(result.suspect.begin(), result.suspect.end(), reason) == result.suspect.end()) {
    result.suspect.push_back(reason);
  }
}

bool IsMemoryBackedFs(const std::string& fstype) {
  return fstype == "tmpfs" || fstype == "ramfs" || fstype == "hugetlbfs" || fstype == "devtmpfs";
}

bool CheckReadStop(ProbeResult& result, const SequentialReadStats& stats, const std::string& path,
                   double timeout_seconds) {
  switch (stats.stop) {
    case StopReason::kError:
      MarkFailed(result, Outcome::kError,
                 SystemErrorMessage("read " + path + " at byte " + std::to_string(stats.bytes),
                                    stats.error));
      return false;
    case StopReason::kTimeout:
      MarkFailed(result, Outcome::kTimeout,
                 "read " + path + ": timed out after " + std::to_string(timeout_seconds) + " s");
      return false;
    case StopReason::kCancelled:
      MarkFailed(result, Outcome::kSkipped, "read " + path + ": cancelled");
      return false;
    case StopReason::kEof:  // the range was within the size the run started with
      MarkFailed(result, Outcome::kError,
                 "read " + path + ": end of file after " + std::to_string(stats.bytes) +
                     " bytes of a range inside the size the run started with: the target "
                     "shrank during the run");
      return false;
    default:
      return true;
  }
}

}  // namespace iodrift::probes
