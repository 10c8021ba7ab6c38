// boot collector: boot time, uptime and boot id — what ties a slowdown to "N days since boot".
#include "collectors/common/families.h"
#include "collectors/proc/boot.h"
#include "collectors/proc/state_collectors.h"

namespace iodrift::proc {
namespace {

class BootCollector final : public Collector {
 public:
  std::string_view Name() const override { return "boot"; }

  Expected<void> Collect(const ProcRoot& root,
                         std::vector<prometheus::MetricFamily>& out) const override {
    auto boot = ReadBootState(root);
    if (!boot) return tl::unexpected(boot.error());
    using prometheus::MetricType;
    if (boot->boot_time_seconds) {
      auto family =
          MakeFamily("iodrift_boot_time_seconds",
                     "Boot time, seconds since the epoch (/proc/stat btime).", MetricType::Gauge);
      AddSample(family, static_cast<double>(*boot->boot_time_seconds));
      out.push_back(std::move(family));
    }
    if (boot->uptime_seconds) {
      auto family = MakeFamily("iodrift_uptime_seconds", "Seconds since boot (/proc/uptime).",
                               MetricType::Gauge);
      AddSample(family, *boot->uptime_seconds);
      out.push_back(std::move(family));
    }
    if (boot->boot_id) {
      auto family = MakeFamily("iodrift_boot_info",
                               "Random id of this boot (/proc/sys/kernel/random/boot_id); value 1.",
                               MetricType::Gauge);
      AddSample(family, 1, {{"boot_id", *boot->boot_id}});
      out.push_back(std::move(family));
    }
    return {};
  }
};

}  // namespace

std::unique_ptr<Collector> MakeBootCollector() { return std::make_unique<BootCollector>(); }

}  // namespace iodrift::proc
