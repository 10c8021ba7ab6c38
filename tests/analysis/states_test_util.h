// Test helper: record a hand-made ProbeResult into ProbeStates the way the daemon does — its
// probe defined first (Define keeps the probes already defined), then the result stamped with
// that probe's generation.
//
// Thread-safety: test-only.
#pragma once

#include <string>
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

// A run of 64 MiB on /dev/loop7 at `gib_per_s` with delay accounting on: `wait_share` of its wall
// time off-CPU wait, all of it block I/O, with nobody else on the device; `kernel_share` of it
// kernel CPU (at 0.5 GiB/s 0.3 is 0.6 s/GiB, at 0.005 GiB/s 0.003 the same).
inline ProbeResult LoopRun(const std::string& name, ProbeKind kind, double start, double gib_per_s,
                           double wait_share, double kernel_share = 0.003) {
  ProbeResult r;
  r.name = name;
  r.kind = kind;
  r.target = "/dev/loop7";
  r.outcome = Outcome::kOk;
  r.bytes = 64ull << 20;
  r.start_time_seconds = start;
  r.duration_seconds = static_cast<double>(r.bytes) / (gib_per_s * (1ull << 30));
  r.throughput_bytes_per_second = gib_per_s * (1ull << 30);
  TimeParts tp;
  tp.wall = r.duration_seconds;
  tp.kernel_cpu = kernel_share * tp.wall;
  tp.user_cpu = 0.01 * tp.wall;
  tp.runqueue_wait = 0.0;
  tp.device_wait = wait_share * tp.wall;
  tp.other = tp.wall - tp.kernel_cpu - tp.user_cpu - *tp.device_wait;
  tp.blkio_delay = tp.device_wait;  // delay accounting on: the wait is block I/O
  tp.device_others_share = 0.01;
  r.time_seconds = tp;
  r.target_info.device = "loop7";
  return r;
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
