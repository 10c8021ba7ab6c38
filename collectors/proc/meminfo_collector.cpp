// meminfo collector: every /proc/meminfo field as iodrift_meminfo_<Field>_bytes (kB fields) or
// iodrift_meminfo_<Field> (unit-less counts such as HugePages_Total).
#include "collectors/common/families.h"
#include "collectors/proc/meminfo.h"
#include "collectors/proc/state_collectors.h"

namespace iodrift::proc {
namespace {

class MeminfoCollector final : public Collector {
 public:
  std::string_view Name() const override { return "meminfo"; }

  Expected<void> Collect(const ProcRoot& root,
                         std::vector<prometheus::MetricFamily>& out) const override {
    auto meminfo = ReadMeminfo(root);
    if (!meminfo) return tl::unexpected(meminfo.error());
    for (const auto& field : meminfo->fields) {
      std::string name = "iodrift_meminfo_" + SanitizeMetricName(field.name);
      if (field.is_bytes) name += "_bytes";
      auto family = MakeFamily(std::move(name),
                               "Memory information field " + field.name + " from /proc/meminfo.",
                               prometheus::MetricType::Gauge);
      AddSample(family, static_cast<double>(field.value));
      out.push_back(std::move(family));
    }
    return {};
  }
};

}  // namespace

std::unique_ptr<Collector> MakeMeminfoCollector() { return std::make_unique<MeminfoCollector>(); }

}  // namespace iodrift::proc
