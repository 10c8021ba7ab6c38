// Parser and reader for /proc/vmstat (see vmstat.h for the format and the tolerance policy).
#include "collectors/proc/vmstat.h"

#include <cerrno>
#include <unordered_set>

#include "collectors/common/text.h"

namespace iodrift::proc {

std::optional<std::int64_t> Vmstat::Get(std::string_view name) const {
  for (const VmstatField& f : fields) {
    if (f.name == name) return f.value;
  }
  return std::nullopt;
}

Vmstat ParseVmstat(std::string_view text) {
  Vmstat out;
  const std::vector<std::string_view> lines = text::Lines(text);
  // Sized once: a scrape parses ~190 lines, and growing these per line was most of its
  // allocations.
  out.fields.reserve(lines.size());
  std::unordered_set<std::string_view> seen;
  seen.reserve(lines.size());
  std::vector<std::string_view> fields;
  for (std::string_view line : lines) {
    if (text::Trim(line).empty()) continue;
    text::Fields(line, fields);
    if (fields.size() != 2 || !text::IsPrintableWord(fields[0])) {
      ++out.malformed_lines;
      continue;
    }
    // Signed: a few gauges (per-cpu drift of nr_* on old kernels) can print negative. Event
    // counters are unsigned in the kernel but never reach 2^63; a value that does not fit is
    // reported as malformed rather than wrapped.
    std::optional<std::int64_t> value = text::ParseI64(fields[1]);
    if (!value || !seen.insert(fields[0]).second) {
      ++out.malformed_lines;
      continue;
    }
    out.fields.push_back(VmstatField{std::string(fields[0]), *value});
  }
  return out;
}

Expected<Vmstat> ReadVmstat(const ProcRoot& root) {
  Expected<std::string> text = root.Read("vmstat");
  if (!text) return tl::unexpected(text.error());
  Vmstat parsed = ParseVmstat(*text);
  if (parsed.fields.empty()) {
    return Fail(EINVAL, "parse " + root.Path("vmstat").string() + ": no fields (" +
                            std::to_string(parsed.malformed_lines) + " malformed lines)");
  }
  return parsed;
}

std::string VmstatFieldsRegex(std::string_view fields) {
  if (fields == kVmstatFieldsDefaultWord) return std::string(kDefaultVmstatFields);
  if (fields == kVmstatFieldsAllWord) return ".*";
  return std::string(fields);
}

}  // namespace iodrift::proc
