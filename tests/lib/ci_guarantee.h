// Skips that CI must not take: a GoogleTest that cannot run without root, loop devices, a mount
// namespace or a tool of a package tools/dev.sh installs calls IODRIFT_SKIP_GUARANTEED(reason)
// instead of GTEST_SKIP(). Outside CI that is a skip with the reason; under CI, which exports
// IODRIFT_CI_GUARANTEED=1 (.ci/run) because it provides all of these, it is a failure naming what
// is missing, so a broken runner cannot pass the suite by skipping. Conditions CI does not
// promise (a kernel feature, the page size, the machine's devices) stay plain GTEST_SKIP().
// The Python tests have the same rule in tests/lib/iodrift_test/skip.py.
#pragma once

#include <cstdlib>
#include <string_view>

#include <gtest/gtest.h>

// Not iodrift::testing: that name would hide ::testing (gtest) from code in namespace iodrift.
namespace iodrift::ci {

// True when the environment promises every guaranteed condition (IODRIFT_CI_GUARANTEED=1).
inline bool CiGuaranteed() {
  const char* value = std::getenv("IODRIFT_CI_GUARANTEED");
  return value != nullptr && std::string_view(value) == "1";
}

}  // namespace iodrift::ci

// Returns from the test (or fixture SetUp) like GTEST_SKIP(): skipped, or failed under CI.
#define IODRIFT_SKIP_GUARANTEED(reason)                                                          \
  do {                                                                                           \
    if (::iodrift::ci::CiGuaranteed()) {                                                         \
      GTEST_FAIL() << "skip on a condition CI guarantees (IODRIFT_CI_GUARANTEED=1): " << reason; \
    }                                                                                            \
    GTEST_SKIP() << reason;                                                                      \
  } while (0)
