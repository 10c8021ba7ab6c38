// libFuzzer target for ParseMeminfo: any bytes must parse without a crash, and what comes out
// must keep the header's promises (unique printable names, malformed lines counted).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <unordered_set>

#include "collectors/proc/meminfo.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  iodrift::proc::Meminfo m = iodrift::proc::ParseMeminfo(text);
  std::unordered_set<std::string_view> names;
  for (const iodrift::proc::MeminfoField& f : m.fields) {
    if (f.name.empty() || !names.insert(f.name).second) std::abort();
    if (f.name.find_first_of(" \t\n:") != std::string::npos) std::abort();
    if (f.is_bytes && f.value % 1024 != 0) std::abort();
    if (m.Get(f.name) != f.value) std::abort();
  }
  return 0;
}
