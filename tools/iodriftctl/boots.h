// `iodriftctl boots NAME [--json]`: probe NAME's record of its last boots, from the D-Bus
// method Boots (daemon/dbus/boots_answer.h). The help text lives here with the command.
#pragma once

#include <string>

namespace iodrift::ctl {

extern const char* const kBootsHelp;

// Prints Boots' answer, `json_text` with --json, else `text`, made terminal-safe (text.h
// TerminalSafe) either way: a hostile service cannot drive the terminal through either.
// Returns the exit status (0).
int PrintBoots(const std::string& text, const std::string& json_text, bool json);

}  // namespace iodrift::ctl
