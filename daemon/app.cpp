#include "daemon/app.h"

#include <signal.h>

#include <cstdio>
#include <iostream>

#include <spdlog/spdlog.h>

#include "daemon/exporter.h"
#include "daemon/http_server.h"
#include "daemon/logging.h"
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

// Applies command-line overrides to `cfg`.
void ApplyOverrides(const CommandLine& cl, config::Config& cfg) {
  if (cl.listen) cfg.listen = *cl.listen;
  if (cl.proc_root) cfg.proc_root = *cl.proc_root;
  if (cl.state_dir) cfg.state_dir = *cl.state_dir;
  if (cl.dbus) cfg.dbus = *cl.dbus;
  if (cl.log_level) cfg.log_level = *cl.log_level;
  if (cfg.state_dir.empty()) cfg.state_dir = config::DefaultStateDir();
}

HttpServerOptions ServerOptions(const config::Config& cfg) {
  HttpServerOptions options;
  options.listen = cfg.listen;
  options.max_connections = cfg.http.max_connections;
  options.connection_timeout_seconds = static_cast<unsigned>(
      std::max<long long>(1, std::chrono::duration_cast<std::chrono::seconds>(
                                 cfg.http.connection_timeout).count()));
  return options;
}

// Blocks the signals we handle in every thread (threads inherit the mask), so sigwait() in the
// main thread receives them.
sigset_t BlockHandledSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

class Daemon {
 public:
  Daemon(CommandLine cl, config::Config cfg) : cl_(std::move(cl)), cfg_(std::move(cfg)) {}

  int Run() {
    sigset_t signals = BlockHandledSignals();
    exporter_ = std::make_unique<Exporter>(ProcRoot(cfg_.proc_root), cfg_.collectors);
    server_.Route("/metrics", [this] {
      return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", exporter_->RenderText()};
    });
    server_.Route("/", [] { return HttpResponse{200, "text/html; charset=utf-8", kLandingPage}; });
    if (auto started = server_.Start(ServerOptions(cfg_)); !started) {
      spdlog::error("{}", started.error().message);
      return kExitFailure;
    }
    spdlog::info("iodriftd {} serving metrics on {}/metrics proc_root={} state_dir={} probes={}",
                 IODRIFT_VERSION, server_.BaseUrl(), cfg_.proc_root, cfg_.state_dir,
                 cfg_.probes.size());
    for (;;) {
      int sig = 0;
      if (sigwait(&signals, &sig) != 0) continue;
      if (sig == SIGHUP) {
        Reload();
        continue;
      }
      spdlog::info("received {}, stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      break;
    }
    server_.Stop();
    spdlog::info("stopped");
    return kExitOk;
  }

 private:
  void Reload() {
    if (!cl_.config_file) {
      spdlog::info("reload: no --config file, nothing to re-read");
      return;
    }
    auto loaded = LoadEffectiveConfig(cl_);
    if (!loaded) {
      for (const auto& problem : loaded.error()) {
        spdlog::error("reload rejected: {}", problem.ToString());
      }
      spdlog::error("reload: keeping the running config ({} problems)", loaded.error().size());
      return;
    }
    if (loaded->listen != cfg_.listen) {
      spdlog::warn("reload: listen changed to {}; takes effect after a restart", loaded->listen);
      loaded->listen = cfg_.listen;
    }
    exporter_->Reconfigure(ProcRoot(loaded->proc_root), loaded->collectors);
    if (auto level = ParseLogLevel(loaded->log_level)) spdlog::set_level(*level);
    cfg_ = std::move(*loaded);
    spdlog::info("reload: applied {} probes={}", *cl_.config_file, cfg_.probes.size());
  }

  CommandLine cl_;
  config::Config cfg_;
  std::unique_ptr<Exporter> exporter_;
  HttpServer server_;
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
  if (!ParseLogLevel(loaded->log_level)) {
    problems.push_back({"command line", 0, 0, "log_level",
                        "must be one of trace|debug|info|warn|error, got '" + loaded->log_level + "'"});
  }
  if (auto hp = SplitHostPort(loaded->listen); !hp) {
    problems.push_back({"command line", 0, 0, "listen", hp.error().message});
  }
  if (!problems.empty()) return tl::unexpected(std::move(problems));
  return loaded;
}

int Main(int argc, char** argv) {
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
    for (const auto& problem : cfg.error()) std::fprintf(stderr, "%s\n", problem.ToString().c_str());
    return kExitConfig;
  }
  if (cl->check_config) {
    std::printf("%s: ok (%zu probes)\n", cl->config_file.value_or("embedded default").c_str(),
                cfg->probes.size());
    return kExitOk;
  }
  SetUpLogging(*ParseLogLevel(cfg->log_level));
  if (cl->once) {
    spdlog::error("--once: the probe engine is not built into this version yet");
    return kExitFailure;
  }
  return Daemon(std::move(*cl), std::move(*cfg)).Run();
}

}  // namespace iodrift::daemon
