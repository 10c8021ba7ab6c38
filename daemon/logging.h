// Logging set-up: spdlog to stderr. Under systemd (JOURNAL_STREAM set and matching stderr) lines
// carry sd-daemon priority prefixes ("<3>…") and no timestamps, since journald adds its own;
// otherwise a normal console format with timestamps. Messages are lowercase key=value lines.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <spdlog/common.h>

namespace iodrift::daemon {

// Parses trace|debug|info|warn|error.
std::optional<spdlog::level::level_enum> ParseLogLevel(std::string_view text);

// Installs the default logger on stderr at `level`.
void SetUpLogging(spdlog::level::level_enum level);

// True when stderr is connected to the journal (JOURNAL_STREAM names stderr's device:inode).
bool StderrIsJournal();

}  // namespace iodrift::daemon
