// /proc/vmstat: virtual memory counters and gauges, one "name value" pair per line
// (no kernel doc beyond include/linux/vm_event_item.h and mm/vmstat.c).
//
//   nr_free_pages 5767632
//   pgscan_kswapd 0
//
// Tolerance: unknown names are kept in file order; lines that are not exactly two fields (a
// printable name and an integer) are skipped and counted. Some entries are signed in the kernel
// (e.g. nr_* per-cpu drift can print negative numbers on old kernels) — those are parsed as
// signed and kept. A value beyond INT64_MAX is malformed (never wrapped); a repeated name keeps
// its first value and the repeat counts as malformed, so names in `fields` are unique.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"

namespace iodrift::proc {

struct VmstatField {
  std::string name;
  std::int64_t value;
};

struct Vmstat {
  std::vector<VmstatField> fields;
  std::size_t malformed_lines = 0;

  std::optional<std::int64_t> Get(std::string_view name) const;
};

// Pure; never fails (an empty or garbage text yields no fields and a malformed count).
Vmstat ParseVmstat(std::string_view text);
// Reads root/vmstat. Fails with the errno of the read, or with EINVAL when no field parsed.
Expected<Vmstat> ReadVmstat(const ProcRoot& root);

}  // namespace iodrift::proc
