// HTTP basic authentication (RFC 7617) against bcrypt hashes, as in node_exporter's web config:
// `http.basic_auth_users` maps a user name to a bcrypt hash ($2y$/$2b$/$2a$), and every request
// must carry `Authorization: Basic base64(user:password)` for one of them.
//
// bcrypt is slow on purpose (~50-100 ms at cost 10), and Prometheus sends the same credentials
// with every scrape. A successful check is therefore remembered as (user, SHA-256 of the
// password); later requests with the same password cost one SHA-256 and constant-time compares.
// Wrong passwords are never cached and always pay bcrypt; an unknown user pays bcrypt against a
// dummy hash, so response time does not tell which users exist.
//
// The parsing and comparison helpers are pure and tested on their own (tests/daemon/
// http_auth_test.cpp).
//
// Thread-safety: BasicAuth::Allows may be called from any number of threads at once (the cache is
// behind a mutex; bcrypt runs outside it). The free functions are stateless.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace iodrift::daemon {

struct BasicCredentials {
  std::string user;
  std::string password;
};

// Standard base64 (RFC 4648 §4) with or without `=` padding; nullopt on any other byte.
std::optional<std::string> DecodeBase64(std::string_view text);

// "Basic <base64(user:password)>" (scheme case-insensitive, spaces around the token allowed) ->
// user and password (split at the first `:`). nullopt for other schemes, bad base64, no `:` or
// a NUL byte in either part.
std::optional<BasicCredentials> ParseBasicAuthorization(std::string_view header);

// Equal contents, in time that depends only on the lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// The 32-byte SHA-256 digest of `data` (GnuTLS); empty on failure.
std::string Sha256(std::string_view data);

// True when `password` hashes to `hash` with bcrypt (libcrypt's crypt_rn). False for a hash that
// is not bcrypt ($2a$/$2b$/$2y$, 60 characters) and on any libcrypt failure.
bool BcryptMatches(const std::string& password, const std::string& hash);

class BasicAuth {
 public:
  // `users`: user -> bcrypt hash (validated by the config loader). Empty = authentication off.
  explicit BasicAuth(std::map<std::string, std::string> users = {});

  bool enabled() const { return !users_.empty(); }

  // True when `authorization` (the Authorization header value; empty when absent) names a
  // configured user with the right password. Always true when authentication is off.
  bool Allows(std::string_view authorization);

  // Number of cached successful verifications (for tests).
  std::size_t CachedCount() const;

  // Successful verifications remembered per user; older ones are dropped beyond this.
  static constexpr std::size_t kMaxCachedPerUser = 8;

 private:
  bool Cached(const std::string& user, const std::string& digest) const;

  const std::map<std::string, std::string> users_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::string>> verified_;  // user -> password digests
};

}  // namespace iodrift::daemon
