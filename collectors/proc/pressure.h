// /proc/pressure/{cpu,io,memory,irq}: pressure stall information
// (Documentation/accounting/psi.rst).
//
//   some avg10=0.00 avg60=0.00 avg300=0.00 total=12345
//   full avg10=0.00 avg60=0.00 avg300=0.00 total=6789
//
// Tolerance: either line may be missing (cpu has no "full" before 5.13; irq has only "full");
// keys may come in any order; unknown keys are ignored; a line without a parsable total= is
// skipped and counted, and so is a known key with a non-numeric (or negative) value, a repeated
// "some"/"full" line (the first is kept), and a line that is not "word key=value...". Missing
// avg keys read as 0. The file may lack a trailing newline.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"

namespace iodrift::proc {

struct PressureLine {
  double avg10 = 0, avg60 = 0, avg300 = 0;  // percent
  std::uint64_t total_us = 0;               // cumulative stall time, microseconds
};

struct Pressure {
  std::optional<PressureLine> some;
  std::optional<PressureLine> full;
  std::size_t malformed_lines = 0;
};

// Pure; never fails.
Pressure ParsePressure(std::string_view text);
// `resource` is one of "cpu", "io", "memory", "irq" (anything else: EINVAL). Fails with the errno
// of the read (ENOENT when the kernel has no PSI or no such resource) or with EINVAL when the
// file has neither a "some" nor a "full" line.
Expected<Pressure> ReadPressure(const ProcRoot& root, std::string_view resource);

}  // namespace iodrift::proc
