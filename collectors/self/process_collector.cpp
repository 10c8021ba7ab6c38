#include "collectors/self/process_collector.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <mutex>
#include <optional>

#include "collectors/common/families.h"
#include "collectors/proc/boot.h"
#include "collectors/self/process_stat.h"

namespace iodrift::self {
namespace {

// Counts entries of /proc/self/fd (minus ".", ".." and the fd opendir itself holds).
std::optional<std::size_t> CountOpenFds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  std::size_t n = 0;
  while (auto* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n > 0 ? n - 1 : 0;
}

class ProcessCollector final : public Collector {
 public:
  std::string_view Name() const override { return "process"; }

  Expected<void> Collect(const ProcRoot& /*root*/,
                         std::vector<prometheus::MetricFamily>& out) const override {
    static const ProcRoot kLive = ProcRoot("/proc").KeepingFilesOpen();
    auto text = kLive.Read("self/stat");
    if (!text) return tl::unexpected(text.error());
    auto stat = ParseProcessStat(*text);
    if (!stat) return tl::unexpected(stat.error());
    const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
    using prometheus::MetricType;
    auto add = [&out](const char* name, const char* help, MetricType type, double value) {
      auto family = MakeFamily(name, help, type);
      AddSample(family, value);
      out.push_back(std::move(family));
    };
    add("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
        MetricType::Counter, static_cast<double>(stat->utime_ticks + stat->stime_ticks) / ticks);
    add("process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::Gauge,
        static_cast<double>(stat->rss_pages) * page);
    add("process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::Gauge,
        static_cast<double>(stat->virtual_bytes));
    if (auto fds = CountOpenFds()) {
      add("process_open_fds", "Number of open file descriptors.", MetricType::Gauge,
          static_cast<double>(*fds));
    }
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
      add("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge,
          static_cast<double>(limit.rlim_cur));
    }
    // Constant for the process's life: /proc/stat (~10-130 KiB, also read by the boot
    // collector) is read for it once, not on every scrape.
    std::call_once(start_once_, [&] {
      if (auto stat_text = kLive.Read("stat")) {
        if (auto btime = proc::ParseStatBootTime(*stat_text)) {
          start_time_ =
              static_cast<double>(*btime) + static_cast<double>(stat->start_time_ticks) / ticks;
        }
      }
    });
    if (start_time_) {
      add("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
          MetricType::Gauge, *start_time_);
    }
    return {};
  }

 private:
  mutable std::once_flag start_once_;
  mutable std::optional<double> start_time_;
};

}  // namespace

std::unique_ptr<Collector> MakeProcessCollector() { return std::make_unique<ProcessCollector>(); }

}  // namespace iodrift::self
