// Command line of iodriftd (flags fixed in ../shared/DESIGN.md, "Binaries and flags").
// Flags override the matching config keys.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collectors/common/error.h"

namespace iodrift::daemon {

struct CommandLine {
  std::optional<std::string> config_file;
  std::optional<std::string> listen;
  std::optional<std::string> proc_root;
  std::optional<std::string> state_dir;
  std::optional<std::string> dbus;
  std::optional<std::string> log_level;
  bool check_config = false;
  bool once = false;
  bool json = false;
  bool help = false;
  bool version = false;
};

// Parses argv. Fails with a message such as "unknown option '--foo'" (callers print it with a
// hint to --help and exit 2).
Expected<CommandLine> ParseCommandLine(const std::vector<std::string>& args);

// The man-page style --help text.
const char* HelpText();

}  // namespace iodrift::daemon
