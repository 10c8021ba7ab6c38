// iodriftd: the iodrift daemon. All logic lives in iodrift_core; see daemon/app.h.
#include "daemon/app.h"

int main(int argc, char** argv) { return iodrift::daemon::Main(argc, argv); }
