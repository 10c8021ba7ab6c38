// Test helper: record a hand-made ProbeResult into ProbeStates the way the daemon does — its
// probe defined first (Define keeps the probes already defined), then the result stamped with
// that probe's generation.
//
// Thread-safety: test-only.
#pragma once

#include <vector>

#include "collectors/analysis/probe_states.h"
#include "collectors/analysis/verdict.h"

namespace iodrift::probes::testing {
using namespace ::iodrift::analysis;  // NOLINT: tests of the analysis of probe results

// The spec a result's probe would have (name, kind, target, its configured amount).
inline probes::ProbeSpec SpecOf(const ProbeResult& r) {
  probes::ProbeSpec spec;
  spec.name = r.name;
  spec.kind = r.kind;
  spec.target = r.target;
  const std::uint64_t amount = r.spec_size.value_or(0);
  if (r.kind == probes::ProbeKind::kMetadata) {
    spec.files = static_cast<std::uint32_t>(amount);
  } else if (r.kind == probes::ProbeKind::kRandom) {
    spec.requests = static_cast<std::uint32_t>(amount);
  } else {
    spec.size = amount;
  }
  return spec;
}

// Defines r's probe in `states` (others stay as they are) and records `r`. Returns Record's
// answer (true: recorded).
inline bool DefineAndRecord(ProbeStates& states, ProbeResult r) {
  std::vector<probes::ProbeSpec> specs;
  bool found = false;
  const probes::ProbeSpec mine = SpecOf(r);
  const auto snapshot = states.Snapshot();  // held for the loop (C++20 range-for)
  for (const auto& state : *snapshot) {
    if (state->spec.name == r.name) {
      specs.push_back(mine);
      found = true;
    } else {
      specs.push_back(state->spec);
    }
  }
  if (!found) specs.push_back(mine);
  for (const auto& defined : states.Define(specs)) {
    if (defined.spec.name == r.name) r.generation = defined.generation;
  }
  return states.Record(r);
}

// `all` with every state's verdict stored the way ProbeStates stores it (verdict.h StoreVerdict),
// for snapshots built by hand: every output reads the stored verdict.
inline ProbeSnapshot WithStoredVerdicts(const ProbeSnapshot& all) {
  ProbeSnapshot out;
  for (const auto& state : all) {
    auto stored = std::make_shared<ProbeState>(*state);
    StoreVerdict(*stored, FindTwin(all, *state));
    out.push_back(std::move(stored));
  }
  return out;
}

}  // namespace iodrift::probes::testing
