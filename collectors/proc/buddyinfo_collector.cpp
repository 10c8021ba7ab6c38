// buddyinfo collector: free blocks per node, zone and order (fragmentation at a glance).
#include "collectors/common/families.h"
#include "collectors/proc/buddyinfo.h"
#include "collectors/proc/state_collectors.h"

namespace iodrift::proc {
namespace {

class BuddyinfoCollector final : public Collector {
 public:
  std::string_view Name() const override { return "buddyinfo"; }

  Expected<void> Collect(const ProcRoot& root,
                         std::vector<prometheus::MetricFamily>& out) const override {
    auto buddyinfo = ReadBuddyinfo(root);
    if (!buddyinfo) return tl::unexpected(buddyinfo.error());
    auto family = MakeFamily("iodrift_buddyinfo_free_blocks",
                             "Free blocks of 2^order pages per node and zone (/proc/buddyinfo).",
                             prometheus::MetricType::Gauge);
    for (const auto& zone : buddyinfo->zones) {
      for (std::size_t order = 0; order < zone.free_blocks.size(); ++order) {
        AddSample(family, static_cast<double>(zone.free_blocks[order]),
                  {{"node", zone.node}, {"order", std::to_string(order)}, {"zone", zone.zone}});
      }
    }
    out.push_back(std::move(family));
    return {};
  }
};

}  // namespace

std::unique_ptr<Collector> MakeBuddyinfoCollector() {
  return std::make_unique<BuddyinfoCollector>();
}

}  // namespace iodrift::proc
