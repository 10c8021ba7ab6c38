// vmstat collector: /proc/vmstat fields selected by `collectors.vmstat.fields` (a regex, or the
// words `default` - kDefaultVmstatFields - and `all`) as untyped iodrift_vmstat_<field> (the
// kernel mixes counters and gauges without saying which).
#include "collectors/common/families.h"
#include "collectors/proc/name_filter.h"
#include "collectors/proc/state_collectors.h"
#include "collectors/proc/vmstat.h"

namespace iodrift::proc {
namespace {

// Hard cap on exported fields, whatever the regex says (a 6.x kernel prints ~190): a /proc
// tree with 100k fields must not turn into a 13 MB scrape.
constexpr std::size_t kMaxVmstatFields = 1024;

class VmstatCollector final : public Collector {
 public:
  explicit VmstatCollector(const VmstatOptions& options)
      : filter_(VmstatFieldsRegex(options.fields), "") {}

  std::string_view Name() const override { return "vmstat"; }

  Expected<void> Collect(const ProcRoot& root,
                         std::vector<prometheus::MetricFamily>& out) const override {
    auto vmstat = ReadVmstat(root);
    if (!vmstat) return tl::unexpected(vmstat.error());
    std::size_t exported = 0;
    for (const auto& field : vmstat->fields) {
      if (exported == kMaxVmstatFields) break;
      if (!filter_.Matches(field.name)) continue;
      ++exported;
      auto family =
          MakeFamily("iodrift_vmstat_" + SanitizeMetricName(field.name),
                     "/proc/vmstat field " + field.name + ".", prometheus::MetricType::Untyped);
      AddSample(family, static_cast<double>(field.value));
      out.push_back(std::move(family));
    }
    return {};
  }

 private:
  NameFilter filter_;
};

}  // namespace

std::unique_ptr<Collector> MakeVmstatCollector(const VmstatOptions& options) {
  return std::make_unique<VmstatCollector>(options);
}

}  // namespace iodrift::proc
