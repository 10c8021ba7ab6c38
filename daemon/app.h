// The daemon's start/stop order, signal handling and reload, behind a thin main().
//
// Order: parse flags → load config (exit 78 on problems) → logging → HTTP listener (exit 1 when
// the address cannot be bound) → scheduler → D-Bus service (per `dbus`; never fatal) → serve
// until SIGTERM/SIGINT, then stop D-Bus first, the scheduler, HTTP. SIGHUP and D-Bus Reload
// re-read the config file and apply it atomically, or keep the running config and report every
// problem.
#pragma once

#include <signal.h>

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

// The signals iodriftd takes with sigwait() once running: SIGTERM, SIGINT, SIGHUP. They are
// blocked from the first instant the executable's own code runs (main.cpp's .preinit_array
// entry, before the shared libraries' constructors) and again first thing in Main, so one that
// arrives while the daemon starts stays pending: a reload or a clean stop once running.
sigset_t HandledSignals();

// `mask_at_exec`: the signal mask the process had before HandledSignals were first blocked (the
// one-shot modes restore it); nullptr: the mask when Main is entered.
int Main(int argc, char** argv, const sigset_t* mask_at_exec = nullptr);

}  // namespace iodrift::daemon
