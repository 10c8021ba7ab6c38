#include "daemon/http_auth.h"

#include <crypt.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <memory>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

namespace iodrift::daemon {
namespace {

// bcrypt of a random phrase at cost 10: checked against when the user is unknown, so that an
// unknown user costs as much as a wrong password.
constexpr const char* kDummyHash = "$2b$10$dbYXDtDW43O4VDU5GeVKtuu3yeCIp4MgvY4NQbe4eumKfiHSapSjC";

bool IsBcryptShaped(std::string_view hash) {
  return hash.size() == 60 && hash[0] == '$' && hash[1] == '2' &&
         (hash[2] == 'a' || hash[2] == 'b' || hash[2] == 'y') && hash[3] == '$' && hash[6] == '$';
}

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<std::string> DecodeBase64(std::string_view text) {
  // Padding: at most two `=`, only at the end, and only where it completes a 4-character group.
  std::size_t padding = 0;
  while (!text.empty() && text.back() == '=' && padding < 2) {
    text.remove_suffix(1);
    ++padding;
  }
  if (padding > 0 && (text.size() + padding) % 4 != 0) return std::nullopt;
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    const int value = Base64Value(c);
    if (value < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(value);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return out;
}

std::optional<BasicCredentials> ParseBasicAuthorization(std::string_view header) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  header = trim(header);
  constexpr std::string_view kScheme = "basic";
  if (header.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return std::nullopt;
  }
  if (header[kScheme.size()] != ' ' && header[kScheme.size()] != '\t') return std::nullopt;
  auto decoded = DecodeBase64(trim(header.substr(kScheme.size())));
  if (!decoded) return std::nullopt;
  const std::size_t colon = decoded->find(':');
  if (colon == std::string::npos || decoded->find('\0') != std::string::npos) return std::nullopt;
  return BasicCredentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

std::string Sha256(std::string_view data) {
  std::array<unsigned char, 32> digest{};
  if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data.data(), data.size(), digest.data()) != 0) {
    return {};
  }
  return std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

bool BcryptMatches(const std::string& password, const std::string& hash) {
  if (!IsBcryptShaped(hash) || password.find('\0') != std::string::npos) return false;
  // struct crypt_data is ~32 KiB: on the heap, not on a server thread's stack.
  auto data = std::make_unique<crypt_data>();
  const char* result =
      crypt_rn(password.c_str(), hash.c_str(), data.get(), static_cast<int>(sizeof(crypt_data)));
  // crypt_rn returns NULL on failure (libxcrypt never returns the "*0" failure token from _rn).
  if (result == nullptr || result[0] == '*') return false;
  return ConstantTimeEquals(result, hash);
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

bool BasicAuth::Cached(const std::string& user, const std::string& digest) const {
  std::lock_guard lock(mu_);
  auto it = verified_.find(user);
  if (it == verified_.end()) return false;
  bool found = false;
  for (const std::string& known : it->second) found = ConstantTimeEquals(known, digest) || found;
  return found;
}

bool BasicAuth::Verify(const BasicCredentials& credentials, const std::string& digest, bool wait,
                       bool* busy) {
  std::unique_lock bcrypt(bcrypt_mu_, std::defer_lock);
  if (wait) {
    bcrypt.lock();
  } else if (!bcrypt.try_lock()) {
    *busy = true;
    return false;
  }
  auto user = users_.find(credentials.user);
  if (user == users_.end()) {
    (void)BcryptMatches(credentials.password, kDummyHash);
    return false;
  }
  if (!BcryptMatches(credentials.password, user->second)) return false;
  bcrypt.unlock();
  std::lock_guard lock(mu_);
  auto& digests = verified_[credentials.user];
  for (const std::string& known : digests) {
    if (known == digest) return true;  // another thread verified the same password meanwhile
  }
  if (digests.size() >= kMaxCachedPerUser) digests.erase(digests.begin());
  digests.push_back(digest);
  return true;
}

bool BasicAuth::Allows(std::string_view authorization) {
  if (!enabled()) return true;
  auto credentials = ParseBasicAuthorization(authorization);
  if (!credentials || credentials->password.size() > kBcryptMaxPasswordBytes) return false;
  const std::string digest = Sha256(credentials->password);
  if (digest.empty()) return false;
  if (Cached(credentials->user, digest)) return true;
  bool busy = false;
  return Verify(*credentials, digest, true, &busy);
}

bool BasicAuth::MayTry(const std::string& client) {
  std::lock_guard lock(failures_mu_);
  auto it = failures_.find(client);
  if (it == failures_.end()) return true;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - it->second.last).count();
  it->second.tokens = std::min(kFailureBurst, it->second.tokens + elapsed * kFailuresPerSecond);
  it->second.last = now;
  return it->second.tokens >= 1;
}

void BasicAuth::ChargeFailure(const std::string& client) {
  std::lock_guard lock(failures_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (failures_.size() >= kMaxTrackedClients && failures_.count(client) == 0) {
    // Forget the clients whose failures are forgiven by now; if none is, forget everyone (an
    // attacker with that many addresses is still held by the one-bcrypt-at-a-time rule).
    for (auto it = failures_.begin(); it != failures_.end();) {
      const double elapsed = std::chrono::duration<double>(now - it->second.last).count();
      if (it->second.tokens + elapsed * kFailuresPerSecond >= kFailureBurst) {
        it = failures_.erase(it);
      } else {
        ++it;
      }
    }
    if (failures_.size() >= kMaxTrackedClients) failures_.clear();
  }
  auto [it, inserted] = failures_.try_emplace(client, Bucket{kFailureBurst, now});
  if (!inserted) {
    const double elapsed = std::chrono::duration<double>(now - it->second.last).count();
    it->second.tokens = std::min(kFailureBurst, it->second.tokens + elapsed * kFailuresPerSecond);
    it->second.last = now;
  }
  it->second.tokens = std::max(0.0, it->second.tokens - 1);
}

AuthDecision BasicAuth::Check(std::string_view authorization, const std::string& client) {
  if (!enabled()) return AuthDecision::kAllowed;
  auto credentials = ParseBasicAuthorization(authorization);
  std::string digest;
  if (credentials && credentials->password.size() <= kBcryptMaxPasswordBytes) {
    digest = Sha256(credentials->password);
    // Verified before: allowed at the cost of a SHA-256, whatever the client's failure count.
    if (!digest.empty() && Cached(credentials->user, digest)) return AuthDecision::kAllowed;
  }
  if (!MayTry(client)) return AuthDecision::kTooManyFailures;
  if (!credentials || digest.empty()) {
    ChargeFailure(client);
    return AuthDecision::kDenied;
  }
  bool busy = false;
  if (Verify(*credentials, digest, false, &busy)) return AuthDecision::kAllowed;
  if (busy) return AuthDecision::kTooManyFailures;
  ChargeFailure(client);
  return AuthDecision::kDenied;
}

std::size_t BasicAuth::CachedCount() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& [user, digests] : verified_) n += digests.size();
  return n;
}

}  // namespace iodrift::daemon
