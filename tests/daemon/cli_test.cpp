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

TEST(ParseCommandLine, StrictGoesWithCheckConfig) {
  auto cl = ParseCommandLine({"--check-config", "--strict"});
  ASSERT_TRUE(cl) << cl.error().message;
  EXPECT_TRUE(cl->check_config);
  EXPECT_TRUE(cl->strict);
  EXPECT_EQ(ParseCommandLine({"--strict"}).error().message, "--strict goes with --check-config");
}

TEST(TargetWarnings, NamesEveryProbeWhoseTargetCannotBeOpened) {
  config::Config cfg;
  probes::ProbeSpec memory;
  memory.name = "mem";
  memory.kind = probes::ProbeKind::kMemory;
  probes::ProbeSpec present = memory;
  present.name = "here";
  present.kind = probes::ProbeKind::kMetadata;
  present.target = "/";
  probes::ProbeSpec missing = present;
  missing.name = "gone";
  missing.target = "/nonexistent/iodrift-target";
  cfg.probes = {memory, present, missing};
  auto warnings = TargetWarnings(cfg);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "probe gone: target /nonexistent/iodrift-target: No such file or directory");
}

}  // namespace
}  // namespace iodrift::daemon
