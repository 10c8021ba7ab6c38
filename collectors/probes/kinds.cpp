#include "collectors/probes/kinds.h"

#include <array>
#include <string>

namespace iodrift::probes {
namespace {

using std::chrono::milliseconds;

// One row per kind, in ProbeKind order.
constexpr std::array<KindTraits, 6> kKinds = {{
    {.kind = ProbeKind::kCached,
     .name = "cached",
     .ops_figure = false,
     .op = "",
     .reads_phrase = "cached reads",
     .has_target = true,
     .size_key = SizeKey::kBytes,
     .takes_readers = false,
     .takes_members = true,
     .min_interval = milliseconds(100),
     .default_time_budget = milliseconds(100),
     .twin = std::nullopt,
     .bypasses_page_cache = false},
    {.kind = ProbeKind::kBuffered,
     .name = "buffered",
     .ops_figure = false,
     .op = "",
     .reads_phrase = "buffered disk reads",
     .has_target = true,
     .size_key = SizeKey::kBytes,
     .takes_readers = true,
     .takes_members = true,
     .min_interval = milliseconds(1000),
     .default_time_budget = milliseconds(250),
     .twin = ProbeKind::kDirect,
     .bypasses_page_cache = false},
    {.kind = ProbeKind::kDirect,
     .name = "direct",
     .ops_figure = false,
     .op = "",
     .reads_phrase = "O_DIRECT disk reads",
     .has_target = true,
     .size_key = SizeKey::kBytes,
     .takes_readers = true,
     .takes_members = true,
     .min_interval = milliseconds(1000),
     .default_time_budget = milliseconds(250),
     .twin = ProbeKind::kBuffered,
     .bypasses_page_cache = true},
    {.kind = ProbeKind::kRandom,
     .name = "random",
     .ops_figure = true,
     .op = "read",
     .reads_phrase = "random reads",
     .has_target = true,
     .size_key = SizeKey::kRequests,
     .takes_readers = true,
     .takes_members = true,
     .min_interval = milliseconds(1000),
     .default_time_budget = milliseconds(250),
     .twin = std::nullopt,
     .bypasses_page_cache = false},
    {.kind = ProbeKind::kMetadata,
     .name = "metadata",
     .ops_figure = true,
     .op = "create",
     .reads_phrase = "file creates",
     .has_target = true,
     .size_key = SizeKey::kFiles,
     .takes_readers = false,
     .takes_members = false,
     .min_interval = milliseconds(100),
     .default_time_budget = milliseconds(250),
     .twin = std::nullopt,
     .bypasses_page_cache = false},
    {.kind = ProbeKind::kMemory,
     .name = "memory",
     .ops_figure = false,
     .op = "",
     .reads_phrase = "memcpy (streaming)",
     .has_target = false,
     .size_key = SizeKey::kBytes,
     .takes_readers = false,
     .takes_members = false,
     .min_interval = milliseconds(1000),
     .default_time_budget = milliseconds(100),
     .twin = std::nullopt,
     .bypasses_page_cache = false},
}};

constexpr bool RowsInKindOrder() {
  for (std::size_t i = 0; i < kKinds.size(); ++i) {
    if (static_cast<std::size_t>(kKinds[i].kind) != i) return false;
  }
  return true;
}
static_assert(RowsInKindOrder(), "kKinds must list every ProbeKind once, in enum order");

}  // namespace

const KindTraits& Traits(ProbeKind kind) {
  const auto index = static_cast<std::size_t>(kind);
  return kKinds[index < kKinds.size() ? index : 0];
}

std::span<const KindTraits> AllKinds() { return kKinds; }

std::string_view KindChoices() {
  static const std::string choices = [] {
    std::string out;
    for (const KindTraits& k : kKinds) {
      if (!out.empty()) out += "|";
      out += k.name;
    }
    return out;
  }();
  return choices;
}

std::uint64_t SpecSize(const ProbeSpec& spec) {
  switch (Traits(spec.kind).size_key) {
    case SizeKey::kFiles:
      return spec.files;
    case SizeKey::kRequests:
      return spec.requests;
    case SizeKey::kBytes:
      break;
  }
  return spec.size;
}

}  // namespace iodrift::probes
