#include "collectors/proc/balloon.h"

#include <system_error>

#include "collectors/common/proc_root.h"
#include "collectors/common/text.h"

namespace iodrift::proc {

namespace {
constexpr std::size_t kReportingBit = 5;  // VIRTIO_BALLOON_F_REPORTING
}

std::optional<bool> VirtioFeatureBit(std::string_view features, std::size_t bit) {
  features = text::Trim(features);
  for (char c : features) {
    if (c != '0' && c != '1') return std::nullopt;
  }
  if (bit >= features.size()) return std::nullopt;
  return features[bit] == '1';
}

std::optional<BalloonState> ReadBalloonState(const std::filesystem::path& sys_root) {
  std::error_code ec;
  std::filesystem::path driver = sys_root / "bus/virtio/drivers/virtio_balloon";
  for (const auto& entry : std::filesystem::directory_iterator(driver, ec)) {
    if (entry.path().filename().string().rfind("virtio", 0) != 0) continue;
    auto features = ReadWholeFile(entry.path() / "features", 4096);
    if (!features) continue;
    auto bit = VirtioFeatureBit(*features, kReportingBit);
    if (!bit) continue;
    BalloonState state;
    state.free_page_reporting = *bit;
    if (auto order =
            ReadWholeFile(sys_root / "module/page_reporting/parameters/page_reporting_order", 64)) {
      state.page_reporting_order = text::ParseU64(text::Trim(*order));
    }
    return state;
  }
  return std::nullopt;
}

}  // namespace iodrift::proc
