// The YAML config loader: yaml-cpp parses, a schema walk below validates and fills the plain
// structs of config.h.
//
// yaml-cpp throws; every YAML::Exception is caught here and becomes a Problem (the one place for
// this library, docs/design.md "Errors"). The walk never stops at the first problem: each key
// is checked on its own so `iodriftd --check-config` lists everything wrong in one pass. The
// input is bounded before yaml-cpp sees it (size cap, UTF-8 text check), and the walk only
// descends into the shapes the schema expects, so hostile files (binary data, deep nesting,
// alias cycles, huge files) end as a problem, never as a crash or a hang.
#include "config/config.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include "collectors/common/file_util.h"
#include "config/listen.h"
#include "config/loader.h"

namespace iodrift::config {
namespace detail {

std::string LowercaseErrno(int code) {
  std::string message = std::strerror(code);
  if (!message.empty() && message[0] >= 'A' && message[0] <= 'Z') {
    message[0] = static_cast<char>(message[0] - 'A' + 'a');
  }
  return message;
}

}  // namespace detail
namespace {

using namespace detail;

std::vector<Problem> OneProblem(const std::string& file, Position pos, std::string message) {
  return {Problem{file, pos.line, pos.column, "", std::move(message)}};
}

}  // namespace

// ---- public API ---------------------------------------------------------------------------------

std::string Problem::ToString() const {
  std::string text = file;
  if (line > 0) {
    text += ":" + std::to_string(line) + ":" + std::to_string(column);
  }
  text += ": ";
  if (!key.empty()) text += key + ": ";
  text += message;
  // Control bytes (a CR from a CRLF file in a key name or a file name, an escape sequence) never
  // reach the terminal raw; tabs and line breaks inside a message stay.
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += c == '\r' ? std::string("\\r") : std::string("\\x") + kHex[c >> 4] + kHex[c & 0xf];
    } else {
      out += ch;
    }
  }
  return out;
}

std::optional<std::string> CheckListen(std::string_view value) {
  auto listen = ParseListen(value);
  if (listen) return std::nullopt;
  return std::move(listen.error().message);
}

std::optional<std::string> CheckDbus(std::string_view value) {
  if (value == "auto" || value == "system" || value == "session" || value == "none") {
    return std::nullopt;
  }
  const std::size_t colon = value.find(':');
  if (colon != std::string_view::npos && colon > 0 &&
      value.find('=', colon) != std::string_view::npos) {
    return std::nullopt;  // a D-Bus address: transport:key=value[,key=value][;...]
  }
  return std::string(
      "must be one of auto|system|session|none or a D-Bus address like "
      "unix:path=/run/dbus/system_bus_socket");
}

std::optional<std::string> CheckLogLevel(std::string_view value) {
  static constexpr std::array<std::string_view, 5> kLevels = {"trace", "debug", "info", "warn",
                                                              "error"};
  if (std::find(kLevels.begin(), kLevels.end(), value) != kLevels.end()) return std::nullopt;
  return std::string("must be one of trace|debug|info|warn|error");
}

std::optional<std::string> CheckIoClass(std::string_view value) {
  if (value == "best-effort" || value == "idle" || value == "none") return std::nullopt;
  return std::string("must be one of best-effort|idle|none");
}

std::optional<std::string> CheckBcryptHash(std::string_view hash) {
  const std::string problem =
      "must be a bcrypt hash ($2y$, $2b$ or $2a$ and 60 characters, e.g. from "
      "`htpasswd -nbBC 10 USER PASSWORD`), not a password or another kind of hash";
  if (hash.size() != 60 ||
      !(hash.starts_with("$2y$") || hash.starts_with("$2b$") || hash.starts_with("$2a$"))) {
    return problem;
  }
  const bool cost_digits = hash[4] >= '0' && hash[4] <= '9' && hash[5] >= '0' && hash[5] <= '9';
  const int cost = cost_digits ? (hash[4] - '0') * 10 + (hash[5] - '0') : 0;
  if (!cost_digits || hash[6] != '$') return problem;
  if (cost < 4 || cost > 31)
    return "bcrypt cost must be from 04 to 31, got " + std::to_string(cost);
  for (char c : hash.substr(7)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '/';
    if (!ok) return problem;
  }
  return std::nullopt;
}

