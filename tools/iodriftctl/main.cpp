// iodriftctl: the command-line client of iodriftd's D-Bus API (org.iodrift.Monitor1; see
// daemon/dbus/org.iodrift.Monitor1.xml and docs/dbus.md).
//
//   iodriftctl [--bus system|session|ADDRESS] COMMAND [ARGS]
//   iodriftctl --version | --help
//     list [--json]          configured probes
//     run NAME [--json]      run a probe now, print its result (same figures as `iodriftd --once`)
//     snapshot [--json]      memory state now (meminfo in bytes, uptime)
//     explain NAME [--json]  verdict, ratio to the post-boot baseline and the memory features
//                            ranked by correlation with the probe's figure
//     diagnose NAME [--json] the recovery experiment: re-measure after dropping caches, slab,
//                            compacting and warming free memory (opt-in, root/group iodrift);
//                            as root it makes the /proc/sys/vm steps itself between the
//                            daemon's measurements (the daemon never has that right)
//     boots NAME [--json]    the probe's record of its last boots (tools/iodriftctl/boots.h)
//     reload                 make the daemon re-read its config file; prints the problems
//     watch [--json]         print every ProbeCompleted signal (with its start time) until
//                            interrupted
//
// Exit codes: 0 ok; 1 the probe failed or the daemon refused (rate limit, busy, access denied,
// config problems); 2 usage (including an unknown probe name); 3 daemon unreachable.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <sdbus-c++/sdbus-c++.h>

#include "collectors/common/text.h"
#include "daemon/dbus/names.h"
#include "daemon/dbus/result_dict.h"
#include "daemon/json_writer.h"
#include "daemon/probe_report.h"
#include "iodrift_version.h"
#include "monitor1_proxy.h"  // generated from org.iodrift.Monitor1.xml
#include "tools/iodriftctl/boots.h"

namespace {

namespace dbus = iodrift::daemon::dbus;
using iodrift::daemon::JsonWriter;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

// A probe may take up to its `timeout` (default 30 s) plus a wait for its device.
constexpr auto kRunTimeout = std::chrono::seconds(300);

// One repeat of a diagnose step: a probe run and its twin's, each up to its timeout plus a wait
// for the device.
constexpr auto kDiagnoseTimeout = std::chrono::seconds(600);

// Where the root steps write (/proc/sys/vm); IODRIFTCTL_VM_DIR replaces it (tests; ignored
// set-user-ID, secure_getenv).
std::string VmDir() {
  const char* dir = secure_getenv("IODRIFTCTL_VM_DIR");
  return dir && *dir ? dir : "/proc/sys/vm";
}

const char* kMainHelp = R"(Usage: iodriftctl [--bus system|session|ADDRESS] COMMAND [ARGS]
       iodriftctl --version | --help

Talks to iodriftd over D-Bus (org.iodrift.Monitor1).

Commands:
  list [--json]         configured probes: name, kind, target
  run NAME [--json]     run probe NAME now and print its result
  snapshot [--json]     the memory state now (meminfo fields in bytes, uptime)
  explain NAME [--json] why probe NAME is where it is: a verdict (the cause, e.g.
                        device, memory_reclaim, cpu_contention, or undetermined),
                        ratio to its post-boot baseline and the memory features
                        that move with it
  diagnose NAME [--json] would a reboot help? re-measure probe NAME after dropping
                        caches, slab, compacting (those three as root only) and
                        warming free memory (opt-in: diagnose.enabled: true)
  boots NAME [--json]   compare probe NAME's last 20 boots: its ratio at 1 h, 1 d,
                        7 d, 30 d of uptime, the last ratio and the worst of each boot
  reload                make iodriftd re-read its config file
  watch [--json]        print every completed probe (ProbeCompleted) until interrupted

Options:
  --bus BUS             system (default), session, or a D-Bus address such as
                        unix:path=/run/user/1000/bus
  -h, --help            this help; `iodriftctl COMMAND --help` for one command
  -V, --version         show the version and exit

Access: list, snapshot, explain, boots are for every user; run, diagnose and reload for root and members of
group iodrift (others get org.iodrift.Error.AccessDenied, exit 1).

Exit status: 0 ok, 1 probe failed or request refused (rate limit, busy, access denied, config
problems), 2 usage (including an unknown probe name), 3 bus or daemon unreachable.
)";

