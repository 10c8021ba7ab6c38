// Paths of the /proc fixture trees used by the parser tests (tests/fixtures/proc/<tag>/, see the
// SOURCE.md of each) and of the optional third-party samples outside the project.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/common/proc_root.h"

namespace iodrift::proc::testing {

// The real capture of the development machine (kernel 6.18, see its SOURCE.md).
inline ProcRoot LocalRoot() {
  return ProcRoot(std::filesystem::path(IODRIFT_TEST_FIXTURES) / "proc" / "local-6.18");
}

// The hand-made tree without slabinfo and pressure/.
inline ProcRoot MinimalRoot() {
  return ProcRoot(std::filesystem::path(IODRIFT_TEST_FIXTURES) / "proc" / "minimal");
}

// A root where nothing exists.
inline ProcRoot MissingRoot() {
  return ProcRoot(std::filesystem::path(IODRIFT_TEST_FIXTURES) / "proc" / "does-not-exist");
}

// /work/shared/fixtures/proc-samples/<tree>/proc (third-party data, never copied into the
// project); tests using it GTEST_SKIP() when it is absent.
inline std::filesystem::path SharedSamples() { return IODRIFT_SHARED_FIXTURES; }
inline ProcRoot SharedRoot(const std::string& tree) {
  return ProcRoot(SharedSamples() / tree / "proc");
}

// Writes `files` (path relative to the root, content) under a fresh directory in the gtest temp
// dir named `name`, and returns it as a root. For cases no checked-in tree should carry.
inline ProcRoot ScratchRoot(const std::string& name,
                            const std::vector<std::pair<std::string, std::string>>& files) {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / ("iodrift-" + name);
  std::filesystem::remove_all(dir);
  for (const auto& [relative, content] : files) {
    std::filesystem::path path = dir / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
  }
  std::filesystem::create_directories(dir);
  return ProcRoot(dir);
}

}  // namespace iodrift::proc::testing
