// libFuzzer target for ParsePressure: any bytes must parse without a crash into finite,
// non-negative averages.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "collectors/proc/pressure.h"

namespace {

void Check(const std::optional<iodrift::proc::PressureLine>& line) {
  if (!line) return;
  for (double avg : {line->avg10, line->avg60, line->avg300}) {
    if (!std::isfinite(avg) || avg < 0) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  iodrift::proc::Pressure p = iodrift::proc::ParsePressure(text);
  Check(p.some);
  Check(p.full);
  return 0;
}
