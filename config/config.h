// iodrift's configuration: plain structs with defaults, and the YAML loader that fills them.
//
// The keys are a contract (docs/configuration.md): dashboards, docs and operators'
// files rely on them. The loader reports *every* problem at once, each as
// `FILE:LINE:COLUMN: KEY: what is wrong`, so an operator fixes a file in one pass; unknown keys
// are errors (typos must not pass silently). `iodriftd --check-config` prints these and exits 78.
//
// Thread-safety: Config is a value; the daemon swaps whole Config objects on reload.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

#include "collectors/probes/probe_spec.h"
#include "collectors/proc/collector_options.h"

namespace iodrift::config {

using Duration = std::chrono::milliseconds;

// The probe types live with the probes (collectors/probes/probe_spec.h); the loader fills them.
using probes::ParseProbeKind;
using probes::ProbeKind;
using probes::ProbeKindName;
using probes::ProbeSpec;

// The collectors' options live with the collectors (collectors/proc/collector_options.h).
using proc::CollectorsOptions;
using proc::SlabinfoOptions;
using proc::VmstatOptions;
using CollectorsConfig = proc::CollectorsOptions;

struct HttpOptions {
  std::uint32_t max_connections = 64;  // served at once; more wait in the accept queue
  Duration connection_timeout = std::chrono::seconds(10);  // idle/slow client cut-off
  // TLS: PEM certificate (chain) and private key files, both or neither; set = HTTPS only. The
  // loader checks that both are readable regular files holding the right PEM blocks; the daemon
  // reads them once at start.
  std::string tls_cert_file{};
  std::string tls_key_file{};
  // HTTP basic auth: user -> bcrypt hash ($2y$/$2b$/$2a$). Empty = no authentication.
  std::map<std::string, std::string> basic_auth_users{};

  bool operator==(const HttpOptions&) const = default;
};

// How probe threads are scheduled against the rest of the machine (docs/probes.md, first
// paragraph).
struct SchedulerConfig {
  std::uint32_t max_concurrent = 1;  // probes running at once across devices
  // ioprio_set(2) class of probe threads: "best-effort" (with io_level), "idle", or "none"
  // (leave the thread's class alone). Only BFQ and mq-deadline honour classes.
  std::string io_class = "best-effort";
  int io_level = 7;  // 0 (highest) .. 7 (lowest), for best-effort
  int nice = 10;     // setpriority() of probe threads: 0 .. 19

  bool operator==(const SchedulerConfig&) const = default;
};

// The built-in status page (GET /) and /api/v1/probes (daemon/status_page.h, probes_api.h).
struct StatusOptions {
  bool enabled = true;
  std::uint32_t history_runs = 240;  // recent results kept in memory per probe (2..100000)

  bool operator==(const StatusOptions&) const = default;
};

// The opt-in recovery experiment (daemon/diagnose.h; `iodriftctl diagnose`, D-Bus Diagnose*).
struct DiagnoseConfig {
  bool enabled = false;                          // off: Diagnose answers that it is off
  std::uint64_t warm_size = 1ULL << 30;          // cap on memory touched by warm_free_memory
  std::uint64_t min_available = 512ULL << 20;    // refused while MemAvailable is below this
  std::uint32_t max_memory_pressure = 10;        // refused while PSI memory some avg10 > (%)
  std::uint32_t max_io_pressure = 20;            // refused while PSI io some avg10 > (%)
  Duration timeout = std::chrono::minutes(5);    // the whole experiment
  Duration cooldown = std::chrono::minutes(30);  // machine-wide, from one experiment's end

  bool operator==(const DiagnoseConfig&) const = default;
};

struct Config {
  std::string listen = "127.0.0.1:9723";
  std::string state_dir;  // empty = default for the user (see DefaultStateDir)
  std::string proc_root = "/proc";
  // sysfs for block-device facts and array members (a container's /host/sys, or a built tree).
  std::string sys_root = "/sys";
  std::string dbus = "auto";       // auto | system | session | none | ADDRESS
  std::string log_level = "info";  // trace | debug | info | warn | error
  CollectorsConfig collectors;
  HttpOptions http;
  SchedulerConfig scheduler;
  StatusOptions status;
  DiagnoseConfig diagnose;
  std::vector<ProbeSpec> probes;  // a file without `probes` (or `probes:` empty) has none

