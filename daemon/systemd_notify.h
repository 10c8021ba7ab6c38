// SystemdNotifier: the sd_notify(3) side of iodriftd under systemd (Type=notify) — READY=1,
// STATUS=, RELOADING=1, STOPPING=1 — and a watchdog thread that sends WATCHDOG=1 only while the
// daemon is demonstrably alive.
//
// Outside systemd (NOTIFY_SOCKET unset) every call is a no-op and no thread is started, so the
// app calls these unconditionally. libsystemd's sd_notify() re-reads NOTIFY_SOCKET on each call;
// the environment is left as it is (iodriftd spawns no children that could inherit it).
//
// Watchdog. StartWatchdog() asks sd_watchdog_enabled() for the interval systemd wants
// (WatchdogSec= → WATCHDOG_USEC, checked against WATCHDOG_PID) and, when one is set, starts a
// thread that wakes every interval / 2, runs the liveness check and sends WATCHDOG=1 only when
// the check returns true. The check runs on the watchdog thread: if it blocks (a deadlocked
// lock it takes, a listener that no longer answers), the pings stop and systemd restarts the
// daemon — that is the intent. It must therefore not depend on probes finishing: a probe stuck
// in the kernel is the target's fault, not the daemon's (the scheduler records it as `timeout`
// and carries on), so wire it to the dispatcher's lock and the HTTP listener, not to a probe.
// The same thread refreshes STATUS= from an optional status function on every tick (and, when no
// watchdog is configured but NOTIFY_SOCKET is set, every `status_interval`), so "last run 12 s
// ago" stays current in `systemctl status`.
//
// Thread-safety: every method may be called from any thread. StopWatchdog() (also called by
// Stopping() and the destructor) joins the thread, so it waits for a liveness check in progress.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "collectors/analysis/probe_states.h"

namespace iodrift::daemon {

class SystemdNotifier {
 public:
  using LivenessCheck = std::function<bool()>;
  using StatusFn = std::function<std::string()>;

  SystemdNotifier();
  ~SystemdNotifier();  // StopWatchdog()
  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  // True when NOTIFY_SOCKET was set at construction (we run under a Type=notify unit).
  bool Enabled() const { return enabled_; }

  // "READY=1" plus "STATUS=<status>" when `status` is not empty. Send it after the config is
  // valid, the listener is bound and the bus name is owned; again after every reload.
  void Ready(std::string_view status = {});

  // "STATUS=<text>" — one line shown by `systemctl status`.
  void Status(std::string_view text);

  // "RELOADING=1" with "MONOTONIC_USEC=<CLOCK_MONOTONIC now>" (systemd ≥ 253 requires the
  // timestamp for Type=notify-reload; 252 ignores it). Follow with Ready() when the reload ends,
  // whether it was applied or rejected.
  void Reloading();

  // "STOPPING=1", then StopWatchdog(). Send it first thing on SIGTERM/SIGINT.
  void Stopping();

  // Starts the watchdog/status thread; see the file comment. Returns the watchdog interval
  // systemd asked for, or nullopt when none (no WatchdogSec=, or outside systemd). Calling it
  // twice replaces the running thread. `status_interval` applies only when no watchdog is set.
  std::optional<std::chrono::microseconds> StartWatchdog(
      LivenessCheck liveness, StatusFn status = {},
      std::chrono::milliseconds status_interval = std::chrono::seconds(10));

  // Stops and joins the watchdog thread. Idempotent.
  void StopWatchdog();

  // Number of WATCHDOG=1 messages sent so far (for tests and debug logs).
  std::size_t WatchdogPings() const;

 private:
  void Send(const std::string& message);
  void Loop(std::chrono::microseconds period, bool watchdog, LivenessCheck liveness,
            StatusFn status);

  bool enabled_ = false;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::size_t pings_ = 0;
  std::thread thread_;
};

// "5 probes, last run 12 s ago, 0 failing" — the STATUS= line of a running iodriftd.
// `last_run_age_seconds` nullopt → "no run yet". Pure; the app builds the arguments with
// ProbeStatusText().
std::string FormatProbeStatus(std::size_t probes, std::optional<double> last_run_age_seconds,
                              std::size_t failing);

// FormatProbeStatus over the probe states: every probe of `states` configured; the most recent
// run start plus duration compared with `now_epoch_seconds`; failing = probes that ran and whose
// last outcome is not ok (timeouts and skips included). A `state_problem` (StateProblemText:
// the state dir takes no writes) comes first, before "; " and the probes' part, so a truncated
// `systemctl status` line still shows it.
std::string ProbeStatusText(const analysis::ProbeSnapshot& states, double now_epoch_seconds,
                            std::string_view state_problem = {});

}  // namespace iodrift::daemon
