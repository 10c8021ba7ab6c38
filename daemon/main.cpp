// iodriftd: the iodrift daemon. All logic lives in iodrift_core; see daemon/app.h.
#include "daemon/app.h"
#include "daemon/heap.h"

int main(int argc, char** argv) {
  iodrift::daemon::TuneAllocator();  // before any thread starts
  return iodrift::daemon::Main(argc, argv);
}
