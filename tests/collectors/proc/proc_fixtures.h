// Paths of the /proc fixture trees used by the parser tests: the project's own captures
// (tests/fixtures/proc/<tag>/, see the SOURCE.md of each) and the real-world samples of other
// projects and kernels (tests/fixtures/proc-samples/<tree>/proc, see its README.md).
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

// tests/fixtures/proc-samples/<tree>/proc: procfs and node_exporter test data (Apache-2.0) and a
// second capture of the development machine (README.md there names each source).
inline ProcRoot SampleRoot(const std::string& tree) {
  return ProcRoot(std::filesystem::path(IODRIFT_TEST_FIXTURES) / "proc-samples" / tree / "proc");
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
