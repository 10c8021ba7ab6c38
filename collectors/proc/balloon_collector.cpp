// balloon collector: the virtio balloon's free page reporting state (see balloon.h). On a machine
// without a balloon it exports nothing and still succeeds: absence is the normal bare-metal case.
#include "collectors/common/families.h"
#include "collectors/proc/balloon.h"
#include "collectors/proc/state_collectors.h"

namespace iodrift::proc {
namespace {

class BalloonCollector final : public Collector {
 public:
  explicit BalloonCollector(std::filesystem::path sys_root) : sys_root_(std::move(sys_root)) {}

  std::string_view Name() const override { return "balloon"; }

  Expected<void> Collect(const ProcRoot& /*root*/,
                         std::vector<prometheus::MetricFamily>& out) const override {
    auto state = ReadBalloonState(sys_root_);
    if (!state) return {};
    auto reporting = MakeFamily(
        "iodrift_balloon_free_page_reporting",
        "1 when the virtio balloon reports free pages to the host (VIRTIO_BALLOON_F_REPORTING): "
        "memory that stays free is taken back and slow to allocate again.",
        prometheus::MetricType::Gauge);
    AddSample(reporting, state->free_page_reporting ? 1 : 0);
    out.push_back(std::move(reporting));
    if (state->page_reporting_order) {
      auto order = MakeFamily("iodrift_balloon_page_reporting_order",
                              "Smallest buddy order of free blocks reported to the host.",
                              prometheus::MetricType::Gauge);
      AddSample(order, static_cast<double>(*state->page_reporting_order));
      out.push_back(std::move(order));
    }
    return {};
  }

 private:
  std::filesystem::path sys_root_;
};

}  // namespace

std::unique_ptr<Collector> MakeBalloonCollector(const std::filesystem::path& sys_root) {
  return std::make_unique<BalloonCollector>(sys_root);
}

}  // namespace iodrift::proc
