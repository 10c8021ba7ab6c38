// /proc/meminfo: system memory usage (Documentation/filesystems/proc.rst, "meminfo").
//
//   MemTotal:       24563112 kB
//   HugePages_Total:       0
//
// Tolerance: fields are kept in file order under the kernel's name; values with a "kB" unit are
// converted to bytes; unit-less values (HugePages_*) are kept as counts. Lines that do not look
// like "Name: number [kB]" are skipped and counted in `malformed_lines`. Unknown fields are kept
// (newer kernels add some); nothing is required to be present. A name printed twice (never seen
// from a real kernel) keeps its first value and the repeat counts as malformed, so names in
// `fields` are unique. A value whose byte figure overflows 64 bits is malformed, never wrapped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"

namespace iodrift::proc {

struct MeminfoField {
  std::string name;     // kernel name, e.g. "Active(file)"
  std::uint64_t value;  // bytes when `is_bytes`, else a plain count
  bool is_bytes;        // the line carried a "kB" unit
};

struct Meminfo {
  std::vector<MeminfoField> fields;
  std::size_t malformed_lines = 0;

  // Value of `name` (bytes or count), nullopt when the kernel did not print it.
  std::optional<std::uint64_t> Get(std::string_view name) const;
};

// Pure; never fails (an empty or garbage text yields no fields and a malformed count).
Meminfo ParseMeminfo(std::string_view text);
// Reads root/meminfo. Fails with the errno of the read, or with EINVAL when no field parsed.
Expected<Meminfo> ReadMeminfo(const ProcRoot& root);

}  // namespace iodrift::proc
