// /proc/self/stat and /proc/self/statm: the daemon's own CPU time, memory and start time, for the
// standard process_* self metrics (prometheus-cpp does not provide them).
//
//   /proc/self/stat:  1234 (iodriftd) S 1 1234 ... utime stime ... starttime vsize rss ...
//   /proc/self/statm: 5120 1024 512 ...   (sizes in pages: total, resident, shared, ...)
//
// Tolerance: the comm field may contain spaces and ')' — fields are counted from the *last* ')'.
// Too few fields is an error (man 5 proc).
#pragma once

#include <cstdint>
#include <string_view>

#include "collectors/common/error.h"

namespace iodrift::self {

struct ProcessStat {
  std::uint64_t utime_ticks = 0;       // field 14
  std::uint64_t stime_ticks = 0;       // field 15
  std::uint64_t start_time_ticks = 0;  // field 22, clock ticks after boot
  std::uint64_t virtual_bytes = 0;     // field 23
  std::uint64_t rss_pages = 0;         // field 24
};

Expected<ProcessStat> ParseProcessStat(std::string_view text);

}  // namespace iodrift::self