LoadResult LoadFromString(std::string_view yaml_text, const std::string& file_name) {
  if (yaml_text.size() > kMaxConfigBytes) {
    return tl::unexpected(OneProblem(file_name, {},
                                     "file is larger than 1 MiB (" +
                                         std::to_string(yaml_text.size()) +
                                         " bytes); is this really a config file?"));
  }
  if (const std::size_t bad = FirstNonTextByte(yaml_text); bad != std::string_view::npos) {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto byte = static_cast<unsigned char>(yaml_text[bad]);
    std::string shown = "0x";
    shown += kHex[byte >> 4];
    shown += kHex[byte & 0xf];
    return tl::unexpected(OneProblem(file_name, PositionOfOffset(yaml_text, bad),
                                     "not a text file: byte " + shown + " at offset " +
                                         std::to_string(bad) +
                                         " (a config file must be UTF-8 text)"));
  }
  const std::string text(yaml_text);
  YAML::Node root;
  try {
    root = YAML::Load(text);
    if (auto second = SecondDocument(text)) {
      return tl::unexpected(OneProblem(
          file_name, PositionOf(*second),
          "unexpected content after the first YAML document (a config file holds exactly one "
          "document; remove the `---` or the stray text)"));
    }
  } catch (const YAML::DeepRecursion& error) {
    return tl::unexpected(
        OneProblem(file_name, PositionOf(error.mark),
                   "YAML nesting is too deep (" + std::to_string(error.depth()) + " levels)"));
  } catch (const YAML::Exception& error) {
    return tl::unexpected(
        OneProblem(file_name, SyntaxErrorPosition(yaml_text, error.mark),
                   "YAML syntax error: " + error.msg + TabHint(yaml_text, error.mark)));
  }

  Loader loader(file_name);
  Config config;
  try {
    config = loader.LoadRoot(root);
  } catch (const YAML::Exception& error) {
    // The walk checks types before converting, so this is a yaml-cpp surprise, not a user error
    // we know how to phrase; still a problem, never a crash.
    loader.Report(PositionOf(error.mark), "", "cannot read this YAML: " + error.msg);
  }
  if (!loader.ok()) return tl::unexpected(loader.TakeProblems());
  return config;
}

LoadResult LoadFromFile(const std::filesystem::path& path) {
  const std::string name = path.string();
  // O_NONBLOCK: opening a FIFO without a writer must not hang; cleared below for reading.
  const int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (raw < 0) {
    const int code = errno;
    return tl::unexpected(OneProblem(name, {}, "cannot open: " + LowercaseErrno(code)));
  }
  UniqueFd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    const int code = errno;
    return tl::unexpected(OneProblem(name, {}, "cannot stat: " + LowercaseErrno(code)));
  }
  if (S_ISDIR(st.st_mode)) {
    return tl::unexpected(OneProblem(name, {}, "is a directory, not a config file"));
  }
  if (const int flags = ::fcntl(fd.get(), F_GETFL); flags >= 0) {
    ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  }
  // The bounded read (file_util.h); st_size is not trusted (pipes, /proc, growing files).
  auto text = ReadAll(fd.get(), kMaxConfigBytes, name);
  if (!text && text.error().code == EFBIG) {
    return tl::unexpected(
        OneProblem(name, {}, "file is larger than 1 MiB; is this really a config file?"));
  }
  if (!text) {
    return tl::unexpected(
        OneProblem(name, {}, "cannot read: " + LowercaseErrno(text.error().code)));
  }
  return LoadFromString(*text, name);
}

std::string DefaultStateDir() {
  if (::geteuid() == 0) return "/var/lib/iodrift";
  // XDG Base Directory: a relative XDG_STATE_HOME is invalid and must be ignored.
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && xdg[0] == '/') {
    return (std::filesystem::path(xdg) / "iodrift").string();
  }
  std::string home;
  if (const char* env_home = std::getenv("HOME"); env_home != nullptr && env_home[0] == '/') {
    home = env_home;
  } else {
    struct passwd pwd {};
    struct passwd* found = nullptr;
    std::array<char, 4096> buffer{};
    if (::getpwuid_r(::geteuid(), &pwd, buffer.data(), buffer.size(), &found) == 0 &&
        found != nullptr && found->pw_dir != nullptr && found->pw_dir[0] == '/') {
      home = found->pw_dir;
    }
  }
  if (home.empty()) return "/tmp/iodrift-" + std::to_string(::geteuid());
  return (std::filesystem::path(home) / ".local" / "state" / "iodrift").string();
}

Config DefaultConfig(const std::string& state_dir) {
  Config config;
  config.state_dir = state_dir;
  const std::string target = (std::filesystem::path(state_dir) / "probe").string();
  for (const probes::KindTraits& kind : probes::AllKinds()) {
    ProbeSpec probe;
    probe.kind = kind.kind;
    probe.interval = std::chrono::minutes(5);
    probe.size = 0;
    probe.time_budget = kind.default_time_budget;
    if (!kind.has_target) {
      probe.name = std::string(kind.name);
    } else {
      probe.name = "state-" + std::string(kind.name);
      probe.target = target;
    }
    config.probes.push_back(std::move(probe));
  }
  return config;
}

}  // namespace iodrift::config
