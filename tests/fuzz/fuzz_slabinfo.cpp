// libFuzzer target for ParseSlabinfo: any bytes must parse (or fail with a value) without a
// crash; total_bytes must be the exact sum of the caches' bytes. The first byte picks the page
// size so the overflow checks see sizes other than 4 KiB.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "collectors/proc/slabinfo.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint64_t page_size = 4096;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (size > 0 && data[0] >= 0xf0) {
    page_size = std::uint64_t{1} << (data[0] - 0xf0 + 12);  // 4 KiB .. 128 MiB
    text.remove_prefix(1);
  }
  iodrift::Expected<iodrift::proc::Slabinfo> s = iodrift::proc::ParseSlabinfo(text, page_size);
  if (!s) {
    if (s.error().message.empty()) std::abort();
    return 0;
  }
  std::uint64_t sum = 0;
  for (const iodrift::proc::SlabCache& c : s->caches) {
    if (c.name.empty() || __builtin_add_overflow(sum, c.bytes, &sum)) std::abort();
  }
  if (sum != s->total_bytes) std::abort();
  return 0;
}
