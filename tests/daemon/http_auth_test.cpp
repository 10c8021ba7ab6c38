// Tests of basic auth (daemon/http_auth.h): header parsing, base64, constant-time compare,
// bcrypt verification through libcrypt, and the cache of successful verifications.
#include "daemon/http_auth.h"

#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace iodrift::daemon {
namespace {

// bcrypt (cost 4, to keep the test fast) of "s3cret", made with python3's crypt module.
constexpr const char* kHash = "$2b$04$Y3NrnIAJbzElkdgBnXyqAuBouNuD4CCzhTbEaAwPXS1KbekEGECYy";

std::string BasicHeader(const std::string& user_colon_password) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "Basic ";
  const std::string& in = user_colon_password;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    std::uint32_t n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

TEST(DecodeBase64, DecodesWithAndWithoutPadding) {
  EXPECT_EQ(DecodeBase64("YWxpY2U6czNjcmV0"), "alice:s3cret");
  EXPECT_EQ(DecodeBase64("YQ=="), "a");
  EXPECT_EQ(DecodeBase64("YQ"), "a");
  EXPECT_EQ(DecodeBase64("YWI="), "ab");
  EXPECT_EQ(DecodeBase64(""), "");
}

TEST(DecodeBase64, RejectsJunk) {
  EXPECT_FALSE(DecodeBase64("YQ=a"));
  EXPECT_FALSE(DecodeBase64("Y"));
  EXPECT_FALSE(DecodeBase64("YQ==="));
  EXPECT_FALSE(DecodeBase64("YW*j"));
  EXPECT_FALSE(DecodeBase64("YWJj ZA=="));
}

TEST(ParseBasicAuthorization, SplitsAtTheFirstColon) {
  auto c = ParseBasicAuthorization(BasicHeader("alice:pa:ss"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->user, "alice");
  EXPECT_EQ(c->password, "pa:ss");
  auto empty = ParseBasicAuthorization(BasicHeader(":"));
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->user, "");
  EXPECT_EQ(empty->password, "");
}

TEST(ParseBasicAuthorization, SchemeIsCaseInsensitive) {
  EXPECT_TRUE(ParseBasicAuthorization("basic YWxpY2U6czNjcmV0"));
  EXPECT_TRUE(ParseBasicAuthorization("BASIC   YWxpY2U6czNjcmV0  "));
}

TEST(ParseBasicAuthorization, RejectsOtherSchemesAndMalformedTokens) {
  EXPECT_FALSE(ParseBasicAuthorization(""));
  EXPECT_FALSE(ParseBasicAuthorization("Basic"));
  EXPECT_FALSE(ParseBasicAuthorization("Bearer YWxpY2U6czNjcmV0"));
  EXPECT_FALSE(ParseBasicAuthorization("BasicYWxpY2U6czNjcmV0"));
  EXPECT_FALSE(ParseBasicAuthorization("Basic !!!"));
  EXPECT_FALSE(ParseBasicAuthorization(BasicHeader("no-colon")));
  EXPECT_FALSE(ParseBasicAuthorization(BasicHeader(std::string("alice:a\0b", 9))));
}

TEST(ConstantTimeEquals, ComparesContents) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
}

TEST(Sha256, KnownVector) {
  const std::string digest = Sha256("abc");
  ASSERT_EQ(digest.size(), 32u);
  static constexpr unsigned char kExpected[] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea};
  for (std::size_t i = 0; i < sizeof(kExpected); ++i) {
    EXPECT_EQ(static_cast<unsigned char>(digest[i]), kExpected[i]) << i;
  }
}

TEST(BcryptMatches, RightAndWrongPasswords) {
  EXPECT_TRUE(BcryptMatches("s3cret", kHash));
  EXPECT_FALSE(BcryptMatches("s3cre", kHash));
  EXPECT_FALSE(BcryptMatches("S3cret", kHash));
  EXPECT_FALSE(BcryptMatches(std::string("s3cret\0x", 8), kHash));
  // Not bcrypt: an MD5-crypt hash and a plain string are refused outright.
  EXPECT_FALSE(BcryptMatches("s3cret", "$1$abcdefgh$0123456789012345678901"));
  EXPECT_FALSE(BcryptMatches("s3cret", "s3cret"));
  EXPECT_FALSE(BcryptMatches("s3cret", ""));
}

TEST(BasicAuth, OffWhenNoUsers) {
  BasicAuth auth;
  EXPECT_FALSE(auth.enabled());
  EXPECT_TRUE(auth.Allows(""));
}

TEST(BasicAuth, AllowsOnlyTheRightUserAndPassword) {
  BasicAuth auth(std::map<std::string, std::string>{{"alice", kHash}});
  ASSERT_TRUE(auth.enabled());
  EXPECT_FALSE(auth.Allows(""));
  EXPECT_FALSE(auth.Allows("Bearer x"));
  EXPECT_FALSE(auth.Allows(BasicHeader("alice:wrong")));
  EXPECT_FALSE(auth.Allows(BasicHeader("bob:s3cret")));
  EXPECT_FALSE(auth.Allows(BasicHeader("Alice:s3cret")));
  EXPECT_EQ(auth.CachedCount(), 0u) << "failures are never cached";
  EXPECT_TRUE(auth.Allows(BasicHeader("alice:s3cret")));
  EXPECT_EQ(auth.CachedCount(), 1u);
  // Served from the cache now, and the cache does not let a wrong password through.
  EXPECT_TRUE(auth.Allows(BasicHeader("alice:s3cret")));
  EXPECT_FALSE(auth.Allows(BasicHeader("alice:s3cre")));
  EXPECT_FALSE(auth.Allows(BasicHeader("alice:s3cret2")));
  EXPECT_EQ(auth.CachedCount(), 1u);
}

TEST(BasicAuth, ConcurrentChecksAgree) {
  BasicAuth auth(std::map<std::string, std::string>{{"alice", kHash}});
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        ok[t] += auth.Allows(BasicHeader("alice:s3cret")) ? 1 : 0;
        ok[t] += auth.Allows(BasicHeader("alice:nope")) ? 100 : 0;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(ok[t], 20) << t;
  EXPECT_EQ(auth.CachedCount(), 1u);
}

}  // namespace
}  // namespace iodrift::daemon
