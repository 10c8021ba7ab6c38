#include "collectors/probes/probe_spec.h"

#include "collectors/probes/kinds.h"

namespace iodrift::probes {

std::string_view ProbeKindName(ProbeKind kind) {
  const auto index = static_cast<std::size_t>(kind);
  if (index < AllKinds().size()) return Traits(kind).name;
  return "unknown";
}

std::optional<ProbeKind> ParseProbeKind(std::string_view name) {
  for (const KindTraits& k : AllKinds()) {
    if (k.name == name) return k.kind;
  }
  return std::nullopt;
}

Duration MinInterval(ProbeKind kind) { return Traits(kind).min_interval; }

}  // namespace iodrift::probes
