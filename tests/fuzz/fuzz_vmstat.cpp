// libFuzzer target for ParseVmstat: any bytes must parse without a crash into unique, printable
// names.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <unordered_set>

#include "collectors/proc/vmstat.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  iodrift::proc::Vmstat v = iodrift::proc::ParseVmstat(text);
  std::unordered_set<std::string_view> names;
  for (const iodrift::proc::VmstatField& f : v.fields) {
    if (f.name.empty() || !names.insert(f.name).second) std::abort();
    if (f.name.find_first_of(" \t\n") != std::string::npos) std::abort();
  }
  if (v.fields.size() + v.malformed_lines > size) std::abort();
  return 0;
}
