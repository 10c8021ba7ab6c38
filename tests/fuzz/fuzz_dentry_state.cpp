// libFuzzer target for ParseDentryState: any bytes must yield a value or an error, never a
// crash; an error always carries a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "collectors/proc/dentry_state.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  iodrift::Expected<iodrift::proc::DentryState> d = iodrift::proc::ParseDentryState(text);
  if (!d && d.error().message.empty()) std::abort();
  return 0;
}
