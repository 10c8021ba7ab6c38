// The HTTP listen address: "HOST:PORT", the one parser of it.
//
// The config key `listen`, the --listen flag and the HTTP server all read the address through
// ParseListen, so what the config check accepts is exactly what the server binds. Accepted forms:
// `127.0.0.1:9723`, `localhost:9723`, `my-host.example:9723`, `[::1]:9723`, `[::]:80`; port 0
// picks a free port. The host is never empty: listening on every address is written out
// (`0.0.0.0:9723` or `[::]:9723`), so a missing host is a mistake the operator hears about
// rather than an accidental exposure.
//
// Pure parsing: no name resolution (the server resolves the host when it binds). Thread-safety:
// pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "collectors/common/error.h"

namespace iodrift::config {

struct Listen {
  std::string host;  // without brackets: "127.0.0.1", "localhost", "::1"
  std::uint16_t port = 0;

  bool operator==(const Listen&) const = default;
};

// Parses `text` as HOST:PORT or [IPV6]:PORT. On failure the error (code EINVAL) says what is
// wrong and how a valid value looks, without repeating `text` (callers name the key or flag and
// show the value): e.g. "missing HOST (use 0.0.0.0 or [::] for every address); expected HOST:PORT
// like 127.0.0.1:9723, [::1]:9723 or localhost:9723".
Expected<Listen> ParseListen(std::string_view text);

}  // namespace iodrift::config
