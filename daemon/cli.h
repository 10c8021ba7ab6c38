// Command line of iodriftd (flags fixed in docs/running.md).
// Flags override the matching config keys.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collectors/common/error.h"
#include "config/config.h"

namespace iodrift::daemon {

struct CommandLine {
  std::optional<std::string> config_file;
  std::optional<std::string> listen;
  std::optional<std::string> proc_root;
  std::optional<std::string> state_dir;
  std::optional<std::string> dbus;
  std::optional<std::string> log_level;
  bool check_config = false;
  bool strict = false;  // with --check-config: target warnings fail (exit 78)
  bool once = false;
  bool json = false;
  bool help = false;
  bool version = false;
};

// Parses argv. Fails with a message such as "unknown option '--foo'" (callers print it with a
// hint to --help and exit 2).
Expected<CommandLine> ParseCommandLine(const std::vector<std::string>& args);

// One line per probe whose target does not exist or cannot be opened for reading by this process
// ("probe NAME: target PATH: No such file or directory"), and one per probe whose run does not
// fit in the memory this process's cgroup and the host leave (probes::RoomProblem: the figures);
// --check-config prints them as warnings (--strict: exit 78). Opens nothing for writing and
// reads no data.
std::vector<std::string> TargetWarnings(const config::Config& cfg);

// The man-page style --help text.
const char* HelpText();

}  // namespace iodrift::daemon