  // Field-wise; lets a reload tell "nothing changed" from a real change.
  bool operator==(const Config&) const = default;
};

// One problem found while loading. `line` and `column` are 1-based; 0 when unknown (e.g. the
// file could not be read at all).
struct Problem {
  std::string file;
  int line = 0;
  int column = 0;
  std::string key;  // dotted path, e.g. "probes[2].interval"
  std::string message;

  // "FILE:LINE:COLUMN: KEY: MESSAGE"; ":LINE:COLUMN" is left out when line is 0 and "KEY: "
  // when key is empty (a problem with the whole file: "FILE: MESSAGE").
  std::string ToString() const;
};

using LoadResult = tl::expected<Config, std::vector<Problem>>;

// Config files larger than this are refused (one problem) before any parsing.
inline constexpr std::size_t kMaxConfigBytes = 1024 * 1024;

// Parses `yaml_text` (named `file_name` in messages). Returns the config, or every problem
// (at most 100, then one "N more problems" line), sorted by position. An empty document (or
// only comments) is all defaults. Keys the file omits keep the defaults of the structs above:
// `state_dir` stays empty (the daemon fills in DefaultStateDir()) and `probes` stays empty.
// Paths (`state_dir`, `proc_root`, probe `target`) must be absolute. Never throws on any input;
// text that is not UTF-8, larger than kMaxConfigBytes or holds several YAML documents is one
// problem.
LoadResult LoadFromString(std::string_view yaml_text, const std::string& file_name);

// Reads and parses `path`. An unreadable, oversized (> 1 MiB) file or a directory is one
// problem with line 0. Does not block on a FIFO without a writer.
LoadResult LoadFromFile(const std::filesystem::path& path);

// The checks the loader applies to `listen`, `dbus` and `log_level`, for the same values given on
// the command line (--listen, --dbus, --log-level): nullopt when valid, else what is wrong
// (e.g. "expected HOST:PORT like 127.0.0.1:9723, ..."). CheckListen is ParseListen (listen.h)
// without the parsed value.
std::optional<std::string> CheckListen(std::string_view value);
std::optional<std::string> CheckDbus(std::string_view value);
std::optional<std::string> CheckLogLevel(std::string_view value);
std::optional<std::string> CheckIoClass(std::string_view value);
// nullopt when `hash` is a bcrypt hash as htpasswd -B and crypt(3) write it: `$2y$`, `$2b$` or
// `$2a$`, a two-digit cost from 04 to 31, `$`, then 53 characters of [./A-Za-z0-9].
std::optional<std::string> CheckBcryptHash(std::string_view hash);

// /var/lib/iodrift as root (euid 0), else $XDG_STATE_HOME/iodrift (ignored unless absolute, as
// the XDG spec says), else $HOME/.local/state/iodrift (HOME from the passwd entry when unset),
// else /tmp/iodrift-UID. Does not create the directory.
std::string DefaultStateDir();

// The embedded default: all collectors on, listen/dbus/log_level defaults, `state_dir` set, and
// one probe of each kind, interval 5m, size 0 (calibrate): state-cached, state-buffered,
// state-direct, state-random, state-metadata with target `<state_dir>/probe` (a directory; the
// probe engine makes its probe file / subdirectory inside), and `memory` without a target.
// config/iodrift.yaml is DefaultConfig("/var/lib/iodrift") written out (a test checks this).
Config DefaultConfig(const std::string& state_dir);

// Parses "500ms", "30s", "10m", "1h", "1d" (also combined "1m30s", largest unit first, each unit
// once; fractions like "1.5s" up to 6 digits, rounded down to whole milliseconds). nullopt on
// junk, a bare number without unit, <= 0 or more than 30 days.
std::optional<Duration> ParseDuration(std::string_view text);
// Parses "4096", "4096B", "4KiB", "64MiB", "1GiB", "1.5GiB", "1TiB"; "kB"/"KB"/"MB"/"GB"/"TB" are
// powers of 1000. Fractions are rounded down to whole bytes. nullopt on junk, 0 or overflow.
std::optional<std::uint64_t> ParseSize(std::string_view text);

}  // namespace iodrift::config
