// libFuzzer target for the boot parsers: the same bytes go to ParseStatBootTime, ParseUptime and
// ParseBootId; none may crash, and an accepted boot id must be 36 characters.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/proc/boot.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)iodrift::proc::ParseStatBootTime(text);
  std::optional<double> uptime = iodrift::proc::ParseUptime(text);
  if (uptime && (!std::isfinite(*uptime) || *uptime < 0)) std::abort();
  std::optional<std::string> id = iodrift::proc::ParseBootId(text);
  if (id && id->size() != 36) std::abort();
  return 0;
}
