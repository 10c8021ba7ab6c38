// Threads of the test process now, for tests that a stuck read adds none (/proc/self/status).
#pragma once

#include <fstream>
#include <string>

namespace iodrift::daemon::testing {

// The `Threads:` line of /proc/self/status; -1 when unreadable.
inline int ProcessThreads() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

}  // namespace iodrift::daemon::testing
