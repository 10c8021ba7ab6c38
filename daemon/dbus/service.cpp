#include "daemon/dbus/service.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <thread>

#include <sdbus-c++/sdbus-c++.h>
#include <spdlog/spdlog.h>

#include "collectors/analysis/explain.h"
#include "collectors/analysis/verdict.h"
#include "daemon/dbus/boots_answer.h"
#include "daemon/dbus/bus_connection.h"
#include "daemon/dbus/result_dict.h"
#include "daemon/dbus/snapshot.h"
#include "daemon/diagnose.h"
#include "daemon/scheduler.h"
#include "iodrift_version.h"
#include "monitor1_adaptor.h"  // generated from org.iodrift.Monitor1.xml

namespace iodrift::daemon::dbus {
namespace {

using ProbeFuture = std::shared_future<probes::ProbeResult>;

constexpr auto kCompleterPoll = std::chrono::milliseconds(100);
constexpr auto kFirstBackoff = std::chrono::seconds(1);
constexpr auto kMaxBackoff = std::chrono::seconds(60);
// The daemon's own calls to the bus (a caller's credentials) wait this long at most, not sd-bus's
// 25 s: a stalled bus must not hold the bus thread.
constexpr auto kBusCallTimeout = std::chrono::seconds(2);
// On the stop path (ReleaseName): the unit's stop timeout must never run out on a stalled bus.
constexpr auto kStopCallTimeout = std::chrono::milliseconds(500);

}  // namespace

class Monitor;

struct PendingRun {
  ProbeFuture future;
  sdbus::Result<Dict> reply;
};

struct PendingDiagnose {
  std::shared_future<DiagnoseReply> future;
  sdbus::Result<std::string, std::string, std::map<std::string, double>> reply;
  std::string sender;  // charged for the runs
};

struct DbusService::Impl {
  Impl(DbusServiceOptions opts, Scheduler& sched, ReloadFn reload_fn)
      : options(std::move(opts)),
        scheduler(sched),
        reload(std::move(reload_fn)),
        limiter(options.rate_limits),
        reload_limiter(options.reload_rate_limits) {}

  // Bus-thread handlers (called by Monitor).
  std::vector<sdbus::Struct<std::string, std::string, std::string>> ListProbes();
  void RunProbe(sdbus::Result<Dict>&& reply, const std::string& name, const std::string& sender);
  std::tuple<std::string, std::string, std::string> DiagnoseBegin(const std::string& name,
                                                                  const DiagnoseCaller& caller);
  void DiagnoseMeasure(
      sdbus::Result<std::string, std::string, std::map<std::string, double>>&& reply,
      const std::string& session, const std::string& step, const std::string& skipped,
      const DiagnoseCaller& caller);
  std::tuple<std::string, std::map<std::string, double>> DiagnoseEnd(const std::string& session,
                                                                     const DiagnoseCaller& caller);
  std::tuple<std::string, std::map<std::string, double>> Explain(const std::string& name);
  Dict ExplainFields(const std::string& name);
  // Explain and ExplainFields: the verdict, the text and the figures from one look at the probe.
  struct Explanation {
    analysis::Cause cause = analysis::Cause::kUndetermined;
    std::string verdict_text;
    std::string text;
    std::map<std::string, double> figures;
  };
  Explanation Explained(const std::string& name);
  std::vector<std::string> Reload(std::uint32_t uid);
  // Throws AccessDenied unless `sender` may call `method` (see DbusServiceOptions::admin_group);
  // returns the caller's uid.
  std::uint32_t Authorize(const std::string& sender, const char* method);

  // Scheduler listener (dispatcher thread).
  void OnResult(const probes::ProbeResult& result);

  void Attach(std::unique_ptr<sdbus::IConnection> connection);  // takes bus_mu
  void Teardown(const char* why);                               // takes bus_mu
  void SupervisorLoop();
  void CompleterLoop();
  void CompleteReady();
  bool SleepUnlessStopping(std::chrono::seconds duration);

  DbusServiceOptions options;
  Scheduler& scheduler;
  ReloadFn reload;
  RateLimiter limiter;
  RateLimiter reload_limiter;  // Reload, keyed by caller uid
  std::string mode;            // resolved: system | session | ADDRESS

