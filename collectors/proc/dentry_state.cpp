// Parser and reader for /proc/sys/fs/dentry-state (see dentry_state.h for the format and the
// tolerance policy).
#include "collectors/proc/dentry_state.h"

#include <cerrno>
#include <vector>

#include "collectors/common/text.h"

namespace iodrift::proc {

Expected<DentryState> ParseDentryState(std::string_view text) {
  // One line of tab-separated numbers (the kernel prints "%ld\t%ld\t%ld\t%ld\t%ld\t%ld\n").
  std::vector<std::string_view> lines = text::Lines(text);
  std::string_view first = lines.empty() ? std::string_view() : lines[0];
  std::vector<std::string_view> f = text::Fields(text::Trim(first));
  if (f.size() < 2) {
    return Fail(EINVAL,
                "dentry-state: expected at least 2 fields, got " + std::to_string(f.size()));
  }
  std::optional<std::uint64_t> total = text::ParseU64(f[0]);
  std::optional<std::uint64_t> unused = text::ParseU64(f[1]);
  if (!total || !unused) {
    return Fail(EINVAL, "dentry-state: nr_dentry and nr_unused must be non-negative integers");
  }
  DentryState out;
  out.total = *total;
  out.unused = *unused;
  // Field 5 is nr_negative since 5.0 (a zero "dummy" before). A value that does not parse is
  // reported as absent rather than failing the two counts that did.
  if (f.size() >= 5) out.negative = text::ParseU64(f[4]);
  return out;
}

Expected<DentryState> ReadDentryState(const ProcRoot& root) {
  Expected<std::string> text = root.Read("sys/fs/dentry-state");
  if (!text) return tl::unexpected(text.error());
  Expected<DentryState> parsed = ParseDentryState(*text);
  if (!parsed) {
    parsed.error().message =
        "parse " + root.Path("sys/fs/dentry-state").string() + ": " + parsed.error().message;
  }
  return parsed;
}

}  // namespace iodrift::proc
