// DbusService: the org.iodrift.Monitor1 D-Bus service of iodriftd (interface in
// org.iodrift.Monitor1.xml, contract in docs/dbus.md).
//
// It owns the bus name org.iodrift.Monitor1 and exports /org/iodrift/Monitor1 with ListProbes,
// RunProbe (asynchronous: the bus thread only queues the request; a completer thread answers
// when the scheduler's future resolves; a request for a probe already running joins that run),
// Snapshot (meminfo and uptime read now), Explain (drift.h ExplainProbe on the probe's record
// from the app's ProbeStates), Boots (the probe's record of its last boots, boots_answer.h), Reload
// (through a callback of the app), the ProbeCompleted signal for every recorded result (scheduled
// or on demand) and the Version property. RunProbe is rate limited per caller and globally
// (rate_limiter.h) and at most `max_pending` requests wait at once (Busy beyond). Reload is rate
// limited per caller uid and globally (`reload_rate_limits`), refused with RateLimited naming the
// limit — except for root and the daemon's own user, who may send SIGHUP (an unlimited reload)
// anyway.
//
// Bus choice (`mode`, the `dbus` config key): "system", "session", an ADDRESS
// ("unix:path=/run/x"), or "auto": the system bus when it is reachable and the name can be owned
// there (whatever the daemon's user: the packaged policy lets user iodrift own it), else the
// session bus when DBUS_SESSION_BUS_ADDRESS is set, else none (logged once). "none" is handled by
// the caller (no service). When the chosen bus cannot be reached or is lost later, the service
// logs it and retries with back-off (1 s doubling to 60 s) in its own thread, an ADDRESS without
// its `guid=` (a restarted bus has a new one); metrics and probes never depend on the bus.
//
// DiagnoseBegin / DiagnoseMeasure / DiagnoseEnd drive a recovery-experiment session of the
// Diagnoser (daemon/diagnose.h) for the calling connection; DiagnoseMeasure is asynchronous like
// RunProbe (answered by the completer thread). DiagnoseBegin takes a RunProbe rate-limiter token
// after the Diagnoser's own checks (so a refusal during the cooldown names the cooldown), and
// every experiment run is charged to the caller's and the global bucket (RateLimiter::Charge).
//
// Access: ListProbes, Snapshot, Explain, Boots and Version are open to every caller; RunProbe,
// Diagnose* and Reload are answered AccessDenied unless the caller (uid and groups from the bus's
// GetConnectionCredentials) is root, the daemon's own user, or a member of `admin_group`. The
// check is the daemon's own, on top of the system-bus policy, so a session bus or a bus address
// with a looser policy grants nothing more.
//
// Thread-safety: Start/Stop/destruction from one thread (the app's main thread). The service
// must be stopped (or destroyed) before the Scheduler it was given.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "collectors/analysis/diagnose.h"
#include "collectors/analysis/probe_states.h"
#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"
#include "daemon/dbus/names.h"
#include "daemon/dbus/rate_limiter.h"

namespace iodrift::daemon {
class Scheduler;
class Diagnoser;
}  // namespace iodrift::daemon

namespace iodrift::daemon::dbus {

// Re-reads and applies the config; returns the problems (empty: applied). Runs on the bus thread.
using ReloadFn = std::function<std::vector<std::string>()>;
// The state of probe `name` (ProbeStates::Get); null when no such probe is configured. Bus thread.
using RecordFn = std::function<std::shared_ptr<const analysis::ProbeState>(const std::string&)>;
// The baselines and boot record (ProbeStates::Baselines). Bus thread.
using BaselinesFn = std::function<analysis::BaselineState()>;

struct DbusServiceOptions {
  std::string mode = "auto";       // auto | system | session | ADDRESS (not "none")
  ProcRoot proc_root;              // for Snapshot
  RecordFn record;                 // for Explain; without it Explain answers Failed
  BaselinesFn baselines;           // for Boots; without it Boots answers Failed
  Diagnoser* diagnoser = nullptr;  // for Diagnose*; without it they answer Failed
  RateLimiterOptions rate_limits;
  // Reload, per caller uid: 3 at once, then one every 5 s; all callers: 5, then one every 2 s.
  RateLimiterOptions reload_rate_limits{RateLimit{3, 0.2}, RateLimit{5, 0.5}};
  std::size_t max_pending = 64;         // RunProbe requests waiting for a result, then Busy
  std::string admin_group = "iodrift";  // members may RunProbe and Reload (besides root)
};

class DbusService {
 public:
  // Connects and serves. Returns nullptr (after one log line) when mode is "auto" and no bus is
  // usable; for an explicit mode an unreachable bus is retried in the background. Never throws.
  static std::unique_ptr<DbusService> Start(DbusServiceOptions options, Scheduler& scheduler,
                                            ReloadFn reload);
  ~DbusService();  // Stop()
  DbusService(const DbusService&) = delete;
  DbusService& operator=(const DbusService&) = delete;

  // Answers pending RunProbe calls with Failed, releases the name, leaves the bus. Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit DbusService(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace iodrift::daemon::dbus
