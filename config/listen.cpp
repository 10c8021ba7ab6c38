// ParseListen: see listen.h.
#include "config/listen.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <system_error>

namespace iodrift::config {

Expected<Listen> ParseListen(std::string_view value) {
  const std::string hint = "expected HOST:PORT like 127.0.0.1:9723, [::1]:9723 or localhost:9723";
  auto fail = [](std::string message) { return Fail(EINVAL, std::move(message)); };
  if (value.empty()) return fail(hint);
  std::string_view host;
  std::string_view port;
  if (value.front() == '[') {
    const std::size_t close = value.find(']');
    if (close == std::string_view::npos) return fail("unclosed `[` in the IPv6 address; " + hint);
    host = value.substr(1, close - 1);
    std::string_view rest = value.substr(close + 1);
    if (rest.empty() || rest.front() != ':') return fail("missing `:PORT` after `]`; " + hint);
    port = rest.substr(1);
    const bool valid_ipv6 = !host.empty() && host.find(':') != std::string_view::npos &&
                            std::all_of(host.begin(), host.end(), [](char c) {
                              return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                                     (c >= 'A' && c <= 'F') || c == ':' || c == '.';
                            });
    if (!valid_ipv6) return fail("invalid IPv6 address between `[` and `]`; " + hint);
  } else {
    const std::size_t colon = value.rfind(':');
    if (colon == std::string_view::npos) return fail("missing `:PORT`; " + hint);
    host = value.substr(0, colon);
    port = value.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return fail("an IPv6 address needs brackets, e.g. [::1]:9723");
    }
    if (host.empty()) return fail("missing HOST (use 0.0.0.0 or [::] for every address); " + hint);
    const bool valid_host = std::all_of(host.begin(), host.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             c == '.' || c == '-' || c == '_';
    });
    if (!valid_host) return fail("invalid host name; " + hint);
  }
  std::uint32_t port_number = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), port_number);
  if (port.empty() || port.size() > 5 || error != std::errc() || end != port.data() + port.size() ||
      port_number > 65535) {
    return fail("port must be a number from 0 to 65535 (0 picks a free port)");
  }
  return Listen{std::string(host), static_cast<std::uint16_t>(port_number)};
}

}  // namespace iodrift::config
