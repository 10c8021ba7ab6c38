// dentries collector: dentry cache size from /proc/sys/fs/dentry-state. A dcache full of
// negative dentries is one of the slab states that slows reclaim on a long-running machine.
#include "collectors/common/families.h"
#include "collectors/proc/dentry_state.h"
#include "collectors/proc/state_collectors.h"

namespace iodrift::proc {
namespace {

class DentriesCollector final : public Collector {
 public:
  std::string_view Name() const override { return "dentries"; }

  Expected<void> Collect(const ProcRoot& root,
                         std::vector<prometheus::MetricFamily>& out) const override {
    auto state = ReadDentryState(root);
    if (!state) return tl::unexpected(state.error());
    auto family = MakeFamily("iodrift_dentries",
                             "Dentries in the dentry cache by state (/proc/sys/fs/dentry-state).",
                             prometheus::MetricType::Gauge);
    AddSample(family, static_cast<double>(state->total), {{"state", "total"}});
    AddSample(family, static_cast<double>(state->unused), {{"state", "unused"}});
    if (state->negative) {
      AddSample(family, static_cast<double>(*state->negative), {{"state", "negative"}});
    }
    out.push_back(std::move(family));
    return {};
  }
};

}  // namespace

std::unique_ptr<Collector> MakeDentriesCollector() { return std::make_unique<DentriesCollector>(); }

}  // namespace iodrift::proc
