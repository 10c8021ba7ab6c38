// Parser and reader for /proc/meminfo (see meminfo.h for the format and the tolerance policy).
#include "collectors/proc/meminfo.h"

#include <cerrno>
#include <unordered_set>

#include "collectors/common/text.h"

namespace iodrift::proc {

std::optional<std::uint64_t> Meminfo::Get(std::string_view name) const {
  for (const MeminfoField& f : fields) {
    if (f.name == name) return f.value;
  }
  return std::nullopt;
}

namespace {

// Parses "Name:   value [kB]" into `out`; false when the line does not have that shape or the
// value does not fit in 64 bits once converted to bytes.
bool ParseLine(std::string_view line, MeminfoField& out) {
  std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view name = line.substr(0, colon);
  // No trimming: the kernel prints the name at column 0, and a name with spaces in it
  // ("Node 0 MemFree", the sysfs per-node format) is not this file.
  if (!text::IsPrintableWord(name)) return false;
  std::vector<std::string_view> rest = text::Fields(line.substr(colon + 1));
  if (rest.empty() || rest.size() > 2) return false;
  std::optional<std::uint64_t> value = text::ParseU64(rest[0]);
  if (!value) return false;
  bool is_bytes = false;
  if (rest.size() == 2) {
    if (rest[1] != "kB") return false;
    value = text::CheckedMul(*value, 1024);
    if (!value) return false;
    is_bytes = true;
  }
  out.name = std::string(name);
  out.value = *value;
  out.is_bytes = is_bytes;
  return true;
}

}  // namespace

Meminfo ParseMeminfo(std::string_view text) {
  Meminfo out;
  std::unordered_set<std::string> seen;
  for (std::string_view line : text::Lines(text)) {
    if (text::Trim(line).empty()) continue;
    MeminfoField field{};
    if (!ParseLine(line, field) || !seen.insert(field.name).second) {
      // A repeated name is never printed by a real kernel; keeping the first keeps names unique
      // for the collector.
      ++out.malformed_lines;
      continue;
    }
    out.fields.push_back(std::move(field));
  }
  return out;
}

Expected<Meminfo> ReadMeminfo(const ProcRoot& root) {
  Expected<std::string> text = root.Read("meminfo");
  if (!text) return tl::unexpected(text.error());
  Meminfo parsed = ParseMeminfo(*text);
  if (parsed.fields.empty()) {
    return Fail(EINVAL, "parse " + root.Path("meminfo").string() + ": no fields (" +
                            std::to_string(parsed.malformed_lines) + " malformed lines)");
  }
  return parsed;
}

}  // namespace iodrift::proc
