#include "daemon/app.h"

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include <spdlog/spdlog.h>

#include "collectors/analysis/probe_states.h"
#include "collectors/analysis/verdict.h"
#include "collectors/common/state_health.h"
#include "collectors/probes/calibration.h"
#include "collectors/proc/boot.h"
#include "config/listen.h"
#include "daemon/boots_report.h"
#include "daemon/dbus/service.h"
#include "daemon/diagnose.h"
#include "daemon/exporter.h"
#include "daemon/http_server.h"
#include "daemon/liveness.h"
#include "daemon/logging.h"
#include "daemon/probe_log.h"
#include "daemon/probe_metrics.h"
#include "daemon/probe_report.h"
#include "daemon/probes_api.h"
#include "daemon/scheduler.h"
#include "daemon/status_page.h"
#include "daemon/systemd_notify.h"
#include "iodrift_version.h"

namespace iodrift::daemon {
namespace {

const char* kLandingPage = R"(<!doctype html>
<html><head><meta charset="utf-8"><title>iodrift</title></head>
<body><h1>iodrift</h1>
<p>Read throughput across the machine's lifecycle, with the memory state of every moment.</p>
<ul><li><a href="/metrics">/metrics</a> — Prometheus metrics</li></ul>
</body></html>
)";

// Flag paths may be relative to the working directory; the config wants absolute ones.
std::string Absolute(const std::string& path) {
  std::error_code ec;
  auto absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

// Applies command-line overrides to `cfg`.
void ApplyOverrides(const CommandLine& cl, config::Config& cfg) {
  if (cl.listen) cfg.listen = *cl.listen;
  if (cl.proc_root) cfg.proc_root = Absolute(*cl.proc_root);
  if (cl.state_dir) cfg.state_dir = Absolute(*cl.state_dir);
  if (cl.dbus) cfg.dbus = *cl.dbus;
  if (cl.log_level) cfg.log_level = *cl.log_level;
  if (cfg.state_dir.empty()) cfg.state_dir = config::DefaultStateDir();
}

probes::ProbeEnv MakeProbeEnv(const config::Config& cfg,
                              std::shared_ptr<probes::TargetDevices> target_devices = nullptr) {
  probes::ProbeEnv env;
  env.proc_root = ProcRoot(cfg.proc_root);
  env.sys_root = cfg.sys_root;
  env.state_dir = cfg.state_dir;
  env.target_devices =
      target_devices ? std::move(target_devices) : std::make_shared<probes::TargetDevices>();
  env.own_io_stall = std::make_shared<probes::OwnIoStall>();
  const auto& sched = cfg.scheduler;
  env.io_class = sched.io_class == "idle"   ? probes::IoClass::kIdle
                 : sched.io_class == "none" ? probes::IoClass::kUnchanged
                                            : probes::IoClass::kBestEffort;
  env.io_level = sched.io_level;
  env.nice = sched.nice;
  return env;
}

SchedulerOptions MakeSchedulerOptions(const config::Config& cfg) {
  SchedulerOptions options;
  options.max_concurrent = cfg.scheduler.max_concurrent;
  return options;
}

// Creates the state directory (and the default probe directory inside it) if missing. A failure
// is logged, not fatal: metrics still flow, and probes that need the directory report errors.
void PrepareStateDir(const config::Config& cfg) {
  std::error_code ec;
  std::filesystem::create_directories(cfg.state_dir, ec);
  if (ec) {
    spdlog::warn("state_dir={} cannot be created: {}; probe files and calibration will fail",
                 cfg.state_dir, ec.message());
    return;
  }
  for (const auto& probe : cfg.probes) {
    // The embedded default's probe directory lives inside the state dir; make it on demand.
    if (!probe.target.empty() &&
        std::filesystem::path(probe.target).parent_path() == std::filesystem::path(cfg.state_dir) &&
        !std::filesystem::exists(probe.target, ec)) {
      std::filesystem::create_directories(probe.target, ec);
    }
  }
}

// diagnose.* of the config as the Diagnoser's options.
DiagnoseOptions MakeDiagnoseOptions(const config::Config& cfg) {
  DiagnoseOptions options;
  options.enabled = cfg.diagnose.enabled;
  options.warm_bytes = cfg.diagnose.warm_size;
  options.limits.min_available_bytes = cfg.diagnose.min_available;
  options.limits.max_memory_some_avg10 = cfg.diagnose.max_memory_pressure;
  options.limits.max_io_some_avg10 = cfg.diagnose.max_io_pressure;
  options.max_duration = std::chrono::duration_cast<std::chrono::seconds>(cfg.diagnose.timeout);
  options.cooldown = std::chrono::duration_cast<std::chrono::seconds>(cfg.diagnose.cooldown);
  options.proc_root = ProcRoot(cfg.proc_root);
  return options;
}

// `iodriftd --once`: every probe once, through the scheduler (so a hung target times out instead
// of hanging the command), then a table or JSON on stdout.
int RunOnce(const config::Config& cfg, bool json) {
  PrepareStateDir(cfg);
  analysis::ProbeStates states;
  SchedulerOptions options = MakeSchedulerOptions(cfg);
  options.periodic = false;
  Scheduler scheduler(MakeProbeEnv(cfg), options);
  scheduler.Apply(states.Define(cfg.probes));
  scheduler.Start();
  std::vector<std::shared_future<probes::ProbeResult>> futures;
  for (const auto& probe : cfg.probes) {
    auto future = scheduler.RunNow(probe.name);
    if (!future) {
      spdlog::error("probe={} cannot run: {}", probe.name, future.error().message);
      return kExitFailure;
    }
    futures.push_back(*future);
  }
  std::vector<probes::ProbeResult> results;
  bool all_ok = true;
  for (auto& future : futures) {
    results.push_back(future.get());
    all_ok = all_ok && results.back().success();
  }
  scheduler.Stop();
  if (json) {
    auto boot = proc::ReadBootState(ProcRoot(cfg.proc_root));
    std::optional<std::string> boot_id;
    std::optional<double> uptime;
    if (boot) {
      boot_id = boot->boot_id;
      uptime = boot->uptime_seconds;
    }
    std::fputs(ProbeResultsJson(boot_id, uptime, results).c_str(), stdout);
  } else {
    std::fputs(ProbeResultsTable(results).c_str(), stdout);
  }
  std::fflush(stdout);
  return all_ok ? kExitOk : kExitFailure;
}

HttpServerOptions ServerOptions(const config::Config& cfg) {
  HttpServerOptions options;
  options.listen = cfg.listen;
  options.max_connections = cfg.http.max_connections;
  options.connection_timeout_seconds = static_cast<unsigned>(std::max<long long>(
      1, std::chrono::duration_cast<std::chrono::seconds>(cfg.http.connection_timeout).count()));
  options.tls_cert_file = cfg.http.tls_cert_file;
  options.tls_key_file = cfg.http.tls_key_file;
  options.basic_auth_users = cfg.http.basic_auth_users;
  return options;
}

// Blocks the signals we handle in every thread (threads inherit the mask), so sigwait() in the
// main thread receives them. Main() calls it first, before the config is read (they are already
// blocked since exec: HandledSignals): a SIGHUP or SIGTERM that arrives while the daemon starts
// stays pending (a reload, a clean stop once running) instead of killing it. `old` receives the
// mask before, for the one-shot modes.
sigset_t BlockHandledSignals(sigset_t* old = nullptr) {
  sigset_t set = HandledSignals();
  pthread_sigmask(SIG_BLOCK, &set, old);
  return set;
}

class Daemon {
 public:
  Daemon(CommandLine cl, config::Config cfg)
      : cl_(std::move(cl)),
        cfg_(std::move(cfg)),
        scheduler_(MakeProbeEnv(cfg_, target_devices_), MakeSchedulerOptions(cfg_)) {}

  int Run() {
    sigset_t signals = BlockHandledSignals();
    PrepareStateDir(cfg_);
    // Baselines survive restarts within one boot (<state_dir>/baselines, keyed by boot id).
    if (auto boot = proc::ReadBootState(ProcRoot(cfg_.proc_root))) {
      states_.EnablePersistence(cfg_.state_dir, boot->boot_id, boot->boot_time_seconds);
      states_.SetBootId(boot->boot_id);
    } else {
      spdlog::warn("baselines: cannot read boot state ({}); baselines are kept in memory only",
                   boot.error().message);
    }
    exporter_ = std::make_unique<Exporter>(ProcRoot(cfg_.proc_root), cfg_.collectors);
    // The probe families are prepared when a run is recorded (listener below) and copied here.
    exporter_->AddTextSource([this] { return probe_families_.Body(states_.Snapshot()); });
    exporter_->AddSource([](std::vector<prometheus::MetricFamily>& out) {
      AppendStateHealthFamilies(StateHealth::Process().View(), out);
    });
    server_.Route("/metrics", [this] {
      auto rendered = exporter_->Render();
      return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", std::move(rendered.head),
                          std::move(rendered.tail)};
    });
    // Liveness, cheap on purpose: the systemd watchdog pings it (Alive()).
    server_.Route("/-/healthy", [] {
      return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"};
    });
    // Status page and its JSON (status.enabled; off: the static landing page and a 404).
    status_root_ = ProcRoot(cfg_.proc_root);
    ApplyStatus(cfg_);
    server_.Route("/", [this] {
      if (!status_enabled_) return HttpResponse{200, "text/html; charset=utf-8", kLandingPage};
      return HttpResponse{200, "text/html; charset=utf-8", RenderStatusPage(StatusInput())};
    });
    server_.Route("/api/v1/probes", [this](const HttpQuery& query) {
      if (!status_enabled_) {
        return HttpResponse{404, "text/plain; charset=utf-8",
                            "status page disabled (status.enabled: false)\n"};
      }
      // ?runs=N: only the newest N history points per probe (0: none), for scripts that poll.
      std::optional<std::size_t> runs;
      if (auto it = query.find("runs"); it != query.end()) {
        auto parsed = ParseRunsArgument(it->second);
        if (!parsed) {
          return HttpResponse{400, "text/plain; charset=utf-8", parsed.error().message + "\n"};
        }
        runs = *parsed;
      }
      auto boot = proc::ReadBootState(status_root_);
      return HttpResponse{200, "application/json",
                          ProbesApiJson(boot ? boot->boot_id : std::nullopt,
                                        boot ? boot->uptime_seconds : std::nullopt,
                                        states_.history_capacity(), *states_.Snapshot(), runs)};
    });
    // The boot record of every probe (daemon/boots_report.h), same access as /api/v1/probes.
    server_.Route("/api/v1/boots", [this] {
      if (!status_enabled_) {
        return HttpResponse{404, "text/plain; charset=utf-8",
                            "status page disabled (status.enabled: false)\n"};
      }
      auto boot = proc::ReadBootState(status_root_);
      return HttpResponse{200, "application/json",
                          BootsApiJson(boot ? boot->boot_id : std::nullopt, states_.Baselines())};
    });
    if (auto started = server_.Start(ServerOptions(cfg_)); !started) {
      spdlog::error("{}", started.error().message);
      notifier_.Status(started.error().message);
      return kExitFailure;
    }
    spdlog::info("iodriftd {} serving metrics on {}/metrics proc_root={} state_dir={} probes={}",
                 IODRIFT_VERSION, server_.BaseUrl(), cfg_.proc_root, cfg_.state_dir,
                 cfg_.probes.size());
    // The one owner of every probe's state is fed here; everything else reads its snapshot.
    scheduler_.AddListener([this](const probes::ProbeResult& r) {
      if (states_.Record(r)) probe_families_.Prepare(states_.Snapshot());
      probes::RetryUnsavedCalibrations();  // a state dir writable again takes them at once
    });
    scheduler_.AddListener([this](const probes::ProbeResult& r) { probe_log_.Record(r); });
    // A slow run whose verdict needs its twin's evidence from the same moment (verdict.h, the
    // twin rule) gets that twin run now: it starts when this run frees the device lane.
    scheduler_.AddListener([this](const probes::ProbeResult& r) {
      const auto state = states_.Get(r.name);
      if (!state || state->last.generation != r.generation) return;
      if (state->verdict.wants_twin_run && !state->twin.empty()) {
        spdlog::debug("probe={} verdict needs a contemporaneous run of its twin {}: running it",
                      r.name, state->twin);
        (void)scheduler_.RunNow(state->twin);
      }
    });
    scheduler_.Apply(states_.Define(cfg_.probes));
    scheduler_.Start();
    diagnoser_ = std::make_unique<Diagnoser>(MakeDiagnoseOptions(cfg_), scheduler_, states_);
    // D-Bus comes after the scheduler (its RunProbe needs it) and goes first on shutdown. It
    // never stops the daemon: an unusable bus is logged and retried (or, for auto, left off).
    if (cfg_.dbus != "none") {
      dbus::DbusServiceOptions dbus_options;
      dbus_options.mode = cfg_.dbus;
      dbus_options.proc_root = ProcRoot(cfg_.proc_root);
      dbus_options.record = [this](const std::string& name) { return states_.Get(name); };
      dbus_options.baselines = [this] { return states_.Baselines(); };
      dbus_options.diagnoser = diagnoser_.get();
      dbus_ = dbus::DbusService::Start(std::move(dbus_options), scheduler_,
                                       [this] { return Reload(); });
    }
    // Config valid, listener bound, bus name requested: tell systemd, then keep it informed.
    if (auto listen = config::ParseListen(cfg_.listen)) http_host_ = listen->host;
    notifier_.Ready(StatusText());
    notifier_.StartWatchdog([this] { return Alive(); }, [this] { return StatusText(); });
    for (;;) {
      int sig = 0;
      if (sigwait(&signals, &sig) != 0) continue;
      if (sig == SIGHUP) {
        Reload();
        continue;
      }
      notifier_.Stopping();  // first: systemd shows "deactivating"; also ends the watchdog
      spdlog::info("received {}, stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      break;
    }
    // Baselines first: whatever the bus does below (a stalled dbus-daemon), the unit's stop
    // timeout never kills the daemon before they are on disk. Flushed again after the last run.
    states_.Flush();
    dbus_.reset();
    diagnoser_.reset();  // cancels a running experiment (its runs end with the scheduler's)
    scheduler_.Stop();
    states_.Flush();
    server_.Stop();
    spdlog::info("stopped");
    return kExitOk;
  }

 private:
  // "5 probes, last run 12 s ago, 0 failing" for systemctl status. Any thread.
  std::string StatusText() const {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    return ProbeStatusText(*states_.Snapshot(), now,
                           StateProblemText(StateHealth::Process().View()));
  }

  // Watchdog liveness (watchdog thread): the scheduler's lock can be taken (a deadlocked
  // dispatcher holds it; Probes() then blocks and the pings stop) and the HTTP listener answers
  // HEAD /-/healthy on its own address (not /, which renders the status page). A probe stuck
  // in the kernel holds neither.
  // Any HTTP status counts, so basic auth (401) does not matter. Over TLS a plain HEAD gets no
  // HTTP answer; TlsListenerReacts checks the same thing without a handshake (liveness.h).
  bool Alive() const {
    (void)scheduler_.Probes();
    if (server_.tls())
      return TlsListenerReacts(http_host_, server_.port(), std::chrono::seconds(2));
    return HttpAnswers(http_host_, server_.port(), "/-/healthy", std::chrono::seconds(2));
  }

  // Re-reads the config file and applies it; on problems keeps the running config. Returns the
  // problems ("FILE:LINE:COLUMN: KEY: what is wrong"), empty when applied (or when there is no
  // file to re-read). Called on SIGHUP (main thread) and by D-Bus Reload (bus thread).
  std::vector<std::string> Reload() {
    std::lock_guard lock(reload_mu_);
    notifier_.Reloading();
    // READY=1 again when this reload ends, applied or rejected (every return path below).
    struct ReadyOnExit {
      Daemon* self;
      ~ReadyOnExit() { self->notifier_.Ready(self->StatusText()); }
    } ready_on_exit{this};
    if (!cl_.config_file) {
      spdlog::info("reload: no --config file, nothing to re-read");
      return {};
    }
    auto loaded = LoadEffectiveConfig(cl_);
    if (!loaded) {
      std::vector<std::string> problems;
      for (const auto& problem : loaded.error()) {
        spdlog::error("reload rejected: {}", problem.ToString());
        problems.push_back(problem.ToString());
      }
      spdlog::error("reload: keeping the running config ({} problems)", loaded.error().size());
      return problems;
    }
    if (loaded->listen != cfg_.listen) {
      spdlog::warn("reload: listen changed to {}; takes effect after a restart", loaded->listen);
      loaded->listen = cfg_.listen;
    }
    if (loaded->http != cfg_.http) {
      spdlog::warn(
          "reload: http (connections, TLS, basic auth) changed; takes effect after a "
          "restart");
      loaded->http = cfg_.http;
    }
    if (loaded->dbus != cfg_.dbus) {
      spdlog::warn("reload: dbus changed to {}; takes effect after a restart", loaded->dbus);
      loaded->dbus = cfg_.dbus;
    }
    if (loaded->state_dir != cfg_.state_dir || loaded->proc_root != cfg_.proc_root ||
        loaded->scheduler != cfg_.scheduler) {
      spdlog::warn(
          "reload: state_dir, proc_root and scheduler changes for probes take effect "
          "after a restart");
    }
    exporter_->Reconfigure(ProcRoot(loaded->proc_root), loaded->collectors);
    PrepareStateDir(*loaded);
    scheduler_.Apply(states_.Define(loaded->probes));
    // A directory target remounted on another device is accepted again (its error says so).
    target_devices_->Forget();
    ApplyStatus(*loaded);
    if (diagnoser_) diagnoser_->SetOptions(MakeDiagnoseOptions(*loaded));
    if (auto level = ParseLogLevel(loaded->log_level)) spdlog::set_level(*level);
    cfg_ = std::move(*loaded);
    spdlog::info("reload: applied {} probes={}", *cl_.config_file, cfg_.probes.size());
    return {};
  }

  // status.* (start and reload): the history's bound, on/off.
  void ApplyStatus(const config::Config& cfg) {
    status_enabled_ = cfg.status.enabled;
    states_.ConfigureHistory(cfg.status.enabled, cfg.status.history_runs);
  }

  // What the status page shows, gathered now (HTTP pool thread).
  StatusPageInput StatusInput() const {
    StatusPageInput in;
    in.version = IODRIFT_VERSION;
    in.now_seconds =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (auto boot = proc::ReadBootState(status_root_)) {
      in.boot_id = boot->boot_id;
      in.uptime_seconds = boot->uptime_seconds;
    }
    in.probes = states_.Snapshot();
    in.history_runs = states_.history_capacity();
    in.baselines = states_.Baselines();
    in.state_problem = StateProblemText(StateHealth::Process().View());
    return in;
  }

  CommandLine cl_;
  config::Config cfg_;
  analysis::ProbeStates states_;          // the one owner of every probe's state
  PreparedProbeFamilies probe_families_;  // the probe families' text, made once per snapshot
  ProbeLog probe_log_;                    // before scheduler_: its listener outlives no part of it
  std::atomic<bool> status_enabled_{true};
  ProcRoot status_root_;  // proc root at start (handlers must not read cfg_, which reloads swap)
  // The filesystem of each directory target, shared with the scheduler's ProbeEnv; reload forgets.
  std::shared_ptr<probes::TargetDevices> target_devices_ =
      std::make_shared<probes::TargetDevices>();
  Scheduler scheduler_;
  std::unique_ptr<Exporter> exporter_;
  HttpServer server_;
  std::mutex reload_mu_;                     // SIGHUP and D-Bus Reload may race
  std::unique_ptr<Diagnoser> diagnoser_;     // after scheduler_ and states_: destroyed first
  std::unique_ptr<dbus::DbusService> dbus_;  // after scheduler_: destroyed before it
  std::string http_host_ = "127.0.0.1";
  SystemdNotifier notifier_;  // last: its watchdog thread calls Alive(), so it stops first
};

}  // namespace

config::LoadResult LoadEffectiveConfig(const CommandLine& cl) {
  config::LoadResult loaded;
  if (cl.config_file) {
    loaded = config::LoadFromFile(*cl.config_file);
  } else {
    loaded = config::DefaultConfig(cl.state_dir.value_or(config::DefaultStateDir()));
  }
  if (!loaded) return loaded;
  ApplyOverrides(cl, *loaded);
  // Flags get the same validation as the file.
  std::vector<config::Problem> problems;
  auto check = [&](const char* key, std::optional<std::string> problem) {
    if (problem) problems.push_back({"command line", 0, 0, key, std::move(*problem)});
  };
  if (cl.log_level) check("--log-level", config::CheckLogLevel(loaded->log_level));
  if (cl.listen) check("--listen", config::CheckListen(loaded->listen));
  if (cl.dbus) check("--dbus", config::CheckDbus(loaded->dbus));
  if (!problems.empty()) return tl::unexpected(std::move(problems));
  return loaded;
}

sigset_t HandledSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

int Main(int argc, char** argv, const sigset_t* mask_at_exec) {
  sigset_t before;
  BlockHandledSignals(&before);  // first: see BlockHandledSignals
  if (mask_at_exec) before = *mask_at_exec;
  std::vector<std::string> args(argv + 1, argv + argc);
  auto cl = ParseCommandLine(args);
  if (!cl) {
    std::fprintf(stderr, "iodriftd: %s\nTry 'iodriftd --help' for more information.\n",
                 cl.error().message.c_str());
    return kExitUsage;
  }
  if (cl->help) {
    std::fputs(HelpText(), stdout);
    return kExitOk;
  }
  if (cl->version) {
    std::printf("iodriftd %s (revision %s)\n", IODRIFT_VERSION, IODRIFT_REVISION);
    return kExitOk;
  }
  auto cfg = LoadEffectiveConfig(*cl);
  if (!cfg) {
    for (const auto& problem : cfg.error())
      std::fprintf(stderr, "%s\n", problem.ToString().c_str());
    return kExitConfig;
  }
  if (cl->check_config || cl->once) {
    // One-shot modes keep the default actions (Ctrl-C ends them); a signal that came meanwhile
    // is delivered now.
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }
  if (cl->check_config) {
    const auto warnings = TargetWarnings(*cfg);
    for (const auto& warning : warnings) std::fprintf(stderr, "warning: %s\n", warning.c_str());
    std::printf(
        "%s: ok (%zu probes%s)\n", cl->config_file.value_or("embedded default").c_str(),
        cfg->probes.size(),
        warnings.empty() ? "" : (", " + std::to_string(warnings.size()) + " warnings").c_str());
    return cl->strict && !warnings.empty() ? kExitConfig : kExitOk;
  }
  SetUpLogging(*ParseLogLevel(cfg->log_level));
  if (cl->once) return RunOnce(*cfg, cl->json);
  return Daemon(std::move(*cl), std::move(*cfg)).Run();
}

}  // namespace iodrift::daemon
