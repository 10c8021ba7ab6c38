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
// Floods of wrong passwords (each costs a bcrypt, ~50-100 ms of CPU on a server thread) are
// bounded two ways by Check():
// - per client address, failures are rate-limited (a bucket of kFailureBurst, refilled at
//   kFailuresPerSecond): once a client is over it, its requests get kTooManyFailures (429) without
//   running bcrypt — except credentials already verified (the success cache), so a legitimate
//   scraper behind the same address (NAT, loopback) keeps working;
// - at most one bcrypt runs at a time: a request that would need a second one meanwhile gets
//   kTooManyFailures at once, so at most one server thread is ever busy with bcrypt and the
//   others keep answering.
// bcrypt only uses the first 72 bytes of a password: a longer password is refused (never
// checked), so "the first 72 bytes plus anything" cannot pass for the configured password.
//
// The parsing and comparison helpers are pure and tested on their own (tests/daemon/
// http_auth_test.cpp).
//
// Thread-safety: BasicAuth::Allows may be called from any number of threads at once (the cache is
// behind a mutex; bcrypt runs outside it). The free functions are stateless.
#pragma once

#include <chrono>
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

enum class AuthDecision {
  kAllowed,
  kDenied,           // 401: missing, malformed or wrong credentials
  kTooManyFailures,  // 429: the client is over its failure rate, or bcrypt is busy
};

// bcrypt's password length limit, in bytes.
inline constexpr std::size_t kBcryptMaxPasswordBytes = 72;

class BasicAuth {
 public:
  // `users`: user -> bcrypt hash (validated by the config loader). Empty = authentication off.
  explicit BasicAuth(std::map<std::string, std::string> users = {});

  bool enabled() const { return !users_.empty(); }

  // True when `authorization` (the Authorization header value; empty when absent) names a
  // configured user with the right password. Always true when authentication is off.
  // Without rate limiting (for callers that have no client address).
  bool Allows(std::string_view authorization);

  // As Allows(), for a request from `client` (an address), with the failure rate limit and the
  // one-bcrypt-at-a-time rule above.
  AuthDecision Check(std::string_view authorization, const std::string& client);

  // Failures a client may have in a burst, and the rate they are forgiven at.
  static constexpr double kFailureBurst = 10;
  static constexpr double kFailuresPerSecond = 1;
  // Clients whose failures are remembered; beyond this the fully forgiven ones are forgotten.
  static constexpr std::size_t kMaxTrackedClients = 4096;

  // Number of cached successful verifications (for tests).
  std::size_t CachedCount() const;

  // Successful verifications remembered per user; older ones are dropped beyond this.
  static constexpr std::size_t kMaxCachedPerUser = 8;

 private:
  bool Cached(const std::string& user, const std::string& digest) const;
  // True while `client` may fail again; ChargeFailure() uses one of its tokens.
  bool MayTry(const std::string& client);
  void ChargeFailure(const std::string& client);
  // The bcrypt step of Allows(); `busy` set when bcrypt is in use and `wait` is false.
  bool Verify(const BasicCredentials& credentials, const std::string& digest, bool wait,
              bool* busy);

  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point last;
  };
  std::mutex failures_mu_;
  std::map<std::string, Bucket> failures_;
  std::mutex bcrypt_mu_;  // one bcrypt at a time in Check()

  const std::map<std::string, std::string> users_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::string>> verified_;  // user -> password digests
};

}  // namespace iodrift::daemon
