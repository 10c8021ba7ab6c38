// Diagnoser: runs the opt-in recovery experiment (`iodriftctl diagnose NAME`, D-Bus Diagnose;
// issue 15 item 3) — the I/O half of collectors/analysis/diagnose.h.
//
// One experiment at a time, on a thread of its own: it measures the probe through the
// scheduler (Scheduler::RunNow, so the run takes the probe's device lane like any other and a
// scrape never waits for it), then walks the ladder drop_caches (writes 1 to
// <vm_dir>/drop_caches), drop_slab (2), compact (1 to compact_memory), warm_free_memory (maps
// min(warm_bytes, MemAvailable / 4) of anonymous memory, touches every page, unmaps it) and
// re-measures after each, stopping at the first step that restores the figure to within 10 %
// of the baseline. A `direct` probe on the same target (the twin) is measured after the probe
// at every step. The report goes to ProbeStates (RecordDiagnosis) and to the caller's future.
//
// Safety: refused while PSI memory some avg10 > max_memory_some_avg10 or MemAvailable <
// min_available_bytes; the whole experiment is bounded by max_duration (a step that would
// start later is reported `skipped`); memory use is bounded by warm_bytes; nothing is ever
// written to a target (only /proc/sys/vm/* and the daemon's own anonymous memory). Without the
// right to write /proc/sys/vm/* (not root) those steps are reported `skipped` with the errno.
//
// Thread-safety: Start may be called from any thread; the Diagnoser must be destroyed before
// the Scheduler and ProbeStates it was given (the destructor cancels and joins the experiment).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "collectors/analysis/diagnose.h"
#include "collectors/analysis/probe_states.h"
#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"

namespace iodrift::daemon {

class Scheduler;

struct DiagnoseOptions {
  bool enabled = false;                              // config diagnose.enabled
  std::uint64_t warm_bytes = 1ULL << 30;             // config diagnose.warm_size (cap)
  std::uint64_t min_available_bytes = 512ULL << 20;  // refused below (config)
  double max_memory_some_avg10 = 10.0;               // refused above, percent (config)
  std::chrono::seconds max_duration{300};            // whole experiment (config diagnose.timeout)
  std::filesystem::path vm_dir = "/proc/sys/vm";     // where drop_caches/compact_memory are
  ProcRoot proc_root;                                // meminfo and pressure
};

class Diagnoser {
 public:
  Diagnoser(DiagnoseOptions options, Scheduler& scheduler, probes::ProbeStates& states);
  ~Diagnoser();  // cancels a running experiment and joins it
  Diagnoser(const Diagnoser&) = delete;
  Diagnoser& operator=(const Diagnoser&) = delete;

  void SetOptions(DiagnoseOptions options);  // reload; takes effect for the next experiment

  // Starts an experiment on probe `name`. Errors: EPERM diagnose is off; ENOENT no such probe;
  // EBUSY one is running; EAGAIN refused by the safety rules (the message says which);
  // ENODATA no baseline yet.
  Expected<std::shared_future<probes::DiagnoseReport>> Start(const std::string& name);

 private:
  probes::DiagnoseReport Run(const std::string& name, const std::string& twin,
                             std::optional<double> baseline, const DiagnoseOptions& options);

  Scheduler& scheduler_;
  probes::ProbeStates& states_;
  std::mutex mu_;
  DiagnoseOptions options_;
  bool running_ = false;
  std::atomic<bool> cancel_{false};
  std::thread worker_;
};

}  // namespace iodrift::daemon
