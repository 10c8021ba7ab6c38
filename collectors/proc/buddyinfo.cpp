// Parser and reader for /proc/buddyinfo (see buddyinfo.h for the format and the tolerance
// policy).
#include "collectors/proc/buddyinfo.h"

#include <cerrno>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "collectors/common/text.h"

namespace iodrift::proc {

namespace {

// Parses "Node 0, zone   Normal  c0 c1 ..." (at least one count); nullopt otherwise.
std::optional<BuddyZone> ParseZoneLine(std::string_view line) {
  std::vector<std::string_view> f = text::Fields(line);
  if (f.size() < 5 || f[0] != "Node" || f[2] != "zone") return std::nullopt;
  std::string_view node = f[1];
  if (node.empty() || node.back() != ',') return std::nullopt;
  node.remove_suffix(1);
  if (!text::ParseU64(node) || !text::IsPrintableWord(f[3])) return std::nullopt;
  BuddyZone zone;
  zone.node = std::string(node);
  zone.zone = std::string(f[3]);
  zone.free_blocks.reserve(f.size() - 4);
  for (std::size_t i = 4; i < f.size(); ++i) {
    std::optional<std::uint64_t> count = text::ParseU64(f[i]);
    if (!count) return std::nullopt;
    zone.free_blocks.push_back(*count);
  }
  return zone;
}

}  // namespace

Buddyinfo ParseBuddyinfo(std::string_view text) {
  Buddyinfo out;
  std::vector<BuddyZone> candidates;
  for (std::string_view line : text::Lines(text)) {
    if (text::Trim(line).empty()) continue;
    std::optional<BuddyZone> zone = ParseZoneLine(line);
    if (!zone) {
      ++out.malformed_lines;
      continue;
    }
    candidates.push_back(std::move(*zone));
  }
  // Every zone of one kernel has the same number of orders (MAX_ORDER + 1, which depends on the
  // architecture and config). The width most lines agree on is taken as the truth, the wider one
  // on a tie (a truncated read makes a line shorter, never longer); the other lines are dropped.
  std::map<std::size_t, std::size_t> lines_by_width;
  for (const BuddyZone& zone : candidates) ++lines_by_width[zone.free_blocks.size()];
  std::size_t orders = 0;
  std::size_t best = 0;
  for (const auto& [width, lines] : lines_by_width) {
    if (lines >= best) {  // ascending widths: ">=" prefers the wider on a tie
      orders = width;
      best = lines;
    }
  }
  std::set<std::pair<std::string, std::string>> seen;
  for (BuddyZone& zone : candidates) {
    if (zone.free_blocks.size() != orders || !seen.emplace(zone.node, zone.zone).second) {
      ++out.malformed_lines;
      continue;
    }
    out.zones.push_back(std::move(zone));
  }
  return out;
}

Expected<Buddyinfo> ReadBuddyinfo(const ProcRoot& root) {
  Expected<std::string> text = root.Read("buddyinfo");
  if (!text) return tl::unexpected(text.error());
  Buddyinfo parsed = ParseBuddyinfo(*text);
  if (parsed.zones.empty()) {
    return Fail(EINVAL, "parse " + root.Path("buddyinfo").string() + ": no zones (" +
                            std::to_string(parsed.malformed_lines) + " malformed lines)");
  }
  return parsed;
}

}  // namespace iodrift::proc
