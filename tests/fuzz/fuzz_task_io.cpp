// libFuzzer target for ParseTaskIo: any bytes must yield a value or an error, never a crash; an
// error always carries a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "collectors/proc/task_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  iodrift::Expected<iodrift::proc::TaskIo> io = iodrift::proc::ParseTaskIo(text);
  if (!io && io.error().message.empty()) std::abort();
  return 0;
}