  // The connection and the exported object; replies and signals are sent under bus_mu so they
  // never race the teardown. Bus-thread callbacks never take bus_mu.
  std::mutex bus_mu;
  std::unique_ptr<sdbus::IConnection> connection;
  std::unique_ptr<Monitor> monitor;
  std::unique_ptr<sdbus::IProxy> bus_proxy;     // org.freedesktop.DBus on `connection`
  std::unique_ptr<SnapshotAnswerer> snapshots;  // Snapshot calls, answered off the bus thread
  bool stopping = false;                        // under bus_mu
  std::condition_variable stop_cv;
  std::thread supervisor;

  // RunProbe requests waiting for their result. Lock order: bus_mu before pending_mu.
  std::mutex pending_mu;
  std::condition_variable pending_cv;
  std::vector<PendingRun> pending;
  std::vector<PendingDiagnose> pending_diagnose;
  bool results_arrived = false;
  bool completer_stop = false;
  std::thread completer;

  // Lets the scheduler listener (which outlives the service) reach it only while it runs.
  struct Relay {
    std::mutex mu;
    Impl* target = nullptr;
  };
  std::shared_ptr<Relay> relay = std::make_shared<Relay>();
  bool stopped = false;
};

// The exported object: generated adaptor plumbing forwarding to Impl.
class Monitor final : public sdbus::AdaptorInterfaces<org::iodrift::Monitor1_adaptor> {
 public:
  Monitor(sdbus::IConnection& connection, DbusService::Impl& impl)
      : AdaptorInterfaces(connection, kObjectPath), impl_(impl) {
    registerAdaptor();
  }
  ~Monitor() { unregisterAdaptor(); }
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  using org::iodrift::Monitor1_adaptor::emitProbeCompleted;

 private:
  std::vector<sdbus::Struct<std::string, std::string, std::string>> ListProbes() override {
    return impl_.ListProbes();
  }
  void RunProbe(sdbus::Result<Dict>&& reply, std::string name) override {
    const sdbus::Message* message = getObject().getCurrentlyProcessedMessage();
    const std::string sender = message ? message->getSender() : std::string();
    try {
      impl_.Authorize(sender, "RunProbe");
    } catch (const sdbus::Error& e) {
      reply.returnError(e);
      return;
    }
    impl_.RunProbe(std::move(reply), name, sender);
  }
  std::tuple<std::string, std::string, std::string> DiagnoseBegin(
      const std::string& name) override {
    const DiagnoseCaller caller = Caller("DiagnoseBegin");
    return impl_.DiagnoseBegin(name, caller);
  }
  void DiagnoseMeasure(
      sdbus::Result<std::string, std::string, std::map<std::string, double>>&& reply,
      std::string session, std::string step, std::string skipped) override {
    DiagnoseCaller caller;
    try {
      caller = Caller("DiagnoseMeasure");
    } catch (const sdbus::Error& e) {
      reply.returnError(e);
      return;
    }
    impl_.DiagnoseMeasure(std::move(reply), session, step, skipped, caller);
  }
  std::tuple<std::string, std::map<std::string, double>> DiagnoseEnd(
      const std::string& session) override {
    const DiagnoseCaller caller = Caller("DiagnoseEnd");
    return impl_.DiagnoseEnd(session, caller);
  }
  // The sender of the message being processed, authorized for `method` (throws AccessDenied).
  DiagnoseCaller Caller(const char* method) {
    const sdbus::Message* message = getObject().getCurrentlyProcessedMessage();
    DiagnoseCaller caller;
    caller.bus_name = message ? message->getSender() : std::string();
    caller.uid = impl_.Authorize(caller.bus_name, method);
    return caller;
  }
  void Snapshot(sdbus::Result<std::map<std::string, std::uint64_t>>&& reply) override {
    impl_.snapshots->Submit(std::move(reply));
  }
  std::tuple<std::string, std::map<std::string, double>> Explain(const std::string& name) override {
    return impl_.Explain(name);
  }
  Dict ExplainFields(const std::string& name) override { return impl_.ExplainFields(name); }
  std::tuple<std::string, std::string> Boots(const std::string& name) override {
    if (!impl_.options.baselines) throw sdbus::Error(kErrorFailed, "boots are not available");
    return BootsAnswer(impl_.scheduler.Probes(), impl_.options.baselines(), name);
  }
  std::vector<std::string> Reload() override {
    const sdbus::Message* message = getObject().getCurrentlyProcessedMessage();
    return impl_.Reload(impl_.Authorize(message ? message->getSender() : std::string(), "Reload"));
  }
  std::string Version() override { return IODRIFT_VERSION; }

