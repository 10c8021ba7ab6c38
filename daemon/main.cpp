// iodriftd: the iodrift daemon. All logic lives in iodrift_core; see daemon/app.h.
#include <signal.h>

#include "daemon/app.h"
#include "daemon/heap.h"

namespace {

sigset_t mask_at_exec;

// Blocks the handled signals (app.h HandledSignals) at the first instant the executable's own
// code runs: the dynamic loader calls the main executable's DT_PREINIT_ARRAY in _dl_init, after
// every object is mapped and relocated and before any shared library's constructor (and long
// before main). A SIGHUP sent from then on stays pending instead of killing the daemon (its
// default action); docs/running.md has the window that remains, measured. Only libc is called.
void BlockHandledSignalsAtExec(int, char**, char**) {
  const sigset_t handled = iodrift::daemon::HandledSignals();
  sigprocmask(SIG_BLOCK, &handled, &mask_at_exec);
}

}  // namespace

__attribute__((section(".preinit_array"), used)) static void (*const block_handled_signals)(
    int, char**, char**) = BlockHandledSignalsAtExec;

int main(int argc, char** argv) {
  iodrift::daemon::TuneAllocator();  // before any thread starts
  return iodrift::daemon::Main(argc, argv, &mask_at_exec);
}
