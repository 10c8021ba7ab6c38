// Tests of the one HOST:PORT parser (config/listen.h) and of the places that must agree with it:
// the config key `listen`, the --listen flag (LoadEffectiveConfig) and HttpServer::Start.
#include "config/listen.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "daemon/app.h"
#include "daemon/cli.h"
#include "daemon/http_server.h"

namespace iodrift::config {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ParseListen, SplitsHostAndPortOfEveryAcceptedForm) {
  EXPECT_EQ(*ParseListen("127.0.0.1:9723"), (Listen{"127.0.0.1", 9723}));
  EXPECT_EQ(*ParseListen("0.0.0.0:0"), (Listen{"0.0.0.0", 0}));
  EXPECT_EQ(*ParseListen("localhost:65535"), (Listen{"localhost", 65535}));
  EXPECT_EQ(*ParseListen("my-host.example:80"), (Listen{"my-host.example", 80}));
  EXPECT_EQ(*ParseListen("[::1]:9723"), (Listen{"::1", 9723}));
  EXPECT_EQ(*ParseListen("[::]:80"), (Listen{"::", 80}));
  EXPECT_EQ(*ParseListen("[fe80::1]:1"), (Listen{"fe80::1", 1}));
  EXPECT_EQ(*ParseListen("[::ffff:127.0.0.1]:0"), (Listen{"::ffff:127.0.0.1", 0}));
}

// Listening on every address is written out; an empty host is a mistake, not 0.0.0.0.
TEST(ParseListen, RejectsAnEmptyHostSayingHowToListenEverywhere) {
  for (const char* text : {":9723", ":0", "[]:9723"}) {
    auto listen = ParseListen(text);
    ASSERT_FALSE(listen) << text;
    EXPECT_EQ(listen.error().code, EINVAL);
  }
  EXPECT_THAT(ParseListen(":9723").error().message,
              StartsWith("missing HOST (use 0.0.0.0 or [::] for every address)"));
}

TEST(ParseListen, RejectsMissingOrBadPortsAndHostsWithAReason) {
  const std::vector<std::pair<const char*, const char*>> kBad = {
      {"", "expected HOST:PORT"},
      {"localhost", "missing `:PORT`"},
      {"localhost:http", "port must be a number from 0 to 65535"},
      {"127.0.0.1:", "port must be a number"},
      {"127.0.0.1:65536", "port must be a number"},
      {"127.0.0.1:-1", "port must be a number"},
      {"1.2.3.4:123456", "port must be a number"},
      {"::1:9723", "an IPv6 address needs brackets"},
      {"[::1]9723", "missing `:PORT` after `]`"},
      {"[::1]", "missing `:PORT` after `]`"},
      {"[::1", "unclosed `[`"},
      {"[zz::1]:9723", "invalid IPv6 address"},
      {"a b:1", "invalid host name"},
  };
  for (const auto& [text, reason] : kBad) {
    auto listen = ParseListen(text);
    ASSERT_FALSE(listen) << text;
    EXPECT_THAT(listen.error().message, HasSubstr(reason)) << text;
    // The config check is the same parser.
    EXPECT_EQ(CheckListen(text), listen.error().message) << text;
  }
}

// The flag is checked like the file and names itself; the server refuses what the check refuses
// (it used to bind 0.0.0.0 for an empty host).
TEST(ParseListen, TheFlagAndTheServerAgreeWithTheConfigCheck) {
  daemon::CommandLine cl;
  cl.state_dir = "/tmp/iodrift-listen-test";
  cl.listen = ":9723";
  auto loaded = daemon::LoadEffectiveConfig(cl);
  ASSERT_FALSE(loaded);
  ASSERT_EQ(loaded.error().size(), 1u);
  EXPECT_THAT(loaded.error()[0].ToString(),
              StartsWith("command line: --listen: missing HOST (use 0.0.0.0 or [::] for every "
                         "address)"));

  for (const char* text : {":0", "127.0.0.1", "[::1]0", "localhost:99999"}) {
    daemon::HttpServer server;
    auto started = server.Start({.listen = text});
    ASSERT_FALSE(started) << text;
    EXPECT_EQ(started.error().message,
              "listen " + std::string(text) + ": " + ParseListen(text).error().message);
  }
  daemon::HttpServer server;
  ASSERT_TRUE(server.Start({.listen = "127.0.0.1:0"}));
  EXPECT_NE(server.port(), 0);
}

}  // namespace
}  // namespace iodrift::config
