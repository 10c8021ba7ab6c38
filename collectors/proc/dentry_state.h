// /proc/sys/fs/dentry-state: dentry cache counters (Documentation/admin-guide/sysctl/fs.rst).
//
//   147021	120011	45	0	30541	0
//   nr_dentry nr_unused age_limit want_pages nr_negative dummy
//
// Tolerance: kernels before 5.0 print 0 in the fifth field (nr_negative did not exist); fewer
// than two numeric fields is an error; extra fields are ignored. `negative` is nullopt when the
// fifth field is absent or not a number. Only the first line is read.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"

namespace iodrift::proc {

struct DentryState {
  std::uint64_t total = 0;
  std::uint64_t unused = 0;
  std::optional<std::uint64_t> negative;
};

// Pure. Fails with EINVAL when the first two fields are missing or not non-negative integers.
Expected<DentryState> ParseDentryState(std::string_view text);
// Reads root/sys/fs/dentry-state; fails with the errno of the read or the parser's error.
Expected<DentryState> ReadDentryState(const ProcRoot& root);

}  // namespace iodrift::proc
