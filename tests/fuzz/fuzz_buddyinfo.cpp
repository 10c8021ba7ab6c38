// libFuzzer target for ParseBuddyinfo: any bytes must parse without a crash; every zone kept
// has the same number of orders and a unique (node, zone) pair.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "collectors/proc/buddyinfo.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  iodrift::proc::Buddyinfo b = iodrift::proc::ParseBuddyinfo(text);
  std::set<std::pair<std::string, std::string>> seen;
  for (const iodrift::proc::BuddyZone& z : b.zones) {
    if (z.free_blocks.empty() || z.free_blocks.size() != b.zones[0].free_blocks.size()) {
      std::abort();
    }
    if (!seen.emplace(z.node, z.zone).second) std::abort();
  }
  return 0;
}
