// pressure collector: PSI totals per resource. "some" → iodrift_pressure_waiting_seconds_total,
// "full" → iodrift_pressure_stalled_seconds_total. A resource the kernel does not offer (irq
// before 6.1, or CONFIG_PSI_IRQ off) is left out; no PSI at all is an error (success 0).
#include <array>

#include "collectors/common/families.h"
#include "collectors/proc/pressure.h"
#include "collectors/proc/state_collectors.h"

namespace iodrift::proc {
namespace {

constexpr std::array<std::string_view, 4> kResources = {"cpu", "io", "memory", "irq"};

class PressureCollector final : public Collector {
 public:
  std::string_view Name() const override { return "pressure"; }

  Expected<void> Collect(const ProcRoot& root,
                         std::vector<prometheus::MetricFamily>& out) const override {
    auto waiting =
        MakeFamily("iodrift_pressure_waiting_seconds_total",
                   "Time at least some tasks were stalled on the resource (PSI \"some\" total).",
                   prometheus::MetricType::Counter);
    auto stalled = MakeFamily(
        "iodrift_pressure_stalled_seconds_total",
        "Time all non-idle tasks were stalled on the resource at once (PSI \"full\" total).",
        prometheus::MetricType::Counter);
    std::optional<Error> first_error;
    for (auto resource : kResources) {
      auto pressure = ReadPressure(root, resource);
      if (!pressure) {
        if (!first_error) first_error = pressure.error();
        continue;
      }
      Labels labels{{"resource", std::string(resource)}};
      if (pressure->some)
        AddSample(waiting, static_cast<double>(pressure->some->total_us) / 1e6, labels);
      if (pressure->full)
        AddSample(stalled, static_cast<double>(pressure->full->total_us) / 1e6, labels);
    }
    if (waiting.metric.empty() && stalled.metric.empty()) {
      return tl::unexpected(first_error.value_or(Error{0, "no pressure stall information"}));
    }
    out.push_back(std::move(waiting));
    out.push_back(std::move(stalled));
    return {};
  }
};

}  // namespace

std::unique_ptr<Collector> MakePressureCollector() { return std::make_unique<PressureCollector>(); }

}  // namespace iodrift::proc
