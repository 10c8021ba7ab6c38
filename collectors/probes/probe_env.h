// What a probe run needs besides its ProbeSpec: where to read kernel state, where to keep state,
// how to be cancelled, and at which I/O and CPU priority to run.
//
// ProbeEnv is built once by the daemon (or a test) and passed by const reference to RunProbe
// (runner.h); RunControl is made per run from the spec's timeout and the env's cancel flag and
// is what each kind polls between system calls.
//
// Thread-safety: both are plain values; `cancel` points to an atomic the owner keeps alive for
// the whole run and may set from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "collectors/common/proc_root.h"
#include "collectors/probes/own_stall.h"

namespace iodrift::probes {

// I/O priority of the probe thread (ioprio_set(2)). Only BFQ and mq-deadline honour classes;
// `none` (NVMe, virtio, loop) ignores them (docs/probes.md, "Kernel facts the probes rely on").
enum class IoClass { kUnchanged, kBestEffort, kIdle };

// The filesystem each directory target was on when iodriftd first probed it. A directory whose
// filesystem was (lazily) unmounted is a bare directory on the parent filesystem: probing it would
// measure the wrong disk and write a probe file there. Thread-safe; shared by copies of a ProbeEnv.
class TargetDevices {
 public:
  // Records `device` for `directory` the first time; afterwards returns the recorded device when
  // it differs from `device`, else nullopt.
  std::optional<std::uint64_t> CheckOrRecord(const std::string& directory, std::uint64_t device) {
    std::lock_guard lock(mu_);
    auto [it, inserted] = devices_.emplace(directory, device);
    if (inserted || it->second == device) return std::nullopt;
    return it->second;
  }

  // What a file or block-device target was when first probed (target.h PinTarget): the path
  // that is opened (the configured one, or its resolution when that was a symlink) and the
  // object's identity. Returns the pinned identity (`now` when there was none).
  struct Identity {
    std::string open_path;
    unsigned type = 0;  // S_IFMT bits
    std::uint64_t dev = 0, ino = 0, rdev = 0;
  };
  std::optional<Identity> Pinned(const std::string& target) {
    std::lock_guard lock(mu_);
    auto it = pins_.find(target);
    if (it == pins_.end()) return std::nullopt;
    return it->second;
  }
  void Pin(const std::string& target, Identity identity) {
    std::lock_guard lock(mu_);
    pins_[target] = std::move(identity);
  }

  // Forgets every recorded filesystem and pinned target (a config reload): each directory is
  // accepted on the filesystem it is on at its next run, each target re-resolved, as after a
  // restart.
  void Forget() {
    std::lock_guard lock(mu_);
    devices_.clear();
    pins_.clear();
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::uint64_t> devices_;
  std::map<std::string, Identity> pins_;
};

struct ProbeEnv {
  ProcRoot proc_root;               // meminfo, vmstat, pressure, uptime, dentry-state
  std::filesystem::path state_dir;  // calibration lives in <state_dir>/calibration; "" = none
  const std::atomic<bool>* cancel = nullptr;  // set → the run stops at the next check
  IoClass io_class = IoClass::kBestEffort;
  int io_level = 7;         // 0 (highest) … 7 (lowest) for kBestEffort
  std::optional<int> nice;  // setpriority() of the probe thread during the run
  // Size of the probe file made inside a directory target (the larger of this and spec.size).
  std::uint64_t probe_file_bytes = 128ull << 20;
  std::filesystem::path sys_root = "/sys";  // sysfs, for block queue facts
  // When set, directory targets must stay on the filesystem they were first seen on.
  std::shared_ptr<TargetDevices> target_devices;
  // When set, each run records its I/O stall here and the io_pressure rule discounts it.
  std::shared_ptr<OwnIoStall> own_io_stall;
};

// Per-run stop conditions, polled by the kinds between system calls. A call blocked in the
// kernel cannot be interrupted from here; the scheduler handles that (daemon/scheduler.h).
struct RunControl {
  double deadline_mono = 0;  // CLOCK_MONOTONIC seconds; 0 = none
  const std::atomic<bool>* cancel = nullptr;

  bool Cancelled() const { return cancel != nullptr && cancel->load(std::memory_order_relaxed); }
  bool PastDeadline(double now_mono) const { return deadline_mono > 0 && now_mono > deadline_mono; }
};

}  // namespace iodrift::probes
