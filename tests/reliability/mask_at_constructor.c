// LD_PRELOAD'ed into iodriftd by reliability.startup_signals: its constructor runs with the
// shared libraries' constructors, before main, and writes which of SIGHUP, SIGINT and SIGTERM
// are blocked at that moment to the file named by IODRIFT_MASK_REPORT ("HUP=1 INT=1 TERM=1").
// The handled signals must already be blocked there (daemon/main.cpp's .preinit_array entry).
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void ReportSignalMask(void) {
  const char* path = getenv("IODRIFT_MASK_REPORT");
  if (!path) return;
  sigset_t blocked;
  sigemptyset(&blocked);
  sigprocmask(SIG_BLOCK, NULL, &blocked);
  FILE* f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "HUP=%d INT=%d TERM=%d\n", sigismember(&blocked, SIGHUP),
          sigismember(&blocked, SIGINT), sigismember(&blocked, SIGTERM));
  fclose(f);
}
