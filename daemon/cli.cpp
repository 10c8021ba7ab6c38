#include "daemon/cli.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "collectors/probes/memory_room.h"

namespace iodrift::daemon {

const char* HelpText() {
  return R"(Usage: iodriftd [OPTION]...

Measure a machine's disk and page-cache read throughput with light periodic probes, record the
memory state (meminfo, vmstat, slabinfo, PSI, buddyinfo, uptime) next to every result, and serve
both as Prometheus metrics.

Without options iodriftd runs on its embedded default config: all memory-state collectors on,
one probe of each kind on a probe directory inside the state directory, metrics on
http://127.0.0.1:9723/metrics.

Options:
  -c, --config FILE      read the YAML config FILE (see /etc/iodrift/iodrift.yaml)
      --listen HOST:PORT serve HTTP on HOST:PORT; [ADDR]:PORT for IPv6; port 0 picks a free
                         port and logs it (default 127.0.0.1:9723)
      --proc-root DIR    read kernel state from DIR instead of /proc (e.g. /host/proc in a
                         container, or a captured fixture tree)
      --state-dir DIR    keep probe files, calibration and baselines in DIR (default
                         /var/lib/iodrift as root, else $XDG_STATE_HOME/iodrift or
                         ~/.local/state/iodrift)
      --dbus MODE        auto | system | session | none | a D-Bus ADDRESS (default auto:
                         the system bus if the name can be owned there, as any user, else
                         the session bus if DBUS_SESSION_BUS_ADDRESS is set, else none)
      --log-level LEVEL  trace | debug | info | warn | error (default info)
      --check-config     validate the config and exit: 0 when valid, else 78 with every
                         problem printed as FILE:LINE:COLUMN: KEY: what is wrong; a probe
                         whose target does not exist or cannot be opened by this user is a
                         warning (exit 0: a target may appear later)
      --strict           with --check-config: a target warning fails too (exit 78)
      --once             run every configured probe once, print a table and exit
                         (0 when all probes succeeded, 1 otherwise)
      --json             with --once: print JSON instead of the table
  -h, --help             show this help and exit
  -V, --version          show the version and exit

Signals:
  SIGHUP                 re-read the config file; on error keep the running config and log
                         every problem
  SIGTERM, SIGINT        stop scheduling, abandon running probes and exit

Exit status:
  0 success, 1 runtime failure (e.g. the listen address is in use), 2 usage error,
  78 invalid configuration (with --check-config --strict also a target warning).

Endpoints (HTTP, GET only):
  /metrics               Prometheus text format (gzip when the client accepts it)
  /                      the status page: every probe's last result, baseline and history
  /api/v1/probes         the same as JSON (?runs=N: only the newest N history points)
  /api/v1/boots          every probe's record of its last 20 boots as JSON
  /-/healthy             200 "ok" while the daemon is alive (for load balancers, probes)

D-Bus (org.iodrift.Monitor1, see iodriftctl(1)): ListProbes, Snapshot, Explain, Boots and
Version for every user; RunProbe and Reload for root and members of group iodrift.

Documentation: README.md and docs/ in the source tree (metrics: docs/metrics.md, config keys:
docs/configuration.md).
)";
}

Expected<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine cl;
  struct ValueFlag {
    std::string_view long_name;
    std::string_view short_name;
    std::optional<std::string> CommandLine::*field;
  };
  static const ValueFlag kValueFlags[] = {
      {"--config", "-c", &CommandLine::config_file},
      {"--listen", "", &CommandLine::listen},
      {"--proc-root", "", &CommandLine::proc_root},
      {"--state-dir", "", &CommandLine::state_dir},
      {"--dbus", "", &CommandLine::dbus},
      {"--log-level", "", &CommandLine::log_level},
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::string_view name = arg;
    std::optional<std::string> inline_value;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      inline_value = std::string(arg.substr(eq + 1));
    }
    if (name == "--check-config") {
      cl.check_config = true;
      continue;
    }
    if (name == "--strict") {
      cl.strict = true;
      continue;
    }
    if (name == "--once") {
      cl.once = true;
      continue;
    }
    if (name == "--json") {
      cl.json = true;
      continue;
    }
    if (name == "--help" || name == "-h") {
      cl.help = true;
      continue;
    }
    if (name == "--version" || name == "-V") {
      cl.version = true;
      continue;
    }
    bool matched = false;
    for (const auto& flag : kValueFlags) {
      if (name != flag.long_name && (flag.short_name.empty() || name != flag.short_name)) continue;
      matched = true;
      if (inline_value) {
        cl.*flag.field = *inline_value;
      } else if (i + 1 < args.size()) {
        cl.*flag.field = args[++i];
      } else {
        return Fail(EINVAL, "option '" + std::string(name) + "' requires an argument");
      }
      if ((cl.*flag.field)->empty()) {
        return Fail(EINVAL, "option '" + std::string(name) + "' requires a non-empty argument");
      }
    }
    if (!matched) {
      if (!arg.empty() && arg[0] == '-') return Fail(EINVAL, "unknown option '" + args[i] + "'");
      return Fail(EINVAL, "unexpected argument '" + args[i] + "'");
    }
  }
  if (cl.json && !cl.once) return Fail(EINVAL, "--json goes with --once");
  if (cl.strict && !cl.check_config) return Fail(EINVAL, "--strict goes with --check-config");
  return cl;
}

std::vector<std::string> TargetWarnings(const config::Config& cfg) {
  std::vector<std::string> out;
  for (const auto& probe : cfg.probes) {
    if (probe.target.empty()) continue;  // memory
    // O_NONBLOCK: a FIFO or a device must not hold the check; nothing is read.
    int fd = open(probe.target.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
      const int err = errno;
      std::string why = std::strerror(err);
      if (err == EACCES || err == EPERM) why += " (for user " + std::to_string(geteuid()) + ")";
      out.push_back("probe " + probe.name + ": target " + probe.target + ": " + why);
      continue;
    }
    close(fd);
  }
  // Memory room: a run that cannot fit would get the daemon OOM-killed (then refused per run).
  const probes::MemoryRoom room = probes::ReadMemoryRoom(
      ProcRoot(cfg.proc_root), std::filesystem::path(cfg.sys_root) / "fs/cgroup");
  for (const auto& probe : cfg.probes) {
    if (auto problem = probes::RoomProblem(probe, room)) out.push_back(*problem);
  }
  return out;
}

}  // namespace iodrift::daemon