const std::map<std::string, const char*> kCommandHelp = {
    {"list", R"(Usage: iodriftctl [--bus BUS] list [--json]

Lists the probes iodriftd runs: name, kind and target (empty for memory).
  --json    a JSON array of {"name", "kind", "target"}
)"},
    {"run", R"(Usage: iodriftctl [--bus BUS] run NAME [--json]

Runs probe NAME now and prints its result as `iodriftd --once` does. If that probe is already
running, the running result is returned. Calls are rate limited per caller and globally; a
refused call says when to retry.
  --json    the result as one probe object of `iodriftd --once --json`

Exit status: 0 the probe succeeded, 1 it failed (or the call was refused), 2 unknown probe,
3 daemon unreachable.
)"},
    {"snapshot", R"(Usage: iodriftctl [--bus BUS] snapshot [--json]

Prints the memory state now: every /proc/meminfo field (bytes; HugePages_* are counts),
uptime_seconds and boot_time_seconds.
  --json    a JSON object {FIELD: integer}
)"},
    {"explain", R"(Usage: iodriftctl [--bus BUS] explain NAME [--json]

Prints the verdict line first ("Verdict: CAUSE: FIGURES", CAUSE: what the time the run added
against the baseline runs went into, or undetermined; docs/reading-drift.md "Reading a
slowdown" lists the causes), then probe NAME's last figure, where the last run's
time went, its ratio to the post-boot baseline (the median of the first
clean runs after boot), the worst ratio of this boot with the uptime it happened at, and the
memory-state features ranked by |Spearman rho| with the figure over the recent runs, each with
its value now and at baseline time. rho < 0: the figure falls as the feature rises. Nothing is
run; the answer comes from results the daemon already has.
  --json    {"name", "text", "cause": CAUSE, "verdict": CAUSE (the same, its first name),
            "verdict_text": the verdict line,
            "figures": {"last", "baseline", "ratio", "worst_ratio",
            "uptime_at_worst", "window_runs", "baseline_runs_needed",
            "baseline_runs_counted", "rho.FEATURE", "time.PART", ...}} (figures that do not exist yet
            are left out)

Exit status: 0 ok, 2 unknown probe, 3 daemon unreachable.
)"},
    {"diagnose", R"(Usage: iodriftctl [--bus BUS] diagnose NAME [--json]

Would a reboot help? The recovery experiment on probe NAME (off unless iodriftd's config has
`diagnose.enabled: true`; root and group iodrift only; one at a time per machine). It measures
the unchanged state 3 times (the control: the noise of the figure), then walks these steps,
each measured 3 times with its intervention made again right before every measurement, and
stops at the first whose median is within 10 % of the baseline and whose every figure is above
the control's highest:
  drop_caches        drop clean page cache (/proc/sys/vm/drop_caches 1); root only: machine-wide,
                     every process re-reads its files from disk afterwards
  drop_slab          drop reclaimable slab: dentries, inodes (drop_caches 2); root only
  compact            compact memory (/proc/sys/vm/compact_memory); root only: CPU time and
                     page migration across the machine for up to seconds
  warm_free_memory   the daemon touches and releases at least what one run allocates (up to
                     diagnose.warm_size, within MemAvailable and its own cgroup limit) right
                     before each run, so pages the hypervisor took back are backed again
The root steps are made by this command, as root, between the daemon's measurements: the daemon
never has the right to. Run by a member of group iodrift who is not root, they are reported
skipped ("needs root: run iodriftctl diagnose as root"). A `direct` probe on the same target, if
configured, is measured after every run too. Experiment runs are kept apart from the probe's
scheduled runs (no baseline, history or worst ratio).
Prints the answer ("recovered by warming free memory: ratio 0.31 (control 0.29-0.33) -> 0.97;
...") and one line per step: median, spread, ratio to the baseline, whether it clears the
control, kernel CPU per GiB, memory deltas, the direct twin.

Limits (each refusal names the one that applied): one experiment at a time; a cooldown after
each (diagnose.cooldown, 30 min); the RunProbe rate limiter, which counts the experiment's runs;
MemAvailable (diagnose.min_available), PSI memory and io (diagnose.max_memory_pressure,
max_io_pressure) re-checked before every step and run; the whole experiment within
diagnose.timeout (5 min). A reload that changes or removes the probe aborts the experiment: the
answer says so and nothing further is done. Ctrl-C ends it the same way.
  --json    {"name", "text", "figures": {"baseline", "recovered", "runs", "ratio.STEP",
            "figure.STEP", "spread.STEP", "cleared.STEP", "direct.STEP", "time.PART.STEP", ...}}

Exit status: 0 recovered or nothing to recover, 1 not recovered, aborted or refused (off,
busy, cooldown, pressure, rate limit, no baseline), 2 unknown probe, 3 daemon unreachable.

Environment: IODRIFTCTL_VM_DIR, a directory that stands in for /proc/sys/vm for the root steps
(the test suite uses it so that an unprivileged test never drops the machine's caches). Ignored
when iodriftctl runs set-user-ID or with raised capabilities (secure_getenv).
)"},
    {"boots", iodrift::ctl::kBootsHelp},
    {"reload", R"(Usage: iodriftctl [--bus BUS] reload

Makes iodriftd re-read and apply its config file. When the file has problems the daemon keeps
its running config; the problems are printed and the exit status is 1.
)"},
    {"watch", R"(Usage: iodriftctl [--bus BUS] watch [--json]

Prints one line per completed probe run (scheduled or on demand) until interrupted: the run's
start time (local, ISO 8601), probe, kind, result, figure, duration and the error if any.
  --json    one JSON object per line, as one probe of `iodriftd --once --json`
            (start_time_seconds is the start time)
)"},
};

// Text from the service as the terminal may show it: every control character except newline
// and tab (ESC, CR, DEL, the C1 controls) and bytes that are not UTF-8 escaped as \xNN / \u00NN
// (text.h TerminalSafe). A hostile or broken service cannot move the cursor, retitle the window
// or hide a line. JSON output needs none of it: JsonWriter escapes every control character.
std::string Safe(std::string_view s) { return iodrift::text::TerminalSafe(s); }

int Usage(const std::string& message) {
  std::fprintf(stderr, "iodriftctl: %s\nTry 'iodriftctl --help' for more information.\n",
               message.c_str());
  return kExitUsage;
}

// The client proxy; forwards ProbeCompleted to `on_completed`.
class Client final : public sdbus::ProxyInterfaces<org::iodrift::Monitor1_proxy> {
 public:
  explicit Client(std::unique_ptr<sdbus::IConnection> connection)
      : ProxyInterfaces(std::move(connection), dbus::kBusName, dbus::kObjectPath) {
    registerProxy();
  }
  ~Client() { unregisterProxy(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  dbus::Dict RunProbeWithTimeout(const std::string& name) {
    dbus::Dict result;
    getProxy()
        .callMethod("RunProbe")
        .onInterface(INTERFACE_NAME)
        .withTimeout(kRunTimeout)
        .withArguments(name)
        .storeResultsTo(result);
    return result;
  }

  std::tuple<std::string, std::string, std::map<std::string, double>> DiagnoseMeasureWithTimeout(
      const std::string& session, const std::string& step, const std::string& skipped) {
    std::string next, text;
    std::map<std::string, double> figures;
    getProxy()
        .callMethod("DiagnoseMeasure")
        .onInterface(INTERFACE_NAME)
        .withTimeout(kDiagnoseTimeout)
        .withArguments(session, step, skipped)
        .storeResultsTo(next, text, figures);
    return {next, text, figures};
  }

  // Set from the main thread while the proxy's event-loop thread may already deliver signals.
  void OnCompleted(std::function<void(const std::string&, const dbus::Dict&)> fn) {
    std::lock_guard lock(mu_);
    on_completed_ = std::move(fn);
  }

 private:
  void onProbeCompleted(const std::string& name, const dbus::Dict& result) override {
    std::lock_guard lock(mu_);
    if (on_completed_) on_completed_(name, result);
  }

  std::mutex mu_;
  std::function<void(const std::string&, const dbus::Dict&)> on_completed_;
};

// Which bus `bus` names, for messages: "the system bus (unix:path=/run/dbus/system_bus_socket)".
std::string DescribeBus(const std::string& bus) {
  if (bus == "system") {
    const char* env = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
    return std::string("the system bus (") + (env ? env : "unix:path=/run/dbus/system_bus_socket") +
           ")";
  }
  if (bus == "session") {
    const char* env = std::getenv("DBUS_SESSION_BUS_ADDRESS");
    return std::string("the session bus (") + (env ? env : "DBUS_SESSION_BUS_ADDRESS is not set") +
           ")";
  }
  return "bus " + bus;
}

bool IsUnreachable(const std::string& error_name) {
  static const char* const kNames[] = {
      "org.freedesktop.DBus.Error.ServiceUnknown",  "org.freedesktop.DBus.Error.NameHasNoOwner",
      "org.freedesktop.DBus.Error.NoReply",         "org.freedesktop.DBus.Error.Disconnected",
      "org.freedesktop.DBus.Error.NoServer",        "org.freedesktop.DBus.Error.FileNotFound",
      "org.freedesktop.DBus.Error.UnknownObject",   "org.freedesktop.DBus.Error.UnknownMethod",
      "org.freedesktop.DBus.Error.UnknownInterface"};
  for (const char* name : kNames) {
    if (error_name == name) return true;
  }
  return false;
}

// Prints a D-Bus error and maps it to an exit status.
int ReportError(const sdbus::Error& e, const std::string& bus) {
  std::string message = e.getMessage().empty() ? e.getName() : e.getMessage();
  std::fprintf(stderr, "iodriftctl: %s (%s)\n", Safe(message).c_str(), Safe(e.getName()).c_str());
  if (IsUnreachable(e.getName())) {
    std::fprintf(stderr,
                 "iodriftctl: no iodriftd answers as %s on %s; is it running (systemctl status "
                 "iodrift) and does its `dbus` setting name this bus?\n",
                 dbus::kBusName, DescribeBus(bus).c_str());
    return kExitUnreachable;
  }
  if (e.getName() == dbus::kErrorUnknownProbe) return kExitUsage;
  return kExitFailed;
}

std::string PadRight(const std::string& s, std::size_t width) {
  // Column width in terminal cells: UTF-8 continuation bytes take none.
  std::size_t cells = 0;
  for (char c : s) cells += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return cells >= width ? s : s + std::string(width - cells, ' ');
}

// Prints rows as aligned columns (two spaces between).
void PrintTable(std::vector<std::vector<std::string>> rows) {
  for (auto& row : rows) {
    for (auto& cell : row) cell = Safe(cell);  // before the widths: escapes widen a cell
  }
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) {
      width[i] = std::max(width[i], PadRight(row[i], 0).size());
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += i + 1 < row.size() ? PadRight(row[i], width[i] + 2) : row[i];
    }
    std::printf("%s\n", line.c_str());
  }
}

int List(Client& client, bool json) {
  auto probes = client.ListProbes();
  if (json) {
    JsonWriter w;
    w.BeginArray();
    for (const auto& p : probes) {
      w.BeginObject();
      w.Key("name");
      w.String(std::get<0>(p));
      w.Key("kind");
      w.String(std::get<1>(p));
      w.Key("target");
      w.String(std::get<2>(p));
      w.EndObject();
    }
    w.EndArray();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {{"PROBE", "KIND", "TARGET"}};
  for (const auto& p : probes) {
    rows.push_back({std::get<0>(p), std::get<1>(p), std::get<2>(p).empty() ? "-" : std::get<2>(p)});
  }
  PrintTable(rows);
  return kExitOk;
}

std::string ResultJson(const iodrift::probes::ProbeResult& result) {
  JsonWriter w;
  iodrift::daemon::WriteProbeResultJson(w, result);
  return w.str();
}

int Run(Client& client, const std::string& name, bool json) {
  auto result = dbus::FromDict(client.RunProbeWithTimeout(name));
  if (json) {
    std::printf("%s\n", ResultJson(result).c_str());
  } else {
    std::fputs(Safe(iodrift::daemon::ProbeResultsTable({result})).c_str(), stdout);
  }
  return result.success() ? kExitOk : kExitFailed;
}

bool IsCount(const std::string& field) {
  return field.rfind("HugePages_", 0) == 0 ||
         (field.size() > 8 && field.compare(field.size() - 8, 8, "_seconds") == 0);
}

int Snapshot(Client& client, bool json) {
  auto state = client.Snapshot();
  if (json) {
    JsonWriter w;
    w.BeginObject();
    for (const auto& [field, value] : state) {
      w.Key(field);
      w.Unsigned(value);
    }
    w.EndObject();
    std::printf("%s\n", w.str().c_str());
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {{"FIELD", "VALUE", "RAW"}};
  for (const auto& [field, value] : state) {
    std::string shown = IsCount(field) ? std::to_string(value)
                                       : iodrift::daemon::FormatBytes(static_cast<double>(value));
    rows.push_back({field, shown, std::to_string(value)});
  }
  PrintTable(rows);
  return kExitOk;
}

// A string field of ExplainFields' answer; "" when absent or of another type (never throws).
std::string StringField(const dbus::Dict& dict, const std::string& key) {
  auto it = dict.find(key);
  if (it == dict.end() || !it->second.containsValueOfType<std::string>()) return "";
  return it->second.get<std::string>();
}

// Prints an explain or diagnose answer: with `json` one object {name, text, what `extra` writes,
// figures}, else the text.
void PrintAnswer(bool json, const std::string& name, const std::string& text,
                 const std::map<std::string, double>& figures,
                 const std::function<void(JsonWriter&)>& extra = {}) {
  if (!json) {
    std::fputs(Safe(text).c_str(), stdout);
    return;
  }
  JsonWriter w;
  w.BeginObject();
  w.Key("name");
  w.String(name);
  w.Key("text");
  w.String(text);
  if (extra) extra(w);
  w.Key("figures");
  w.BeginObject();
  for (const auto& [key, value] : figures) {
    w.Key(key);
    w.Number(value);
  }
  w.EndObject();
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
}

int Explain(Client& client, const std::string& name, bool json) {
  // The verdict comes as fields (`cause`, `verdict_text`), never parsed back from the text.
  const dbus::Dict fields = client.ExplainFields(name);
  const std::string text = StringField(fields, "text");
  std::map<std::string, double> figures;
  if (auto it = fields.find("figures");
      it != fields.end() && it->second.containsValueOfType<std::map<std::string, double>>()) {
    figures = it->second.get<std::map<std::string, double>>();
  }
  const std::string cause = StringField(fields, "cause");
  PrintAnswer(json, name, text, figures, [&](JsonWriter& w) {
    w.Key("cause");
    w.String(cause);
    w.Key("verdict");  // the cause again, under its first name
    w.String(cause);
    w.Key("verdict_text");
    w.String(StringField(fields, "verdict_text"));
  });
  return kExitOk;
}

std::atomic<bool> g_interrupted{false};

// A root step's intervention, made by this process: "" when done, else why not.
std::string Intervene(const std::string& step) {
  const char* file = step == "compact" ? "compact_memory" : "drop_caches";
  const char* value = step == "drop_slab" ? "2" : "1";
  const std::string path = VmDir() + "/" + file;
  const int fd = open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return "cannot open " + path + ": " + std::strerror(errno);
  const bool ok = write(fd, value, 1) == 1;
  const int error = errno;
  close(fd);
  if (!ok) return "cannot write " + path + ": " + std::strerror(error);
  return "";
}

bool IsRootStep(const std::string& step) {
  return step == "drop_caches" || step == "drop_slab" || step == "compact";
}

int Diagnose(Client& client, const std::string& name, bool json) {
  std::string session, next, text;
  std::tie(session, next, text) = client.DiagnoseBegin(name);
  std::map<std::string, double> figures;
  struct sigaction action {};
  action.sa_handler = [](int) { g_interrupted = true; };
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  while (!next.empty()) {
    if (g_interrupted) {
      std::tie(text, figures) = client.DiagnoseEnd(session);
      break;
    }
    std::fprintf(stderr, "iodriftctl: %s\n", text.c_str());
    std::string skipped;
    if (IsRootStep(next)) skipped = Intervene(next);  // the daemon names them to root only
    std::tie(next, text, figures) = client.DiagnoseMeasureWithTimeout(session, next, skipped);
  }
  PrintAnswer(json, name, text, figures);
  auto recovered = figures.find("recovered");
  const bool slow = !figures.count("ratio.control") || figures.at("ratio.control") < 0.9;
  return (recovered != figures.end() && recovered->second > 0) || !slow ? kExitOk : kExitFailed;
}

int Reload(Client& client) {
  auto problems = client.Reload();
  if (problems.empty()) {
    std::printf("reloaded\n");
    return kExitOk;
  }
  std::fprintf(stderr, "iodriftctl: the daemon kept its running config; %zu problem%s:\n",
               problems.size(), problems.size() == 1 ? "" : "s");
  for (const auto& p : problems) std::fprintf(stderr, "%s\n", Safe(p).c_str());
  return kExitFailed;
}

// "2026-12-03T16:58:07+0000" (local time) for an epoch time; now when it is unset (0).
std::string Timestamp(double epoch_seconds) {
  std::time_t t =
      epoch_seconds > 0 ? static_cast<std::time_t>(std::floor(epoch_seconds)) : std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buffer[64];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buffer;
}

int Watch(Client& client, const std::string& bus, bool json) {
  client.OnCompleted([json](const std::string&, const dbus::Dict& dict) {
    auto r = dbus::FromDict(dict);
    if (json) {
      std::printf("%s\n", ResultJson(r).c_str());
    } else {
      std::string figure = "-";
      if (r.throughput_bytes_per_second) {
        figure = iodrift::daemon::FormatRate(*r.throughput_bytes_per_second);
      } else if (!r.ops_per_second.empty()) {
        figure.clear();
        for (const auto& [op, rate] : r.ops_per_second) {
          if (!figure.empty()) figure += ", ";
          figure += std::to_string(static_cast<long long>(rate)) + " " + op + "/s";
        }
      }
      std::printf("%s  %s  %s  %s  %s  %s  %s%s\n", Timestamp(r.start_time_seconds).c_str(),
                  Safe(r.name).c_str(), std::string(iodrift::probes::ProbeKindName(r.kind)).c_str(),
                  iodrift::probes::OutcomeName(r.outcome), Safe(figure).c_str(),
                  iodrift::daemon::FormatSeconds(r.duration_seconds).c_str(),
                  r.error.empty() ? "" : "error: ", Safe(r.error).c_str());
    }
    std::fflush(stdout);
  });
  std::fprintf(stderr, "iodriftctl: watching %s on %s (Ctrl-C to stop)\n", dbus::kBusName,
               bus.c_str());
  std::fflush(stderr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  return kExitOk;
}

std::unique_ptr<sdbus::IConnection> Connect(const std::string& bus) {
  if (bus == "system") return sdbus::createSystemBusConnection();
  if (bus == "session") return sdbus::createSessionBusConnection();
  return sdbus::createSessionBusConnectionWithAddress(bus);
}

}  // namespace

int main(int argc, char** argv) {
  std::string bus = "system";
  std::string command;
  std::vector<std::string> args;
  bool json = false;
  bool help = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--bus" || arg.rfind("--bus=", 0) == 0) {
      if (arg == "--bus") {
        if (i + 1 >= argc) return Usage("--bus needs a value: system, session or an address");
        bus = argv[++i];
      } else {
        bus = arg.substr(6);
      }
      if (bus.empty()) return Usage("--bus needs a value: system, session or an address");
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "-h" || arg == "--help") {
      help = true;
    } else if (arg == "-V" || arg == "--version") {
      std::printf("iodriftctl %s (revision %s)\n", IODRIFT_VERSION, IODRIFT_REVISION);
      return kExitOk;
    } else if (arg.rfind("-", 0) == 0 && arg != "-") {
      return Usage("unknown option '" + arg + "'");
    } else if (command.empty()) {
      command = arg;
    } else {
      args.push_back(arg);
    }
  }
  if (command == "help") {
    help = true;
    command = args.empty() ? "" : args[0];
    args.clear();
  }
  if (help) {
    auto it = kCommandHelp.find(command);
    std::fputs(it != kCommandHelp.end() ? it->second : kMainHelp, stdout);
    return kExitOk;
  }
  if (command.empty()) {
    return Usage("missing command (list, run, snapshot, explain, diagnose, boots, reload, watch)");
  }
  if (!kCommandHelp.count(command)) return Usage("unknown command '" + command + "'");
  const bool takes_name =
      command == "run" || command == "explain" || command == "diagnose" || command == "boots";
  if (args.size() != (takes_name ? 1u : 0u)) {
    return Usage(takes_name ? command + " needs exactly one probe NAME"
                            : command + " takes no arguments");
  }
  if (json && command == "reload") return Usage("reload has no --json");

  // watch waits for these with sigwait(); block them before sdbus starts its thread.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (command == "watch") pthread_sigmask(SIG_BLOCK, &set, nullptr);

  std::unique_ptr<Client> client;
  try {
    client = std::make_unique<Client>(Connect(bus));
  } catch (const sdbus::Error& e) {
    std::fprintf(stderr,
                 "iodriftctl: cannot connect to %s: %s.\n"
                 "Is D-Bus running there? iodriftd serves the system bus when it runs as a "
                 "service (systemctl status iodrift); for a daemon started by hand give its bus: "
                 "--bus session or --bus ADDRESS (iodriftd logs \"dbus: serving ... on ...\").\n",
                 DescribeBus(bus).c_str(), e.getMessage().c_str());
    return kExitUnreachable;
  }
  try {
    if (command == "list") return List(*client, json);
    if (command == "run") return Run(*client, args[0], json);
    if (command == "snapshot") return Snapshot(*client, json);
    if (command == "explain") return Explain(*client, args[0], json);
    if (command == "diagnose") return Diagnose(*client, args[0], json);
    if (command == "boots") {
      auto [text, json_text] = client->Boots(args[0]);
      return iodrift::ctl::PrintBoots(text, json_text, json);
    }
    if (command == "reload") return Reload(*client);
    if (command == "watch") {
      // Check the daemon is there before waiting for signals from it.
      (void)client->Version();
      return Watch(*client, bus, json);
    }
  } catch (const sdbus::Error& e) {
    return ReportError(e, bus);
  }
  return kExitUsage;
}