  DbusService::Impl& impl_;
};

std::vector<sdbus::Struct<std::string, std::string, std::string>> DbusService::Impl::ListProbes() {
  std::vector<sdbus::Struct<std::string, std::string, std::string>> out;
  for (const auto& spec : scheduler.Probes()) {
    out.emplace_back(spec.name, std::string(probes::ProbeKindName(spec.kind)), spec.target);
  }
  return out;
}

void DbusService::Impl::RunProbe(sdbus::Result<Dict>&& reply, const std::string& name,
                                 const std::string& sender) {
  // Validate first: only configured names reach the scheduler, so a caller can never make the
  // daemon touch a path that is not a configured target.
  bool known = false;
  for (const auto& spec : scheduler.Probes()) known = known || spec.name == name;
  if (!known) {
    reply.returnError(UnknownProbeError(name));
    return;
  }
  if (auto wait = limiter.Acquire(sender); wait.count() > 0) {
    spdlog::debug("dbus: runprobe rate limited sender={} probe={} retry_ms={}", sender, name,
                  wait.count());
    reply.returnError(sdbus::Error(
        kErrorRateLimited, "rate limited; retry in " + std::to_string(wait.count()) + " ms"));
    return;
  }
  std::lock_guard lock(pending_mu);
  if (pending.size() >= options.max_pending) {
    reply.returnError(sdbus::Error(kErrorBusy, std::to_string(pending.size()) +
                                                   " RunProbe calls are waiting; try again later"));
    return;
  }
  auto future = scheduler.RunNow(name);
  if (!future) {
    const char* error = future.error().code == ENOENT ? kErrorUnknownProbe : kErrorFailed;
    reply.returnError(sdbus::Error(error, future.error().message));
    return;
  }
  spdlog::info("dbus: runprobe probe={} sender={}", name, sender);
  pending.push_back(PendingRun{*future, std::move(reply)});
  pending_cv.notify_one();
}

namespace {

// A Diagnoser error as a D-Bus error: ENOENT UnknownProbe (Begin) or Failed, EBUSY Busy, EAGAIN
// RateLimited (cooldown, pressure, the rate limiter), anything else Failed.
sdbus::Error DiagnoseError(const Error& error, bool begin) {
  const char* name = error.code == ENOENT && begin ? kErrorUnknownProbe
                     : error.code == EBUSY         ? kErrorBusy
                     : error.code == EAGAIN        ? kErrorRateLimited
                                                   : kErrorFailed;
  return sdbus::Error(name, error.message);
}

}  // namespace

std::tuple<std::string, std::string, std::string> DbusService::Impl::DiagnoseBegin(
    const std::string& name, const DiagnoseCaller& caller) {
  bool known = false;
  for (const auto& spec : scheduler.Probes()) known = known || spec.name == name;
  if (!known) {
    throw UnknownProbeError(name);
  }
  if (!options.diagnoser) throw sdbus::Error(kErrorFailed, "diagnose is not available");
  auto admit = [&]() -> std::string {
    const auto wait = limiter.Acquire(caller.bus_name);
    if (wait.count() == 0) return "";
    return "refused: rate limited (the RunProbe limiter, which counts experiment runs too); "
           "retry in " +
           std::to_string(wait.count()) + " ms";
  };
  auto begun = options.diagnoser->Begin(name, caller, admit);
  if (!begun) {
    spdlog::debug("dbus: diagnose refused sender={} probe={}: {}", caller.bus_name, name,
                  begun.error().message);
    throw DiagnoseError(begun.error(), true);
  }
  spdlog::info("dbus: diagnose begin probe={} sender={} uid={}", name, caller.bus_name, caller.uid);
  return {begun->session, begun->next, begun->text};
}

void DbusService::Impl::DiagnoseMeasure(
    sdbus::Result<std::string, std::string, std::map<std::string, double>>&& reply,
    const std::string& session, const std::string& step, const std::string& skipped,
    const DiagnoseCaller& caller) {
  if (!options.diagnoser) {
    reply.returnError(sdbus::Error(kErrorFailed, "diagnose is not available"));
    return;
  }
  auto future = options.diagnoser->Measure(session, step, skipped, caller);
  if (!future) {
    reply.returnError(DiagnoseError(future.error(), false));
    return;
  }
  std::lock_guard lock(pending_mu);
  pending_diagnose.push_back(PendingDiagnose{*future, std::move(reply), caller.bus_name});
  pending_cv.notify_one();
}

std::tuple<std::string, std::map<std::string, double>> DbusService::Impl::DiagnoseEnd(
    const std::string& session, const DiagnoseCaller& caller) {
  if (!options.diagnoser) throw sdbus::Error(kErrorFailed, "diagnose is not available");
  auto ended = options.diagnoser->End(session, caller);
  if (!ended) throw DiagnoseError(ended.error(), false);
  return {ended->text, ended->figures};
}

DbusService::Impl::Explanation DbusService::Impl::Explained(const std::string& name) {
  std::optional<probes::ProbeSpec> spec;
  for (auto& candidate : scheduler.Probes()) {
    if (candidate.name == name) spec = candidate;
  }
  if (!spec) {
    throw UnknownProbeError(name);
  }
  if (!options.record) throw sdbus::Error(kErrorFailed, "explain is not available in this daemon");
  auto record = options.record(name);
  Explanation out;
  if (!record || !record->ran()) {
    // Configured but never ran (yet): say so in the same shape as ExplainProbe.
    const std::string target = spec->target.empty() ? "" : ", " + spec->target;
    out.verdict_text = "Verdict: undetermined: no run yet";
    out.text = out.verdict_text + "\nprobe " + name + " (" +
               std::string(probes::ProbeKindName(spec->kind)) + target +
               ")\n  last:      no run yet since the daemon started\n";
    return out;
  }
  // The verdict stored with the record when its run (or its twin's) was published.
  out.cause = record->verdict.cause;
  out.verdict_text = record->verdict.line;
  out.text = analysis::ExplainProbe(*record, record->window);
  out.figures = analysis::ExplainFigures(*record, record->window);
  return out;
}

std::tuple<std::string, std::map<std::string, double>> DbusService::Impl::Explain(
    const std::string& name) {
  Explanation e = Explained(name);
  return {std::move(e.text), std::move(e.figures)};
}

Dict DbusService::Impl::ExplainFields(const std::string& name) {
  Explanation e = Explained(name);
  Dict out;
  out["cause"] = sdbus::Variant(std::string(analysis::CauseName(e.cause)));
  out["verdict_text"] = sdbus::Variant(e.verdict_text);
  out["text"] = sdbus::Variant(e.text);
  out["figures"] = sdbus::Variant(e.figures);
  return out;
}

std::uint32_t DbusService::Impl::Authorize(const std::string& sender, const char* method) {
  std::uint32_t uid = 0;
  std::vector<std::uint32_t> gids;
  bool known = false;
  try {
    if (!bus_proxy || sender.empty()) throw sdbus::Error(kErrorAccessDenied, "no sender");
    auto creds = BusCredentials(*bus_proxy, sender);
    if (auto it = creds.find("UnixUserID"); it != creds.end()) {
      uid = it->second.get<std::uint32_t>();
      known = true;
    }
    if (auto it = creds.find("UnixGroupIDs"); it != creds.end()) {
      gids = it->second.get<std::vector<std::uint32_t>>();
    }
  } catch (const sdbus::Error& e) {
    spdlog::debug("dbus: credentials of {}: {}", sender, e.getMessage());
  }
  if (known && Privileged(uid, gids, options.admin_group)) return uid;
  // debug: any local user can call, the journal must not be theirs to fill.
  spdlog::debug("dbus: {} denied sender={} uid={}", method, sender,
                known ? std::to_string(uid) : std::string("unknown"));
  throw sdbus::Error(kErrorAccessDenied,
                     std::string(method) + " is for root and members of group " +
                         options.admin_group +
                         (known ? "; caller uid " + std::to_string(uid) + " is neither"
                                : "; the bus did not say who the caller is"));
}

std::vector<std::string> DbusService::Impl::Reload(std::uint32_t uid) {
  // Root and the daemon's own user may send SIGHUP, an unlimited reload: no limit for them. The
  // others (group members) are limited by uid, so a new connection per call gains nothing.
  if (uid != 0 && uid != geteuid()) {
    if (auto wait = reload_limiter.Acquire("uid " + std::to_string(uid)); wait.count() > 0) {
      spdlog::debug("dbus: reload rate limited uid={} retry_ms={}", uid, wait.count());
      const auto& limits = options.reload_rate_limits;
      throw sdbus::Error(kErrorRateLimited, "Reload rate limit reached (per caller " +
                                                DescribeLimit(limits.per_caller) +
                                                "; all callers " + DescribeLimit(limits.global) +
                                                "); retry in " + std::to_string(wait.count()) +
                                                " ms");
    }
  }
  if (!reload) return {};
  try {
    return reload();
  } catch (const std::exception& e) {
    throw sdbus::Error(kErrorFailed, std::string("reload failed: ") + e.what());
  }
}

void DbusService::Impl::OnResult(const probes::ProbeResult& result) {
  {
    std::lock_guard lock(bus_mu);
    if (monitor) {
      try {
        monitor->emitProbeCompleted(result.name, ToDict(result));
      } catch (const sdbus::Error& e) {
        spdlog::debug("dbus: emitting ProbeCompleted failed: {}", e.getMessage());
      }
    }
  }
  {
    std::lock_guard lock(pending_mu);
    results_arrived = true;
  }
  pending_cv.notify_one();
}

void DbusService::Impl::CompleteReady() {
  std::lock_guard bus_lock(bus_mu);
  std::vector<PendingRun> ready;
  std::vector<PendingDiagnose> ready_diagnose;
  {
    std::lock_guard lock(pending_mu);
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->future.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        ready.push_back(std::move(*it));
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = pending_diagnose.begin(); it != pending_diagnose.end();) {
      if (it->future.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        ready_diagnose.push_back(std::move(*it));
        it = pending_diagnose.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& run : ready_diagnose) {
    try {
      const DiagnoseReply& answer = run.future.get();
      if (answer.runs > 0) limiter.Charge(run.sender, static_cast<double>(answer.runs));
      run.reply.returnResults(answer.next, answer.text, answer.figures);
    } catch (const std::exception& e) {
      spdlog::debug("dbus: diagnose reply failed: {}", e.what());
    }
  }
  for (auto& run : ready) {
    try {
      run.reply.returnResults(ToDict(run.future.get()));
    } catch (const std::exception& e) {
      spdlog::debug("dbus: runprobe reply failed: {}", e.what());
    }
  }
  // `ready` (and its messages) is destroyed here, still under bus_mu: the connection is alive.
}

void DbusService::Impl::CompleterLoop() {
  for (;;) {
    {
      std::unique_lock lock(pending_mu);
      pending_cv.wait_for(lock, kCompleterPoll, [&] { return completer_stop || results_arrived; });
      if (completer_stop) return;
      results_arrived = false;
      if (pending.empty() && pending_diagnose.empty()) continue;
    }
    CompleteReady();
  }
}

void DbusService::Impl::Attach(std::unique_ptr<sdbus::IConnection> c) {
  std::lock_guard lock(bus_mu);
  connection = std::move(c);
  try {
    connection->setMethodCallTimeout(kBusCallTimeout);
    bus_proxy = sdbus::createProxy(*connection, "org.freedesktop.DBus", "/org/freedesktop/DBus");
    monitor = std::make_unique<Monitor>(*connection, *this);
  } catch (const sdbus::Error& e) {
    spdlog::warn("dbus: cannot export {}: {}", kObjectPath, e.getMessage());
    monitor.reset();
    bus_proxy.reset();
    connection.reset();
  }
}

void DbusService::Impl::Teardown(const char* why) {
  std::lock_guard bus_lock(bus_mu);
  std::vector<PendingRun> orphans;
  std::vector<PendingDiagnose> orphan_diagnoses;
  {
    std::lock_guard lock(pending_mu);
    orphans.swap(pending);
    orphan_diagnoses.swap(pending_diagnose);
  }
  for (auto& run : orphan_diagnoses) {
    try {
      run.reply.returnError(sdbus::Error(kErrorFailed, why));
    } catch (const sdbus::Error&) {
    }
  }
  orphan_diagnoses.clear();
  for (auto& run : orphans) {
    try {
      run.reply.returnError(sdbus::Error(kErrorFailed, why));
    } catch (const sdbus::Error&) {
    }
  }
  orphans.clear();
  if (snapshots) snapshots->FailAll(why);
  try {
    monitor.reset();
    bus_proxy.reset();
  } catch (const sdbus::Error&) {
  }
  if (connection) {
    try {
      connection->releaseName(kBusName);
    } catch (const sdbus::Error&) {
    }
  }
  connection.reset();
}

bool DbusService::Impl::SleepUnlessStopping(std::chrono::seconds duration) {
  std::unique_lock lock(bus_mu);
  return !stop_cv.wait_for(lock, duration, [&] { return stopping; });
}

void DbusService::Impl::SupervisorLoop() {
  auto backoff = kFirstBackoff;
  bool warned = true;  // Start() or the "lost" line already said the bus is unusable
  for (;;) {
    sdbus::IConnection* current = nullptr;
    {
      std::lock_guard lock(bus_mu);
      if (stopping) break;
      current = connection.get();
    }
    if (!current) {
      std::string error;
      auto c = Connect(mode == "system" || mode == "session" ? mode : WithoutGuid(mode), error);
      if (c) {
        Attach(std::move(c));
        std::lock_guard lock(bus_mu);
        if (connection) {
          spdlog::info("dbus: serving {} on {} (reconnected)", kBusName, Describe(mode));
          backoff = kFirstBackoff;
          warned = false;
          continue;
        }
      } else if (!warned) {
        spdlog::warn("dbus: cannot connect to {}: {}; retrying with back-off", Describe(mode),
                     error);
        warned = true;
      }
      if (!SleepUnlessStopping(backoff)) break;
      backoff =
          std::min(backoff * 2, std::chrono::duration_cast<std::chrono::seconds>(kMaxBackoff));
      continue;
    }
    bool lost = false;
    try {
      current->enterEventLoop();
    } catch (const sdbus::Error& e) {
      lost = true;
      spdlog::warn("dbus: connection to {} lost: {}; reconnecting", Describe(mode), e.getMessage());
    }
    {
      std::lock_guard lock(bus_mu);
      if (stopping) break;
    }
    Teardown(lost ? "iodriftd lost its bus connection" : "iodriftd left the bus");
    if (!SleepUnlessStopping(backoff)) break;
  }
  Teardown("iodriftd is stopping");
}

DbusService::DbusService(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<DbusService> DbusService::Start(DbusServiceOptions options, Scheduler& scheduler,
                                                ReloadFn reload) {
  auto impl = std::make_shared<Impl>(std::move(options), scheduler, std::move(reload));
  impl->snapshots = std::make_unique<SnapshotAnswerer>(
      impl->options.proc_root, [raw = impl.get()](const std::function<void()>& send) {
        std::lock_guard lock(raw->bus_mu);
        send();
      });
  const std::string& requested = impl->options.mode;
  std::unique_ptr<sdbus::IConnection> connection;
  if (requested == "auto") {
    std::string system_error, session_error = "DBUS_SESSION_BUS_ADDRESS is unset";
    connection = Connect("system", system_error);
    if (connection) impl->mode = "system";
    if (!connection && std::getenv("DBUS_SESSION_BUS_ADDRESS") != nullptr) {
      connection = Connect("session", session_error);
      if (connection) impl->mode = "session";
    }
    if (!connection) {
      spdlog::info(
          "dbus: dbus=auto found no usable bus (system: {}; session: {}); the D-Bus "
          "API is off, metrics and probes carry on",
          system_error, session_error);
      return nullptr;
    }
  } else {
    impl->mode = requested;
    std::string error;
    connection = Connect(requested, error);
    if (!connection) {
      spdlog::warn(
          "dbus: cannot connect to {}: {}; retrying with back-off, metrics and probes "
          "carry on",
          Describe(requested), error);
    }
  }
  if (connection) {
    impl->Attach(std::move(connection));
    spdlog::info("dbus: serving {} on {}", kBusName, Describe(impl->mode));
  }
  {
    std::lock_guard lock(impl->relay->mu);
    impl->relay->target = impl.get();
  }
  scheduler.AddListener([relay = impl->relay](const probes::ProbeResult& result) {
    std::lock_guard lock(relay->mu);
    if (relay->target) relay->target->OnResult(result);
  });
  impl->completer = std::thread([raw = impl.get()] { raw->CompleterLoop(); });
  impl->supervisor = std::thread([raw = impl.get()] { raw->SupervisorLoop(); });
  return std::unique_ptr<DbusService>(new DbusService(std::move(impl)));
}

void DbusService::Stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  {
    std::lock_guard lock(impl_->relay->mu);
    impl_->relay->target = nullptr;
  }
  {
    std::lock_guard lock(impl_->bus_mu);
    impl_->stopping = true;
    if (impl_->connection) {
      try {
        impl_->connection->setMethodCallTimeout(kStopCallTimeout);
        impl_->connection->leaveEventLoop();
      } catch (const sdbus::Error& e) {
        spdlog::debug("dbus: leaving the event loop: {}", e.getMessage());
      }
    }
  }
  impl_->stop_cv.notify_all();
  if (impl_->supervisor.joinable()) impl_->supervisor.join();
  impl_->snapshots->Stop();
  {
    std::lock_guard lock(impl_->pending_mu);
    impl_->completer_stop = true;
  }
  impl_->pending_cv.notify_all();
  if (impl_->completer.joinable()) impl_->completer.join();
}

DbusService::~DbusService() { Stop(); }

}  // namespace iodrift::daemon::dbus
