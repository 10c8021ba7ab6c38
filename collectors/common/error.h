// Error values for everything in iodrift that can go wrong on a healthy system.
//
// A missing file, a permission problem, a kernel without PSI, a probe timeout: these are values,
// not exceptions (see docs/design.md, "Errors"). Functions that can fail return
// `Expected<T>`; the error carries the errno (0 when none applies) and a message with context,
// ideally with the fix ("open /proc/slabinfo: permission denied (mode 0400; run as root)").
// Exceptions from yaml-cpp, prometheus-cpp and sdbus-c++ are caught at those library boundaries.
//
// Thread-safety: plain values; safe to copy between threads.
#pragma once

#include <string>
#include <utility>

#include <tl/expected.hpp>

namespace iodrift {

struct Error {
  int code = 0;         // errno value, or 0 when the failure is not a system error
  std::string message;  // human readable, lowercase, with context
};

template <class T>
using Expected = tl::expected<T, Error>;

// Builds an unexpected value: `return Fail(ENOENT, "open " + path + ": no such file");`
inline tl::unexpected<Error> Fail(int code, std::string message) {
  return tl::unexpected<Error>(Error{code, std::move(message)});
}

// Builds "WHAT: strerror(code)" for a failed system call.
std::string SystemErrorMessage(const std::string& what, int code);

}  // namespace iodrift
