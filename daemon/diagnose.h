// Diagnoser: the daemon's half of the recovery experiment (`iodriftctl diagnose NAME`; D-Bus
// DiagnoseBegin / DiagnoseMeasure / DiagnoseEnd) — the I/O around collectors/analysis/diagnose.h.
//
// Privilege stays with the caller. The daemon never writes /proc/sys/vm: an experiment is a
// session driven by the caller. Begin admits it and names the first step ("control"); every
// Measure call runs one repeat of the step it names (the probe, then its direct twin) and names
// the next step; a root caller makes the root steps' intervention (drop_caches, drop_slab,
// compact) itself right before each Measure of that step. The daemon makes only what it can do
// as itself: warm_free_memory, run on the probe's lane immediately before the run
// (Scheduler::RunExperiment's prelude), sized by WarmBytes from the run's size, MemAvailable
// and the daemon's own cgroup (memory.max / memory.high minus memory.current, up every ancestor).
// For a caller who is not root the root steps are recorded skipped ("needs root") and never
// named.
//
// Limits, each refusal naming the limit: one experiment at a time, machine-wide (EBUSY); a
// cooldown from the end of one experiment to the start of the next (diagnose.cooldown, EAGAIN);
// `admit` (the D-Bus rate limiter) at Begin; the gates (MemAvailable, PSI memory and io, see
// RefuseReason) re-read before naming every next step — so before the caller intervenes — and
// again before every run; the whole experiment within diagnose.timeout; a session nobody calls
// for idle_timeout (60 s) ends. Any of these mid-experiment, and a reload that removes or changes
// the probe or its twin (its generation), aborts the experiment: nothing further is named or run,
// and the report says why.
//
// Record: runs go to ProbeStates::RecordExperimentRun only (never baselines, window, worst
// ratio or history); the report to RecordDiagnosis (bound to the generation it began on).
//
// Thread-safety: every method may be called from any thread. The Diagnoser must be destroyed
// before the Scheduler and ProbeStates it was given (the destructor cancels and joins).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectors/analysis/diagnose.h"
#include "collectors/analysis/probe_states.h"
#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"

namespace iodrift::daemon {

class Scheduler;

struct DiagnoseOptions {
  bool enabled = false;                    // config diagnose.enabled
  std::uint64_t warm_bytes = 1ULL << 30;   // config diagnose.warm_size (cap)
  analysis::DiagnoseLimits limits;         // min_available, max_memory_pressure, max_io_pressure
  std::chrono::seconds max_duration{300};  // config diagnose.timeout
  std::chrono::seconds cooldown{std::chrono::minutes(30)};  // config diagnose.cooldown
  std::chrono::seconds idle_timeout{60};                    // a session nobody calls ends
  ProcRoot proc_root;                                       // meminfo, pressure, self/cgroup
  std::filesystem::path cgroup_root = "/sys/fs/cgroup";     // the cgroup v2 mount
};

// Who calls: the bus's unique name (a session belongs to it) and uid (0: the root steps).
struct DiagnoseCaller {
  std::string bus_name;
  std::uint32_t uid = 0;
};

// What Begin and every Measure answer.
struct DiagnoseReply {
  std::string session;
  std::string next;  // the step to measure next; "" when the experiment has ended
  std::string text;  // progress line, or DiagnoseDetails of the report when it has ended
  std::map<std::string, double> figures;  // DiagnoseFigures when it has ended
  std::uint64_t runs = 0;                 // experiment runs this call made (rate limiter)
};

class Diagnoser {
 public:
  Diagnoser(DiagnoseOptions options, Scheduler& scheduler, analysis::ProbeStates& states);
  ~Diagnoser();  // cancels a running measurement and joins it
  Diagnoser(const Diagnoser&) = delete;
  Diagnoser& operator=(const Diagnoser&) = delete;

  void SetOptions(DiagnoseOptions options);  // reload; takes effect for the next experiment

  // Admits an experiment on probe `name` for `caller`. `admit` runs after the Diagnoser's own
  // checks and before the session exists: a non-empty answer refuses (EAGAIN, that text).
  // Errors: EPERM diagnose is off; ENOENT no such probe; EBUSY one is running; EAGAIN cooldown,
  // a gate or `admit`; ENODATA no baseline yet.
  Expected<DiagnoseReply> Begin(const std::string& name, const DiagnoseCaller& caller,
                                const std::function<std::string()>& admit);

  // One repeat of `step` (the `next` the last reply named) in `session`; `skipped` non-empty:
  // the caller could not make a root step's intervention (the step is recorded skipped with
  // that reason, nothing runs). The future resolves when the runs are done.
  // Errors: ENOENT no such session (ended, expired); EPERM another caller's; EINVAL not the
  // step named; EBUSY a measurement of this session is in flight.
  Expected<std::shared_future<DiagnoseReply>> Measure(const std::string& session,
                                                      const std::string& step,
                                                      const std::string& skipped,
                                                      const DiagnoseCaller& caller);

  // Ends `session` (recorded as aborted "ended by the caller" when steps were left) and
  // answers the report; for a session that has already ended, its report. Errors: ENOENT,
  // EPERM as Measure; EBUSY while a measurement is in flight.
  Expected<DiagnoseReply> End(const std::string& session, const DiagnoseCaller& caller);

  struct Session;

 private:
  // Under mu_: ends the open session if its deadline or idle time passed.
  void ExpireLocked(std::chrono::steady_clock::time_point now);
  // Under mu_: concludes, records and closes the open session.
  void FinishLocked(const std::string& aborted);
  // Under mu_: the reason the session cannot go on now ("" when it can): gates, deadline,
  // generation of the probe and its twin.
  std::string CheckLocked(const Session& s);
  // Under mu_: marks root steps skipped for a non-root caller and names the next step (after
  // CheckLocked; aborting on its answer). Fills `reply`.
  void AdvanceLocked(DiagnoseReply& reply);
  // The measuring thread's body: one repeat of `step` (probe then twin).
  DiagnoseReply RunRepeat(const std::string& step);

  Scheduler& scheduler_;
  analysis::ProbeStates& states_;
  std::mutex mu_;
  DiagnoseOptions options_;
  std::unique_ptr<Session> open_;  // the running experiment, if any
  // Reports of the last kEndedKept ended sessions, oldest first (End and Measure still answer).
  std::vector<std::pair<std::string, analysis::DiagnoseReport>> ended_;
  const analysis::DiagnoseReport* EndedLocked(const std::string& session) const;
  std::optional<std::chrono::steady_clock::time_point> last_end_;  // for the cooldown
  std::atomic<bool> cancel_{false};
  std::thread worker_;
};

// How much the daemon's cgroup still allows before memory.high / memory.max (the smallest over
// its cgroup and every ancestor); nullopt when no limit applies or it cannot be read.
std::optional<std::uint64_t> CgroupHeadroom(const ProcRoot& proc_root,
                                            const std::filesystem::path& cgroup_root);

}  // namespace iodrift::daemon
