#include "collectors/probes/probe_spec.h"

#include <array>

namespace iodrift::probes {
namespace {

constexpr std::array<std::string_view, 6> kKindNames = {"cached", "buffered", "direct",
                                                        "random", "metadata", "memory"};

}  // namespace

std::string_view ProbeKindName(ProbeKind kind) {
  const auto index = static_cast<std::size_t>(kind);
  if (index < kKindNames.size()) return kKindNames[index];
  return "unknown";
}

std::optional<ProbeKind> ParseProbeKind(std::string_view name) {
  for (std::size_t i = 0; i < kKindNames.size(); ++i) {
    if (kKindNames[i] == name) return static_cast<ProbeKind>(i);
  }
  return std::nullopt;
}

bool KindTakesReaders(ProbeKind kind) {
  return kind == ProbeKind::kBuffered || kind == ProbeKind::kDirect || kind == ProbeKind::kRandom;
}

Duration MinInterval(ProbeKind kind) {
  using std::chrono::milliseconds;
  return kind == ProbeKind::kCached || kind == ProbeKind::kMetadata ? milliseconds(100)
                                                                    : milliseconds(1000);
}

}  // namespace iodrift::probes
