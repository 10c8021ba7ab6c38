// The daemon's start/stop order, signal handling and reload, behind a thin main().
//
// Order: parse flags → load config (exit 78 on problems) → logging → HTTP listener (exit 1 when
// the address cannot be bound) → scheduler → D-Bus service (per `dbus`; never fatal) → serve
// until SIGTERM/SIGINT, then stop D-Bus first, the scheduler, HTTP. SIGHUP and D-Bus Reload
// re-read the config file and apply it atomically, or keep the running config and report every
// problem.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "daemon/cli.h"

namespace iodrift::daemon {

// Exit codes (sysexits where one fits).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitConfig = 78;  // EX_CONFIG

// Loads the config named on the command line (or the embedded default) and applies the flag
// overrides. On failure returns every problem.
config::LoadResult LoadEffectiveConfig(const CommandLine& cl);

int Main(int argc, char** argv);

}  // namespace iodrift::daemon
