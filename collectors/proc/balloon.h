// Free page reporting of a virtio balloon: whether the hypervisor takes back memory that stays
// free (VIRTIO_BALLOON_F_REPORTING, feature bit 5) and from which buddy order.
//
//   /sys/bus/virtio/drivers/virtio_balloon/virtio0/features   0110010100000…  (bit i = char i)
//   /sys/module/page_reporting/parameters/page_reporting_order  9
//
// Why it matters (docs/probes.md, "Why buffered next to direct"): with reporting on, free blocks of
// order ≥ page_reporting_order that stay free ~2 s are handed to the host, and a buffered read that
// allocates them again ran 5x slower here than one reusing just-freed memory, while O_DIRECT did
// not change. Tolerance: no balloon driver or device → nullopt (not an error: bare metal has none).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

namespace iodrift::proc {

struct BalloonState {
  bool free_page_reporting = false;
  std::optional<std::uint64_t> page_reporting_order;
};

// Bit `bit` of a virtio `features` string ("0110…"); nullopt when the string is too short or
// holds other characters.
std::optional<bool> VirtioFeatureBit(std::string_view features, std::size_t bit);

// Reads the first virtio_balloon device under `sys_root`; nullopt when there is none.
std::optional<BalloonState> ReadBalloonState(const std::filesystem::path& sys_root);

}  // namespace iodrift::proc
