// The pure helpers of the HTTP server's hardening (Accept-Encoding q-values, exact path
// decoding, the hard connection limit) and basic auth's failure rate limit and 72-byte rule.
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "daemon/http_auth.h"
#include "daemon/http_server.h"

namespace iodrift::daemon {
namespace {

// bcrypt (cost 4) of "s3cret" and of 72 × 'L', made with python3's crypt module.
constexpr const char* kHash = "$2b$04$Y3NrnIAJbzElkdgBnXyqAuBouNuD4CCzhTbEaAwPXS1KbekEGECYy";
constexpr const char* kLongHash = "$2b$04$YAmy7Mc31k6coefgHc.DAei4Xj6NOJtgoLy16i2FEcAUNIsMaMlAm";

std::string Basic(const std::string& user_password) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < user_password.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(user_password[i]) << 16) |
                       (static_cast<unsigned char>(user_password[i + 1]) << 8) |
                       static_cast<unsigned char>(user_password[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(v >> k) & 63];
  }
  if (i < user_password.size()) {
    unsigned v = static_cast<unsigned char>(user_password[i]) << 16;
    if (i + 1 < user_password.size()) v |= static_cast<unsigned char>(user_password[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < user_password.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return "Basic " + out;
}

TEST(AcceptEncodingAllowsGzip, HonoursQValues) {
  EXPECT_TRUE(AcceptEncodingAllowsGzip("gzip"));
  EXPECT_TRUE(AcceptEncodingAllowsGzip("GZIP"));
  EXPECT_TRUE(AcceptEncodingAllowsGzip("deflate, gzip;q=0.5"));
  EXPECT_TRUE(AcceptEncodingAllowsGzip("x-gzip"));
  EXPECT_TRUE(AcceptEncodingAllowsGzip("*"));
  EXPECT_TRUE(AcceptEncodingAllowsGzip("gzip;q=0.001"));
  EXPECT_FALSE(AcceptEncodingAllowsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptEncodingAllowsGzip("gzip; q=0.000"));
  EXPECT_FALSE(AcceptEncodingAllowsGzip("gzip;Q=0."));
  EXPECT_FALSE(AcceptEncodingAllowsGzip("identity"));
  EXPECT_FALSE(AcceptEncodingAllowsGzip(""));
  EXPECT_FALSE(AcceptEncodingAllowsGzip("*;q=0"));
  EXPECT_FALSE(AcceptEncodingAllowsGzip("gzip;q=0, *"));  // named gzip wins over *
  EXPECT_FALSE(AcceptEncodingAllowsGzip("gzipx, br"));
}

TEST(PercentDecodePath, KeepsNulSoPathsMatchExactly) {
  EXPECT_EQ(PercentDecodePath("/metrics"), "/metrics");
  EXPECT_EQ(PercentDecodePath("/%6Detrics"), "/metrics");
  EXPECT_EQ(PercentDecodePath("/metrics%00.html"), std::string("/metrics\0.html", 14));
  EXPECT_NE(PercentDecodePath("/metrics%00.html"), "/metrics");
  EXPECT_EQ(PercentDecodePath("/a%zz%4"), "/a%zz%4");
}

TEST(HardConnectionLimit, LeavesHeadroomForEviction) {
  HttpServerOptions options;
  options.max_connections = 64;
  EXPECT_EQ(HardConnectionLimit(options), 256u);
  options.max_connections = 8;
  EXPECT_EQ(HardConnectionLimit(options), 72u);
}

TEST(BasicAuthCheck, FailuresOverTheBudgetGet429WithoutBcrypt) {
  BasicAuth auth(std::map<std::string, std::string>{{"prometheus", kHash}});
  ASSERT_EQ(auth.Check(Basic("prometheus:s3cret"), "10.0.0.1"), AuthDecision::kAllowed);
  int denied = 0;
  int limited = 0;
  for (int i = 0; i < 40; ++i) {
    switch (auth.Check(Basic("prometheus:wrong" + std::to_string(i)), "10.0.0.2")) {
      case AuthDecision::kDenied:
        ++denied;
        break;
      case AuthDecision::kTooManyFailures:
        ++limited;
        break;
      case AuthDecision::kAllowed:
        FAIL() << "a wrong password was allowed";
    }
  }
  // The burst (10), plus at most a couple refilled while the loop ran.
  EXPECT_GE(denied, 10);
  EXPECT_LE(denied, 14);
  EXPECT_EQ(denied + limited, 40);
  // The limited client still gets in with credentials verified before (the cache)...
  EXPECT_EQ(auth.Check(Basic("prometheus:s3cret"), "10.0.0.2"), AuthDecision::kAllowed);
  // ... and another client is not affected.
  EXPECT_EQ(auth.Check(Basic("prometheus:wrong"), "10.0.0.3"), AuthDecision::kDenied);
  // Malformed headers count as failures too.
  for (int i = 0; i < 20; ++i) (void)auth.Check("Basic !!!", "10.0.0.4");
  EXPECT_EQ(auth.Check("Basic !!!", "10.0.0.4"), AuthDecision::kTooManyFailures);
}

TEST(BasicAuthCheck, OneBcryptAtATime) {
  BasicAuth auth(std::map<std::string, std::string>{{"prometheus", kHash}});
  std::atomic<int> busy{0};
  std::atomic<int> denied{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        // A client each: only the one-bcrypt rule can refuse.
        auto d = auth.Check(Basic("prometheus:wrong"), "10.1.0." + std::to_string(t * 10 + i));
        if (d == AuthDecision::kTooManyFailures) ++busy;
        if (d == AuthDecision::kDenied) ++denied;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(busy + denied, 40);
  EXPECT_GE(denied.load(), 1);
}

TEST(BasicAuthCheck, PasswordsOverBcrypts72BytesAreRefused) {
  const std::string long_password(72, 'L');
  BasicAuth auth(std::map<std::string, std::string>{{"long", kLongHash}});
  EXPECT_EQ(auth.Check(Basic("long:" + long_password), "10.2.0.1"), AuthDecision::kAllowed);
  // bcrypt would accept this (it reads 72 bytes only); iodrift refuses it.
  EXPECT_TRUE(BcryptMatches(long_password + "anything", kLongHash));
  EXPECT_EQ(auth.Check(Basic("long:" + long_password + "anything"), "10.2.0.2"),
            AuthDecision::kDenied);
  EXPECT_FALSE(auth.Allows(Basic("long:" + long_password + "x")));
}

}  // namespace
}  // namespace iodrift::daemon
