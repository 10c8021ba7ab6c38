#include "collectors/probes/runner.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <exception>

#include "collectors/probes/buffered.h"
#include "collectors/probes/cached.h"
#include "collectors/probes/context.h"
#include "collectors/probes/direct.h"
#include "collectors/probes/io_util.h"
#include "collectors/probes/kinds.h"
#include "collectors/probes/members.h"
#include "collectors/probes/memory.h"
#include "collectors/probes/memory_room.h"
#include "collectors/probes/metadata.h"
#include "collectors/probes/random.h"

namespace iodrift::probes {
namespace {

// What the run pulled through the page cache or allocated, for the low_free_memory rule.
std::uint64_t WorkingSetBytes(const ProbeResult& r) {
  auto extra = [&](const char* key) -> std::uint64_t {
    auto it = r.extra.find(key);
    return it == r.extra.end() ? 0 : static_cast<std::uint64_t>(it->second);
  };
  switch (r.kind) {
    case ProbeKind::kCached:
      return extra("region_bytes");
    case ProbeKind::kBuffered:  // a readers curve reads the region once per step
      return std::min<std::uint64_t>(r.bytes, extra("region_bytes"));
    case ProbeKind::kMemory:
      return 2 * extra("stream_buffer_bytes");
    default:
      return 0;
  }
}

void RunKind(const ProbeSpec& spec, const ProbeEnv& env, const RunControl& control,
             ProbeResult& result) {
  switch (spec.kind) {
    case ProbeKind::kCached:
      return RunCachedProbe(spec, env, control, result);
    case ProbeKind::kBuffered:
      return RunBufferedProbe(spec, env, control, result);
    case ProbeKind::kDirect:
      return RunDirectProbe(spec, env, control, result);
    case ProbeKind::kRandom:
      return RunRandomProbe(spec, env, control, result);
    case ProbeKind::kMetadata:
      return RunMetadataProbe(spec, env, control, result);
    case ProbeKind::kMemory:
      return RunMemoryProbe(spec, env, control, result);
  }
  MarkFailed(result, Outcome::kError, "unknown probe kind");
}

// An error message when a directory target is no longer on the filesystem it was first probed
// on (see TargetDevices). stat() may block on a hung filesystem: this runs on the probe thread.
std::optional<std::string> DirectoryTargetMoved(const ProbeSpec& spec, const ProbeEnv& env) {
  if (!env.target_devices || spec.target.empty()) return std::nullopt;
  struct stat st {};
  if (::stat(spec.target.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  auto was = env.target_devices->CheckOrRecord(spec.target, st.st_dev);
  if (!was) return std::nullopt;
  auto dev = [](std::uint64_t d) {
    return std::to_string(major(d)) + ":" + std::to_string(minor(d));
  };
  return "target " + spec.target + " is now on device " + dev(st.st_dev) + ", first probed on " +
         dev(*was) +
         " (unmounted?); not probing the filesystem underneath. Reload (iodriftctl reload, "
         "SIGHUP) or restart iodriftd to accept the new filesystem";
}

}  // namespace

ProbeResult RunProbe(const ProbeSpec& spec, const ProbeEnv& env) {
  ProbeResult result;
  result.name = spec.name;
  result.kind = spec.kind;
  result.target = spec.target;
  result.spec_size = SpecSize(spec);
  result.outcome = Outcome::kError;
  result.start_time_seconds = WallSeconds();
  const double t0 = MonotonicSeconds();

  ScopedThreadPriority priority(env.io_class, env.io_level, env.nice);
  const RunContext context =
      RunContext::Begin(env.proc_root, env.own_io_stall ? env.own_io_stall->Avg10Share(t0) : 0.0);
  RunControl control;
  control.cancel = env.cancel;
  if (spec.timeout.count() > 0) {
    control.deadline_mono = t0 + std::chrono::duration<double>(spec.timeout).count();
  }
  try {
    if (auto moved = DirectoryTargetMoved(spec, env)) {
      MarkFailed(result, Outcome::kError, *moved);
    } else if (auto tight =
                   RoomProblem(spec, ReadMemoryRoom(env.proc_root, env.sys_root / "fs/cgroup"))) {
      MarkFailed(result, Outcome::kError, "not run: " + *tight);  // never OOM-killed mid-run
    } else {
      RunKind(spec, env, control, result);
      if (spec.members && result.success()) ProbeMembers(spec, env, control, &RunKind, result);
    }
  } catch (const std::exception& e) {  // bad_alloc and friends: a value, never a crash
    MarkFailed(result, Outcome::kError, std::string("probe failed: ") + e.what());
  } catch (...) {
    MarkFailed(result, Outcome::kError, "probe failed: unknown exception");
  }
  context.Finish(result, WorkingSetBytes(result));
  const double t1 = MonotonicSeconds();
  result.duration_seconds = t1 - t0;
  if (env.own_io_stall) {
    if (auto it = result.pressure_delta_us.find("io_some"); it != result.pressure_delta_us.end()) {
      // At most the run's own length: PSI "some" cannot stall one run for longer than it lasted.
      env.own_io_stall->Record(t1, std::min(static_cast<double>(it->second) / 1e6, t1 - t0));
    }
  }
  if (result.outcome == Outcome::kOk && result.error.empty() == false) result.error.clear();
  // cpu_*_seconds are the probe thread's only: with `readers:` the readers' CPU is in the time
  // parts (readers[i].time_seconds), not here.
  if (Traits(spec.kind).twin && result.bytes > 0 && result.readers.empty()) {
    result.extra["system_cpu_seconds_per_gib"] =
        result.cpu_system_seconds / (static_cast<double>(result.bytes) / (1ull << 30));
  }
  return result;
}

}  // namespace iodrift::probes
