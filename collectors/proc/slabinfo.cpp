// Parser and reader for /proc/slabinfo (see slabinfo.h for the format and the tolerance policy).
#include "collectors/proc/slabinfo.h"

#include <unistd.h>

#include <cerrno>

#include "collectors/common/text.h"

namespace iodrift::proc {

namespace {

constexpr std::string_view kHeaderPrefix = "slabinfo - version:";

// Checks the first line: "slabinfo - version: 2.1". Only 2.x is understood (SLAB and SLUB both
// print 2.1 since 2.6.x; 1.x had different columns).
bool IsSupportedHeader(std::string_view line) {
  line = text::Trim(line);
  if (line.substr(0, kHeaderPrefix.size()) != kHeaderPrefix) return false;
  std::string_view version = text::Trim(line.substr(kHeaderPrefix.size()));
  if (version.size() < 3 || version.substr(0, 2) != "2.") return false;
  return text::ParseU64(version.substr(2)).has_value();
}

// Parses one cache line into `out`; false when it is malformed or a byte figure overflows.
bool ParseCacheLine(std::string_view line, std::uint64_t page_size, SlabCache& out) {
  // Split on whitespace: a name wider than the 17-character column pushes the numbers right
  // instead of being cut, so fixed columns would be wrong ("dmaengine-unmap-128   1206 ...").
  std::vector<std::string_view> f = text::Fields(line);
  if (f.size() < 6 || !text::IsPrintableWord(f[0])) return false;
  std::optional<std::uint64_t> numbers[5];
  for (std::size_t i = 0; i < 5; ++i) {
    numbers[i] = text::ParseU64(f[i + 1]);
    if (!numbers[i]) return false;
  }
  out.name = std::string(f[0]);
  out.active_objects = *numbers[0];
  out.objects = *numbers[1];
  out.object_size = *numbers[2];
  out.objects_per_slab = *numbers[3];
  out.pages_per_slab = *numbers[4];
  out.active_slabs = 0;
  out.slabs = 0;

  // ": slabdata <active_slabs> <num_slabs> <sharedavail>" — located by its keyword, not by
  // position, so an absent ": tunables" group does not shift it.
  bool has_slabdata = false;
  for (std::size_t i = 6; i < f.size(); ++i) {
    if (f[i] != "slabdata") continue;
    if (i + 2 >= f.size()) return false;
    std::optional<std::uint64_t> active_slabs = text::ParseU64(f[i + 1]);
    std::optional<std::uint64_t> slabs = text::ParseU64(f[i + 2]);
    if (!active_slabs || !slabs) return false;
    out.active_slabs = *active_slabs;
    out.slabs = *slabs;
    has_slabdata = true;
    break;
  }

  // Extra columns without a complete slabdata group: a line cut short by a truncated read, or a
  // layout this parser does not know. Either way its byte figure would be a guess.
  if (!has_slabdata && f.size() > 6) return false;

  std::optional<std::uint64_t> bytes;
  if (has_slabdata) {
    std::optional<std::uint64_t> pages = text::CheckedMul(out.slabs, out.pages_per_slab);
    if (pages) bytes = text::CheckedMul(*pages, page_size);
  } else {
    bytes = text::CheckedMul(out.objects, out.object_size);
  }
  if (!bytes) return false;
  out.bytes = *bytes;
  return true;
}

}  // namespace

Expected<Slabinfo> ParseSlabinfo(std::string_view text, std::uint64_t page_size) {
  Slabinfo out;
  bool saw_header = false;
  for (std::string_view line : text::Lines(text)) {
    if (text::Trim(line).empty()) continue;
    if (!saw_header) {
      if (!IsSupportedHeader(line)) {
        // Quote at most 40 bytes of the line, binary garbage replaced, so the message stays a
        // readable log line.
        std::string first(text::Trim(line).substr(0, 40));
        for (char& c : first) {
          if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
        }
        return Fail(EINVAL, "unsupported slabinfo header \"" + first +
                                "\" (expected \"slabinfo - version: 2.x\")");
      }
      saw_header = true;
      continue;
    }
    if (text::Trim(line).front() == '#') continue;  // the column legend
    SlabCache cache;
    std::optional<std::uint64_t> total;
    if (!ParseCacheLine(line, page_size, cache) ||
        !(total = text::CheckedAdd(out.total_bytes, cache.bytes))) {
      ++out.malformed_lines;
      continue;
    }
    out.total_bytes = *total;
    out.caches.push_back(std::move(cache));
  }
  if (!saw_header) return Fail(EINVAL, "empty slabinfo (no \"slabinfo - version\" header)");
  return out;
}

Expected<Slabinfo> ReadSlabinfo(const ProcRoot& root) {
  Expected<std::string> text = root.Read("slabinfo");
  if (!text) {
    Error error = text.error();
    if (error.code == EACCES || error.code == EPERM) {
      error.message += " (mode 0400; run as root or grant CAP_DAC_READ_SEARCH)";
    }
    return tl::unexpected(std::move(error));
  }
  long page_size = ::sysconf(_SC_PAGESIZE);
  if (page_size <= 0) page_size = 4096;
  Expected<Slabinfo> parsed = ParseSlabinfo(*text, static_cast<std::uint64_t>(page_size));
  if (!parsed) {
    parsed.error().message =
        "parse " + root.Path("slabinfo").string() + ": " + parsed.error().message;
  }
  return parsed;
}

}  // namespace iodrift::proc
