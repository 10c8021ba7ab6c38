// The periodic probe scheduler: runs every configured probe every `interval` (±10 % jitter),
// one probe at a time per device, within a global concurrency limit, and survives probes that
// hang in the kernel.
//
// Model. Each device (probes::DeviceKey: a disk, a non-block filesystem, or "memory") has a lane:
// one worker thread that runs that device's probes one after another, so probes on the same
// device never overlap; different devices may run at once, up to `max_concurrent`. A dispatcher
// thread keeps the timetable: first runs come `first_run_delay` after Start, staggered by
// `stagger`; after a run starts, the probe's next run is due interval × U(0.9, 1.1) later
// (JitteredInterval). A due probe whose lane is busy waits for it (it is not run twice).
//
// Hung probes. A read blocked in the kernel (a dead FUSE daemon, a hard NFS mount, a dying disk)
// cannot be interrupted. When a run passes its spec.timeout, the dispatcher records a
// `timeout` result at once, sets the run's cancel flag (a probe that is merely slow stops at its
// next check), frees its slot in the global limit, and marks the lane stuck: no further probe is
// started on that device while the call is still inside the kernel — each probe that comes due
// there is recorded as `skipped` ("previous probe … still blocked") instead of piling up threads.
// When the call finally returns, its late result is dropped and the lane is used again.
// Stop() never waits for a stuck lane: after `shutdown_grace` it detaches the worker (the thread
// owns only shared state, not the Scheduler), so shutdown returns within a few seconds.
//
// Experiments. RunExperiment(name, generation, prelude) is a run for the recovery experiment
// (see the method); it takes the lane like any run and reaches no listener.
//
// On demand. RunNow(name) starts a run now (still one per device) and returns a future; if that
// probe is already running or requested, it returns the same future, so callers join the running
// result instead of starting another.
//
// Results go to the listeners, on the dispatcher thread, in completion order; each carries the
// generation of the probe definition it was started under (ProbeStates drops stale ones). A
// result of a probe that Apply removed or changed while it ran goes to no listener.
//
// Thread-safety: every public method may be called from any thread, concurrently. Listeners run
// on the dispatcher thread without the scheduler's lock held; they must be quick, may call
// RunNow/Apply/Probes, and must not call Stop() or destroy the Scheduler.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "collectors/analysis/probe_states.h"
#include "collectors/common/error.h"
#include "collectors/probes/probe.h"
#include "collectors/probes/probe_env.h"
#include "config/config.h"

namespace iodrift::daemon {

using ProbeFn =
    std::function<probes::ProbeResult(const probes::ProbeSpec&, const probes::ProbeEnv&)>;
using ProbeListener = std::function<void(const probes::ProbeResult&)>;
// Run on the probe's lane just before an experiment run: "" to go on, else why the run is skipped.
using ExperimentPrelude = std::function<std::string()>;

struct SchedulerOptions {
  bool periodic = true;            // false: runs only on RunNow (e.g. `iodriftd --once`)
  std::size_t max_concurrent = 1;  // running probes across devices (timed-out ones don't count)
  std::chrono::milliseconds first_run_delay{2000};
  std::chrono::milliseconds stagger{1000};         // between the first runs of consecutive probes
  double jitter = 0.10;                            // next run after interval × U(1 − j, 1 + j)
  std::chrono::milliseconds shutdown_grace{2000};  // Stop() waits this long for running probes
  ProbeFn run_probe;  // default probes::RunProbe; tests inject slow or hanging probes
  std::function<std::string(const probes::ProbeSpec&)> device_key;  // default probes::DeviceKey
  std::uint64_t seed = 0;                                           // jitter PRNG seed; 0 = random
};

// interval × U(1 − jitter, 1 + jitter), at least 1 ms.
std::chrono::milliseconds JitteredInterval(config::Duration interval, double jitter,
                                           std::mt19937_64& rng);

class Scheduler {
 public:
  // `env` is copied; its `cancel` is replaced per run.
  explicit Scheduler(probes::ProbeEnv env, SchedulerOptions options = {});
  ~Scheduler();  // Stop()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Replaces the probe set atomically (initial config and every reload) with the set that
  // ProbeStates::Define returned. Probes whose generation and device did not change keep their
  // timetable; new or changed ones get a staggered first run; a run of a removed or changed
  // probe still in flight finishes without reaching the listeners.
  void Apply(std::vector<analysis::DefinedProbe> probes);

  // Starts the dispatcher. Idempotent; no effect after Stop().
  void Start();

  // Stops dispatching, cancels running probes, waits up to `shutdown_grace` for them and
  // detaches workers stuck in the kernel. Pending RunNow futures resolve as `skipped`.
  // Idempotent; returns within shutdown_grace plus a few milliseconds.
  void Stop();

  // Called with every recorded result (see the thread-safety note above).
  void AddListener(ProbeListener listener);

  // Runs probe `name` as soon as its device is free; the future resolves with its result
  // (timeout/skipped included). Joins a run of that probe already in flight or requested.
  // Errors: ENOENT unknown probe; ESHUTDOWN when the scheduler is not running.
  Expected<std::shared_future<probes::ProbeResult>> RunNow(const std::string& name);

  // An experiment run (daemon/diagnose.h): like RunNow, but a run of its own (never joins one in
  // flight, and RunNow never joins it), started only while the probe still has `generation`,
  // with `prelude` (may be empty) run on the lane right before the probe, and its result goes to
  // the future only — never to the listeners (baselines, drift window, history, metrics). A
  // reload that removes or changes the probe before it starts resolves it as `skipped`.
  // Errors: ENOENT unknown probe; ESTALE another generation; EBUSY one is already waiting;
  // ESHUTDOWN not running.
  Expected<std::shared_future<probes::ProbeResult>> RunExperiment(const std::string& name,
                                                                  std::uint64_t generation,
                                                                  ExperimentPrelude prelude);

  // The current probe set, in Apply order.
  std::vector<probes::ProbeSpec> Probes() const;

  struct Core;  // shared with worker threads (defined in scheduler.cpp)

 private:
  void DispatchLoop();

  std::shared_ptr<Core> core_;
  std::thread dispatcher_;
};

}  // namespace iodrift::daemon
