// What a probe is, as configured: its kind and its spec. These types belong to the probes (the
// config loader fills them; config/config.h re-exports them as ProbeKind and
// ProbeSpec), so probe code does not depend on the whole configuration.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace iodrift::probes {

using Duration = std::chrono::milliseconds;

enum class ProbeKind { kCached, kBuffered, kDirect, kRandom, kMetadata, kMemory };

// "cached", "buffered", ... (the `kind` label value).
std::string_view ProbeKindName(ProbeKind kind);
std::optional<ProbeKind> ParseProbeKind(std::string_view name);

// `readers:` accepts 1 … kMaxReaders threads per step.
inline constexpr std::uint32_t kMaxReaders = 64;

// The shortest `interval:` a probe of `kind` may have: 100 ms for cached and metadata (a few
// page-cache reads or stat calls), 1 s for the kinds that evict, read the device or allocate
// (buffered, direct, random, memory). Shorter runs a probe back to back and keeps a core busy.
Duration MinInterval(ProbeKind kind);

// Which of the keys that have remote defaults the configuration set. The others take the remote
// defaults on each run whose target is on a remote filesystem at that moment (netfs.h
// WithRemoteDefaults); the loader only records what the file says.
struct GivenKeys {
  bool size = false, timeout = false, files = false, requests = false;

  bool operator==(const GivenKeys&) const = default;
};

struct ProbeSpec {
  std::string name;  // unique, [a-z0-9_.-]+; the `probe` label
  ProbeKind kind = ProbeKind::kCached;
  std::string target;  // block device, regular file or directory; empty for memory
  Duration interval = std::chrono::minutes(5);
  std::uint64_t size = 0;         // bytes per run; 0 = calibrate once (sequential kinds)
  std::uint32_t files = 64;       // metadata: files per run
  std::uint32_t requests = 1000;  // random: requests per run (enough for an honest p99)
  Duration timeout = std::chrono::seconds(30);
  Duration time_budget = std::chrono::milliseconds(250);  // stop a run after this much reading
  bool members = false;  // an array target: also probe each member disk (members.h)
  // buffered, direct, random: reader counts measured in turn, each a step of N threads reading
  // disjoint regions at once (readers.h). Empty = one reader, the classic probe.
  std::vector<std::uint32_t> readers;
  // `remote:` — the target is on a remote filesystem (true) or not (false), whatever its mount
  // looks like; nullopt = judged from the mount (netfs.h IsRemoteMount).
  std::optional<bool> remote;
  GivenKeys given;  // keys the file set (size, timeout, files, requests)

  // Every field: a reload keeps a probe's generation only when nothing differs
  // (probe_states.h; the scheduler test walks every field).
  bool operator==(const ProbeSpec&) const = default;
};

}  // namespace iodrift::probes
