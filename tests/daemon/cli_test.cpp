#include "daemon/cli.h"

#include <gtest/gtest.h>

namespace iodrift::daemon {
namespace {

TEST(ParseCommandLine, TakesValuesSeparateOrWithEquals) {
  auto cl =
      ParseCommandLine({"--config", "/etc/x.yaml", "--listen=127.0.0.1:0", "--once", "--json"});
  ASSERT_TRUE(cl) << cl.error().message;
  EXPECT_EQ(cl->config_file, "/etc/x.yaml");
  EXPECT_EQ(cl->listen, "127.0.0.1:0");
  EXPECT_TRUE(cl->once);
  EXPECT_TRUE(cl->json);
}

TEST(ParseCommandLine, RejectsUnknownOptionsMissingValuesAndStrayArguments) {
  EXPECT_EQ(ParseCommandLine({"--bogus"}).error().message, "unknown option '--bogus'");
  EXPECT_EQ(ParseCommandLine({"--proc-root"}).error().message,
            "option '--proc-root' requires an argument");
  EXPECT_EQ(ParseCommandLine({"stray"}).error().message, "unexpected argument 'stray'");
  EXPECT_EQ(ParseCommandLine({"--json"}).error().message, "--json goes with --once");
  EXPECT_FALSE(ParseCommandLine({"--state-dir="}));
}

}  // namespace
}  // namespace iodrift::daemon
