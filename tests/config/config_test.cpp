// Tests of the YAML config loader (config/config.h): defaults, every kind of bad input with the
// exact FILE:LINE:COLUMN: KEY of its problem, several problems at once, the installed
// config/iodrift.yaml, duration and size parsing, and a corpus of broken files in tests/config/bad
// (each file names the problem it must produce in a `# expect: LINE:COLUMN KEY` header).
#include "config/config.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/lib/ci_guarantee.h"

namespace iodrift::config {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kFile = "bad.yaml";

std::filesystem::path SourcePath(const std::string& relative_to_fixtures) {
  return std::filesystem::path(IODRIFT_TEST_FIXTURES + relative_to_fixtures).lexically_normal();
}

// The problems of a document that must fail to load.
std::vector<Problem> ProblemsOf(std::string_view yaml) {
  LoadResult result = LoadFromString(yaml, kFile);
  EXPECT_FALSE(result.has_value()) << "loaded without problems:\n" << yaml;
  if (result.has_value()) return {};
  return result.error();
}

std::string Joined(const std::vector<Problem>& problems) {
  std::string out;
  for (const Problem& problem : problems) out += problem.ToString() + "\n";
  return out;
}

// The one problem of a document that must produce exactly one.
Problem OnlyProblem(std::string_view yaml) {
  std::vector<Problem> problems = ProblemsOf(yaml);
  EXPECT_EQ(problems.size(), 1u) << Joined(problems);
  if (problems.empty()) return Problem{};
  return problems.front();
}

Config LoadOk(std::string_view yaml) {
  LoadResult result = LoadFromString(yaml, "ok.yaml");
  EXPECT_TRUE(result.has_value()) << (result ? "" : Joined(result.error()));
  return result.value_or(Config{});
}

// A fresh directory under the system temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "iodrift-config-XXXXXX");
    path_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// ---- defaults and the happy path ----------------------------------------------------------------

// The CPU-bound kinds (cached, memory) default to a 100 ms time budget, the others to 250 ms; a
// configured one is kept; the embedded default config agrees.
TEST(LoadFromString, TimeBudgetDefaultsByKind) {
  const Config c = LoadOk(
      "probes:\n"
      "  - {name: c, kind: cached, target: /tmp}\n"
      "  - {name: m, kind: memory}\n"
      "  - {name: b, kind: buffered, target: /tmp}\n"
      "  - {name: r, kind: random, target: /tmp}\n"
      "  - {name: c2, kind: cached, target: /tmp, time_budget: 250ms}\n");
  ASSERT_EQ(c.probes.size(), 5u);
  EXPECT_EQ(c.probes[0].time_budget, std::chrono::milliseconds(100));
  EXPECT_EQ(c.probes[1].time_budget, std::chrono::milliseconds(100));
  EXPECT_EQ(c.probes[2].time_budget, std::chrono::milliseconds(250));
  EXPECT_EQ(c.probes[3].time_budget, std::chrono::milliseconds(250));
  EXPECT_EQ(c.probes[4].time_budget, std::chrono::milliseconds(250));
  for (const auto& probe : DefaultConfig("/var/lib/iodrift").probes) {
    const bool cpu_bound =
        probe.kind == probes::ProbeKind::kCached || probe.kind == probes::ProbeKind::kMemory;
    EXPECT_EQ(probe.time_budget, std::chrono::milliseconds(cpu_bound ? 100 : 250)) << probe.name;
  }
}

TEST(LoadFromString, EmptyDocumentIsAllDefaults) {
  for (std::string_view text : {"", "\n\n", "# only a comment\n", "---\n", "~\n", "---\n...\n"}) {
    Config config = LoadOk(text);
    EXPECT_EQ(config, Config{}) << "for " << testing::PrintToString(std::string(text));
  }
}

TEST(LoadFromString, OmittedStateDirStaysEmpty) {
  Config config = LoadOk("log_level: debug\n");
  EXPECT_EQ(config.state_dir, "");
  EXPECT_EQ(config.log_level, "debug");
  EXPECT_TRUE(config.probes.empty());
}

TEST(LoadFromString, ReadsEveryKey) {
  Config config = LoadOk(R"(listen: "[::1]:0"
state_dir: /srv/iodrift
proc_root: /host/proc
dbus: "unix:path=/run/x"
log_level: trace
collectors:
  meminfo: false
  vmstat:
    enabled: false
    fields: "nr_.*|pgscan.*"
  slabinfo:
    include: "dentry"
    exclude: "kmalloc-.*"
  pressure: false
  buddyinfo: {enabled: false}
  boot: false
  dentries: false
http:
  max_connections: 8
  connection_timeout: 1m30s
probes:
  - name: sda-direct
    kind: direct
    target: /dev/sda
    interval: 10m
    size: 1.5GiB
    timeout: 1m
    time_budget: 2s
  - name: meta.1
    kind: metadata
    target: /var/tmp
    files: 256
  - name: rnd_1
    kind: random
    target: /var/tmp/f
    requests: 1000
    size: auto
  - name: mem
    kind: memory
)");
  EXPECT_EQ(config.listen, "[::1]:0");
  EXPECT_EQ(config.state_dir, "/srv/iodrift");
  EXPECT_EQ(config.proc_root, "/host/proc");
  EXPECT_EQ(config.dbus, "unix:path=/run/x");
  EXPECT_EQ(config.log_level, "trace");
  EXPECT_FALSE(config.collectors.meminfo);
  EXPECT_FALSE(config.collectors.vmstat.enabled);
  EXPECT_EQ(config.collectors.vmstat.fields, "nr_.*|pgscan.*");
  EXPECT_TRUE(config.collectors.slabinfo.enabled);  // a map without `enabled` stays on
  EXPECT_EQ(config.collectors.slabinfo.include, "dentry");
  EXPECT_EQ(config.collectors.slabinfo.exclude, "kmalloc-.*");
  EXPECT_FALSE(config.collectors.pressure);
  EXPECT_FALSE(config.collectors.buddyinfo);
  EXPECT_FALSE(config.collectors.boot);
  EXPECT_FALSE(config.collectors.dentries);
  EXPECT_EQ(config.http.max_connections, 8u);
  EXPECT_EQ(config.http.connection_timeout, seconds(90));
  ASSERT_EQ(config.probes.size(), 4u);
  const ProbeSpec& direct = config.probes[0];
  EXPECT_EQ(direct.name, "sda-direct");
  EXPECT_EQ(direct.kind, ProbeKind::kDirect);
  EXPECT_EQ(direct.target, "/dev/sda");
  EXPECT_EQ(direct.interval, minutes(10));
  EXPECT_EQ(direct.size, 1610612736u);
  EXPECT_EQ(direct.timeout, minutes(1));
  EXPECT_EQ(direct.time_budget, seconds(2));
  EXPECT_EQ(config.probes[1].kind, ProbeKind::kMetadata);
  EXPECT_EQ(config.probes[1].files, 256u);
  EXPECT_EQ(config.probes[2].requests, 1000u);
  EXPECT_EQ(config.probes[2].size, 0u);  // auto = calibrate
  EXPECT_EQ(config.probes[3].kind, ProbeKind::kMemory);
  EXPECT_EQ(config.probes[3].target, "");
  EXPECT_EQ(config.probes[3].interval, minutes(5));  // default
}

TEST(LoadFromString, EmptySectionsMeanDefaults) {
  // `probes:` whose items are all commented out is null: no probes, not an error.
  Config config = LoadOk("collectors:\nhttp:\nprobes:\n#  - name: x\n");
  EXPECT_EQ(config, Config{});
}

TEST(LoadFromString, DiagnoseSection) {
  EXPECT_FALSE(LoadOk("").diagnose.enabled);  // off unless asked for
  Config config = LoadOk(
      "diagnose:\n  enabled: true\n  warm_size: 256MiB\n  min_available: 1GiB\n"
      "  max_memory_pressure: 5\n  timeout: 90s\n  cooldown: 15m\n  max_io_pressure: 30\n");
  EXPECT_TRUE(config.diagnose.enabled);
  EXPECT_EQ(config.diagnose.warm_size, 256ULL << 20);
  EXPECT_EQ(config.diagnose.min_available, 1ULL << 30);
  EXPECT_EQ(config.diagnose.max_memory_pressure, 5u);
  EXPECT_EQ(config.diagnose.timeout, std::chrono::seconds(90));
  EXPECT_EQ(config.diagnose.cooldown, std::chrono::minutes(15));
  EXPECT_EQ(config.diagnose.max_io_pressure, 30u);
  EXPECT_EQ(LoadOk("").diagnose.cooldown, std::chrono::minutes(30));
  EXPECT_EQ(LoadOk("diagnose:\n  cooldown: 0s\n").diagnose.cooldown, Duration::zero());
  EXPECT_EQ(LoadOk("diagnose:\n  cooldown: 0\n").diagnose.cooldown, Duration::zero());
  EXPECT_EQ(OnlyProblem("diagnose:\n  cooldown: 0x\n").ToString(),
            "bad.yaml:2:13: diagnose.cooldown: expected a duration like 500ms, 30s, 10m, 1h or "
            "1m30s, got `0x`");
  EXPECT_EQ(OnlyProblem("diagnose:\n  timeout: 0s\n").ToString(),
            "bad.yaml:2:12: diagnose.timeout: must be greater than zero, got `0s`");
  EXPECT_EQ(OnlyProblem("diagnose:\n  max_memory_pressure: 150\n").ToString(),
            "bad.yaml:2:24: diagnose.max_memory_pressure: must be an integer from 0 to 100, got "
            "`150`");
}

// ---- one test per kind of bad input -------------------------------------------------------------

TEST(LoadFromString, UnknownTopLevelKeySuggestsTheClosest) {
  Problem problem = OnlyProblem("log_level: info\nlisten_adress: \"127.0.0.1:1\"\n");
  EXPECT_EQ(problem.ToString(),
            "bad.yaml:2:1: listen_adress: unknown key (did you mean `listen`?)");
}

TEST(LoadFromString, UnknownKeyWithoutCloseMatchListsTheKeys) {
  Problem problem = OnlyProblem("colour: blue\n");
  EXPECT_THAT(problem.ToString(), StartsWith("bad.yaml:1:1: colour: unknown key (expected one of: "
                                             "listen, state_dir,"));
}

TEST(LoadFromString, UnknownProbeKeyIsReportedAtTheKey) {
  Problem problem = OnlyProblem(R"(probes:
  - name: mem
    kind: memory
    intervall: 10m
)");
  EXPECT_EQ(problem.ToString(),
            "bad.yaml:4:5: probes[0].intervall: unknown key (did you mean `interval`?)");
}

TEST(LoadFromString, UnknownCollectorAndOption) {
  std::vector<Problem> problems = ProblemsOf(R"(collectors:
  vmstats: true
  slabinfo:
    includes: "x"
)");
  ASSERT_EQ(problems.size(), 2u) << Joined(problems);
  EXPECT_EQ(problems[0].ToString(),
            "bad.yaml:2:3: collectors.vmstats: unknown key (did you mean `vmstat`?)");
  EXPECT_EQ(problems[1].ToString(),
            "bad.yaml:4:5: collectors.slabinfo.includes: unknown key (did you mean `include`?)");
}

TEST(LoadFromString, MergeKeysAreRefusedWithAReason) {
  Problem problem = OnlyProblem("base: &b {kind: memory}\n");
  EXPECT_THAT(problem.ToString(), StartsWith("bad.yaml:1:1: base: unknown key"));
  problem = OnlyProblem("probes:\n  - <<: {kind: memory}\n    name: m\n    kind: memory\n");
  EXPECT_THAT(problem.ToString(),
              StartsWith("bad.yaml:2:5: probes[0].<<: unknown key (YAML merge"));
}

TEST(LoadFromString, DuplicateKeyNamesTheFirstLine) {
  Problem problem = OnlyProblem("log_level: info\ndbus: none\nlog_level: warn\n");
  EXPECT_EQ(problem.ToString(), "bad.yaml:3:1: log_level: duplicate key (first defined at line 1)");
}

TEST(LoadFromString, TopLevelMustBeAMap) {
  Problem problem = OnlyProblem("- listen: x\n");
  EXPECT_THAT(problem.ToString(), StartsWith("bad.yaml:1:1: the top level must be a map"));
  problem = OnlyProblem("just words\n");
  EXPECT_THAT(problem.ToString(), StartsWith("bad.yaml:1:1: the top level must be a map"));
}

TEST(LoadFromString, MapWhereAScalarBelongs) {
  Problem problem = OnlyProblem("listen:\n  host: 127.0.0.1\n  port: 9723\n");
  EXPECT_EQ(problem.ToString(), "bad.yaml:2:3: listen: expected a string, got a map");
}

TEST(LoadFromString, ListWhereAScalarBelongs) {
  Problem problem = OnlyProblem("probes:\n  - name: [a, b]\n    kind: memory\n");
  EXPECT_EQ(problem.ToString(),
            "bad.yaml:2:11: probes[0].name: expected a probe name like sda-buffered, got a list");
}

TEST(LoadFromString, KeyWithoutValueIsReportedAtTheKey) {
  // yaml-cpp marks an empty value at the next token; the problem must point at the key.
  Problem problem = OnlyProblem("log_level:\ndbus: none\n");
  EXPECT_EQ(problem.ToString(), "bad.yaml:1:1: log_level: has no value (expected a string)");
}

TEST(LoadFromString, StringWhereABoolBelongs) {
  std::vector<Problem> problems = ProblemsOf(R"(collectors:
  meminfo: "true"
  pressure: yes
  boot: 1
  vmstat: {enabled: on}
)");
  ASSERT_EQ(problems.size(), 4u) << Joined(problems);
  EXPECT_EQ(problems[0].ToString(),
            "bad.yaml:2:12: collectors.meminfo: expected true or false, got the quoted string "
            "`true` (remove the quotes)");
  EXPECT_EQ(problems[1].ToString(),
            "bad.yaml:3:13: collectors.pressure: expected true or false, got `yes`");
  EXPECT_EQ(problems[2].ToString(),
            "bad.yaml:4:9: collectors.boot: expected true or false, got `1`");
  EXPECT_EQ(problems[3].ToString(),
            "bad.yaml:5:21: collectors.vmstat.enabled: expected true or false, got `on`");
}

TEST(LoadFromString, CollectorGivenAList) {
  Problem problem = OnlyProblem("collectors:\n  meminfo: [true]\n");
  EXPECT_EQ(problem.ToString(),
            "bad.yaml:2:12: collectors.meminfo: expected true, false or a map "
            "with `enabled`, got a list");
}

TEST(LoadFromString, SectionOfTheWrongType) {
  EXPECT_EQ(OnlyProblem("http: [64, 10s]\n").ToString(),
            "bad.yaml:1:7: http: expected a map (`max_connections: 64`, ...), got a list");
  EXPECT_EQ(OnlyProblem("collectors: all\n").ToString(),
            "bad.yaml:1:13: collectors: expected a map of collectors (`meminfo: true`, ...), got "
            "`all`");
  EXPECT_THAT(OnlyProblem("probes:\n  name: mem\n").ToString(),
              StartsWith("bad.yaml:2:3: probes: expected a list of probes"));
  EXPECT_THAT(OnlyProblem("probes:\n  - mem\n").ToString(),
              StartsWith("bad.yaml:2:5: probes[0]: expected a map with name, kind, target"));
}

TEST(LoadFromString, BadDuration) {
  Problem problem = OnlyProblem(R"(probes:
  - name: mem
    kind: memory
    interval: 5 parsecs
)");
  EXPECT_EQ(problem.ToString(),
            "bad.yaml:4:15: probes[0].interval: expected a duration like 500ms, 30s, 10m, 1h or "
            "1m30s, got `5 parsecs`");
}

TEST(LoadFromString, ZeroAndNegativeDurations) {
  EXPECT_EQ(OnlyProblem("http:\n  connection_timeout: 0s\n").ToString(),
            "bad.yaml:2:23: http.connection_timeout: must be greater than zero, got `0s`");
  EXPECT_EQ(OnlyProblem("http:\n  connection_timeout: -5s\n").ToString(),
            "bad.yaml:2:23: http.connection_timeout: must be greater than zero, got `-5s`");
  EXPECT_EQ(OnlyProblem("http:\n  connection_timeout: 31d\n").ToString(),
            "bad.yaml:2:23: http.connection_timeout: must be at most 30d, got `31d`");
  EXPECT_EQ(OnlyProblem("http:\n  connection_timeout: 30\n").ToString(),
            "bad.yaml:2:23: http.connection_timeout: needs a unit (ms, s, m, h or d), e.g. 30s, "
            "got `30`");
}

TEST(LoadFromString, NegativeZeroAndJunkSizes) {
  const std::string head = "probes:\n  - name: d\n    kind: direct\n    target: /dev/sda\n";
  EXPECT_EQ(OnlyProblem(head + "    size: -4KiB\n").ToString(),
            "bad.yaml:5:11: probes[0].size: must be greater than zero, got `-4KiB` (omit the key "
            "or write `auto` to calibrate)");
  EXPECT_EQ(OnlyProblem(head + "    size: 0\n").ToString(),
            "bad.yaml:5:11: probes[0].size: must be greater than zero, got `0` (omit the key or "
            "write `auto` to calibrate)");
  EXPECT_THAT(OnlyProblem(head + "    size: 64 megs\n").ToString(),
              StartsWith("bad.yaml:5:11: probes[0].size: expected a size like 4096, 4KiB"));
  EXPECT_THAT(OnlyProblem(head + "    size: 99999999999TiB\n").ToString(),
              StartsWith("bad.yaml:5:11: probes[0].size: too large"));
}

TEST(LoadFromString, CountsOutOfRangeOrNotIntegers) {
  const std::string head = "probes:\n  - name: m\n    kind: metadata\n    target: /var/tmp\n";
  EXPECT_EQ(OnlyProblem(head + "    files: 0\n").ToString(),
            "bad.yaml:5:12: probes[0].files: must be an integer from 1 to 100000, got `0`");
  EXPECT_EQ(OnlyProblem(head + "    files: 100001\n").ToString(),
            "bad.yaml:5:12: probes[0].files: must be an integer from 1 to 100000, got `100001`");
  EXPECT_EQ(OnlyProblem(head + "    files: -3\n").ToString(),
            "bad.yaml:5:12: probes[0].files: expected an integer from 1 to 100000, got `-3`");
  EXPECT_EQ(OnlyProblem(head + "    files: 2.5\n").ToString(),
            "bad.yaml:5:12: probes[0].files: expected an integer from 1 to 100000, got `2.5`");
  EXPECT_EQ(OnlyProblem(head + "    files: \"64\"\n").ToString(),
            "bad.yaml:5:12: probes[0].files: expected an integer from 1 to 100000, got the quoted "
            "string `64` (remove the quotes)");
  EXPECT_EQ(OnlyProblem(head + "    files: 99999999999999999999999\n").ToString(),
            "bad.yaml:5:12: probes[0].files: must be an integer from 1 to 100000, got "
            "`99999999999999999999999`");
  EXPECT_EQ(OnlyProblem("http:\n  max_connections: 10001\n").ToString(),
            "bad.yaml:2:20: http.max_connections: must be an integer from 1 to 10000, got `10001`");
}

TEST(LoadFromString, CountOnTheWrongKind) {
  Problem problem = OnlyProblem(R"(probes:
  - name: d
    kind: direct
    target: /dev/sda
    files: 10
)");
  EXPECT_EQ(problem.ToString(), "bad.yaml:5:5: probes[0].files: only applies to kind metadata");
  problem = OnlyProblem("probes:\n  - name: m\n    kind: memory\n    requests: 10\n");
  EXPECT_EQ(problem.ToString(), "bad.yaml:4:5: probes[0].requests: only applies to kind random");
}

TEST(LoadFromString, TimeoutMustExceedTimeBudget) {
  Problem problem = OnlyProblem(R"(probes:
  - name: mem
    kind: memory
    time_budget: 30s
)");
  EXPECT_EQ(problem.ToString(),
            "bad.yaml:4:18: probes[0].time_budget: timeout (30s) must be "
            "greater than time_budget (30s)");
  problem = OnlyProblem(R"(probes:
  - name: mem
    kind: memory
    timeout: 100ms
)");
  EXPECT_EQ(problem.ToString(),
            "bad.yaml:4:14: probes[0].timeout: timeout (100ms) must be "
            "greater than time_budget (100ms)");
}

TEST(LoadFromString, BadProbeNames) {
  const char* kCases[] = {"Sda", "sda buffered", "sda/1", "\"\"", "é"};
  for (const char* name : kCases) {
    std::vector<Problem> problems =
        ProblemsOf(std::string("probes:\n  - name: ") + name + "\n    kind: memory\n");
    ASSERT_EQ(problems.size(), 1u) << name << "\n" << Joined(problems);
    EXPECT_THAT(problems[0].ToString(), StartsWith("bad.yaml:2:11: probes[0].name: must ")) << name;
  }
  EXPECT_THAT(
      OnlyProblem("probes:\n  - name: " + std::string(65, 'a') + "\n    kind: memory\n").message,
      StartsWith("must be at most 64 characters"));
}

TEST(LoadFromString, DuplicateProbeNameNamesTheFirstDefinition) {
  Problem problem = OnlyProblem(R"(probes:
  - name: mem
    kind: memory
  - name: other
    kind: memory
  - kind: memory
    name: mem
)");
  EXPECT_EQ(problem.ToString(),
            "bad.yaml:7:11: probes[2].name: duplicate probe name `mem` (first "
            "defined at line 2, probes[0])");
}

TEST(LoadFromString, MissingNameAndKind) {
  std::vector<Problem> problems = ProblemsOf("probes:\n  - target: /dev/sda\n");
  ASSERT_EQ(problems.size(), 2u) << Joined(problems);
  EXPECT_THAT(problems[0].ToString(), StartsWith("bad.yaml:2:5: probes[0].name: missing"));
  EXPECT_THAT(problems[1].ToString(), StartsWith("bad.yaml:2:5: probes[0].kind: missing"));
}

TEST(LoadFromString, UnknownKind) {
  Problem problem = OnlyProblem("probes:\n  - name: s\n    kind: sequential\n    target: /x\n");
  EXPECT_EQ(problem.ToString(),
            "bad.yaml:3:11: probes[0].kind: must be one of "
            "cached|buffered|direct|random|metadata|memory, got `sequential`");
}

TEST(LoadFromString, ProbeOtherThanMemoryNeedsATarget) {
  Problem problem = OnlyProblem("probes:\n  - name: s\n    kind: buffered\n");
  EXPECT_EQ(problem.ToString(),
            "bad.yaml:2:5: probes[0].target: missing (a buffered probe needs "
            "a block device, regular file or directory)");
}

TEST(LoadFromString, MemoryProbeTakesNoTarget) {
  Problem problem = OnlyProblem("probes:\n  - name: m\n    kind: memory\n    target: /dev/sda\n");
  EXPECT_EQ(problem.ToString(),
            "bad.yaml:4:13: probes[0].target: a memory probe reads no file; remove `target`");
}

TEST(LoadFromString, PathsMustBeAbsolute) {
  EXPECT_EQ(OnlyProblem("probes:\n  - name: s\n    kind: direct\n    target: sda\n").ToString(),
            "bad.yaml:4:13: probes[0].target: must be an absolute path (starting with /), got "
            "`sda`");
  EXPECT_THAT(OnlyProblem("state_dir: state\n").ToString(),
              StartsWith("bad.yaml:1:12: state_dir: must be an absolute path"));
  EXPECT_THAT(OnlyProblem("proc_root: \"\"\n").ToString(),
              StartsWith("bad.yaml:1:12: proc_root: must be an absolute path"));
}

TEST(LoadFromString, ListenMustBeHostPort) {
  const char* kBad[] = {
      "localhost",    "127.0.0.1", ":9723",        "127.0.0.1:",    "127.0.0.1:65536",
      "host:port",    "::1:9723",  "[::1]9723",    "[::1",          "[]:9723",
      "[zz::1]:9723", "a b:1",     "127.0.0.1:-1", "1.2.3.4:123456"};
  for (const char* listen : kBad) {
    std::vector<Problem> problems = ProblemsOf(std::string("listen: \"") + listen + "\"\n");
    ASSERT_EQ(problems.size(), 1u) << listen;
    EXPECT_THAT(problems[0].ToString(), StartsWith("bad.yaml:1:9: listen: ")) << listen;
    EXPECT_THAT(problems[0].message, HasSubstr(std::string("got `") + listen + "`"));
  }
  const char* kGood[] = {"127.0.0.1:9723", "0.0.0.0:0",   "localhost:65535",     "[::1]:9723",
                         "[::]:80",        "[fe80::1]:1", "my-host.example:9723"};
  for (const char* listen : kGood) {
    EXPECT_EQ(LoadOk(std::string("listen: \"") + listen + "\"\n").listen, listen);
    EXPECT_EQ(CheckListen(listen), std::nullopt) << listen;
  }
}

TEST(LoadFromString, DbusChoiceOrAddress) {
  for (const char* good :
       {"auto", "system", "session", "none", "unix:path=/run/x", "tcp:host=localhost,port=1234"}) {
    EXPECT_EQ(LoadOk(std::string("dbus: \"") + good + "\"\n").dbus, good);
  }
  EXPECT_EQ(OnlyProblem("dbus: systen\n").ToString(),
            "bad.yaml:1:7: dbus: must be one of auto|system|session|none or a D-Bus address like "
            "unix:path=/run/dbus/system_bus_socket, got `systen`");
  EXPECT_THAT(OnlyProblem("dbus: /run/dbus/system_bus_socket\n").ToString(),
              StartsWith("bad.yaml:1:7: dbus: must be one of"));
  EXPECT_THAT(OnlyProblem("dbus: \"path=/x\"\n").ToString(),
              StartsWith("bad.yaml:1:7: dbus: must be one of"));
}

TEST(LoadFromString, LogLevel) {
  EXPECT_EQ(LoadOk("log_level: warn\n").log_level, "warn");
  EXPECT_EQ(OnlyProblem("log_level: verbose\n").ToString(),
            "bad.yaml:1:12: log_level: must be one of trace|debug|info|warn|error, got `verbose`");
  EXPECT_THAT(OnlyProblem("log_level: INFO\n").ToString(),
              StartsWith("bad.yaml:1:12: log_level: must be one of"));
}

TEST(LoadFromString, InvalidRegexes) {
  std::vector<Problem> problems = ProblemsOf(R"(collectors:
  vmstat:
    fields: "nr_(dirty"
  slabinfo:
    include: "dentry"
    exclude: "[z-a]"
)");
  ASSERT_EQ(problems.size(), 2u) << Joined(problems);
  EXPECT_THAT(problems[0].ToString(),
              StartsWith("bad.yaml:3:13: collectors.vmstat.fields: invalid regular expression"));
  EXPECT_THAT(problems[1].ToString(),
              StartsWith("bad.yaml:6:14: collectors.slabinfo.exclude: invalid regular expression"));
  EXPECT_THAT(
      OnlyProblem("collectors:\n  slabinfo: {include: \"" + std::string(2000, 'a') + "\"}\n")
          .ToString(),
      StartsWith("bad.yaml:2:23: collectors.slabinfo.include: regular expression is "
                 "longer than 1024"));
}

TEST(LoadFromString, NonScalarKey) {
  Problem problem = OnlyProblem("? [a, b]\n: 1\n");
  EXPECT_THAT(problem.ToString(), StartsWith("bad.yaml:1:3: keys must be plain names"));
}

TEST(LoadFromString, SyntaxErrorIsOneProblemWithItsPosition) {
  EXPECT_EQ(OnlyProblem("log_level: info\nlisten: a: b\n").ToString(),
            "bad.yaml:2:10: YAML syntax error: illegal map value");
  EXPECT_EQ(OnlyProblem("log_level: info\n  dbus: none\n").ToString(),
            "bad.yaml:2:7: YAML syntax error: illegal map value");
  EXPECT_EQ(OnlyProblem("dbus: *nowhere\n").ToString(),
            "bad.yaml:1:7: YAML syntax error: the referenced anchor is not defined");
}

TEST(LoadFromString, UnclosedFlowIsReportedOnTheLastLineNotPastIt) {
  // yaml-cpp marks the end of input (line 3 here); the problem points at the end of line 2.
  EXPECT_EQ(OnlyProblem("log_level: info\nhttp: {max_connections: 3\n\n").ToString(),
            "bad.yaml:2:26: YAML syntax error: end of map flow not found");
}

TEST(LoadFromString, TabIndentationGetsAHint) {
  EXPECT_EQ(OnlyProblem("collectors:\n\tmeminfo: true\n").ToString(),
            "bad.yaml:2:9: YAML syntax error: illegal map value (the line is indented with a tab; "
            "YAML allows only spaces)");
}

TEST(LoadFromString, SecondDocumentIsRefused) {
  Problem problem = OnlyProblem("log_level: info\n---\nlog_level: debug\n");
  EXPECT_THAT(problem.ToString(), StartsWith("bad.yaml:2:1: unexpected content after the first"));
  // yaml-cpp reads a lone `,` as an empty document followed by more; it must not pass as empty.
  EXPECT_FALSE(LoadFromString("\n,\n", kFile).has_value());
  // ... and a list followed by a map is not a list with the map silently dropped.
  EXPECT_FALSE(LoadFromString("- a\nb: 1\n", kFile).has_value());
}

TEST(LoadFromString, BinaryGarbageIsOneCleanProblem) {
  std::string text = "log_level: info\nab";
  text += '\0';
  text += "cd\n";
  Problem problem = OnlyProblem(text);
  EXPECT_EQ(problem.ToString(),
            "bad.yaml:2:3: not a text file: byte 0x00 at offset 18 (a config file must be UTF-8 "
            "text)");
  EXPECT_THAT(OnlyProblem("a: \xff\xfe\n").message, StartsWith("not a text file: byte 0xff"));
  EXPECT_THAT(OnlyProblem("a: \xc0\xaf\n").message, StartsWith("not a text file"));  // overlong
  EXPECT_EQ(LoadOk("# Grüße, ☃\nlog_level: info\n").log_level, "info");
}

TEST(LoadFromString, AcceptsByteOrderMarkAndCrlf) {
  EXPECT_EQ(LoadOk("\xEF\xBB\xBFlog_level: warn\n").log_level, "warn");
  Config config = LoadOk("log_level: warn\r\nprobes:\r\n  - name: m\r\n    kind: memory\r\n");
  EXPECT_EQ(config.log_level, "warn");
  ASSERT_EQ(config.probes.size(), 1u);
  EXPECT_EQ(config.probes[0].name, "m");
  // Positions stay right with CRLF line ends.
  EXPECT_EQ(OnlyProblem("log_level: warn\r\ndbus: nope\r\n").ToString(),
            "bad.yaml:2:7: dbus: must be one of auto|system|session|none or a D-Bus address like "
            "unix:path=/run/dbus/system_bus_socket, got `nope`");
}

TEST(LoadFromString, DeepNestingIsACleanProblem) {
  for (const std::string& text : {std::string(100000, '['), std::string(300000, '{'),
                                  "a: " + std::string(5000, '[') + std::string(5000, ']')}) {
    std::vector<Problem> problems = ProblemsOf(text);
    ASSERT_FALSE(problems.empty());
  }
}

TEST(LoadFromString, AliasCycleIsACleanProblem) {
  std::vector<Problem> problems = ProblemsOf("probes: &p [*p]\n");
  ASSERT_EQ(problems.size(), 1u) << Joined(problems);
  // The alias is the list itself, marked where its anchor stands.
  EXPECT_THAT(problems[0].ToString(), StartsWith("bad.yaml:1:9: probes[0]: expected a map"));
}

TEST(LoadFromString, OversizedTextIsOneProblem) {
  std::string text = "# padding\n";
  text.resize(kMaxConfigBytes + 1, '#');
  Problem problem = OnlyProblem(text);
  EXPECT_EQ(problem.line, 0);
  EXPECT_THAT(problem.ToString(), StartsWith("bad.yaml: file is larger than 1 MiB"));
}

TEST(LoadFromString, ProblemCountIsCapped) {
  std::string text;
  for (int i = 0; i < 500; ++i) text += "key" + std::to_string(i) + ": 1\n";
  std::vector<Problem> problems = ProblemsOf(text);
  ASSERT_EQ(problems.size(), 101u);
  EXPECT_EQ(problems.back().ToString(),
            "bad.yaml: 400 more problems not shown; fix the ones above first");
}

// ---- several problems at once -------------------------------------------------------------------

TEST(LoadFromString, CollectsEveryProblemInOnePassSortedByPosition) {
  std::vector<Problem> problems = ProblemsOf(R"(listen: localhost
log_level: loud
collectors:
  meminfo: maybe
  vmstat: {fields: "("}
http:
  max_connections: 0
probes:
  - name: Bad Name
    kind: buffered
    interval: soon
  - name: ok
    kind: memory
    target: /dev/sda
    size: -1
  - name: ok
    kind: turbo
extra: 1
)");
  std::vector<std::string> prefixes = {
      "bad.yaml:1:9: listen: ",
      "bad.yaml:2:12: log_level: ",
      "bad.yaml:4:12: collectors.meminfo: ",
      "bad.yaml:5:20: collectors.vmstat.fields: ",
      "bad.yaml:7:20: http.max_connections: ",
      "bad.yaml:9:5: probes[0].target: missing",
      "bad.yaml:9:11: probes[0].name: must match",
      "bad.yaml:11:15: probes[0].interval: ",
      "bad.yaml:14:13: probes[1].target: a memory probe",
      "bad.yaml:15:11: probes[1].size: must be greater than zero",
      "bad.yaml:16:11: probes[2].name: duplicate probe name `ok` (first defined at line 12",
      "bad.yaml:17:11: probes[2].kind: must be one of",
      "bad.yaml:18:1: extra: unknown key",
  };
  ASSERT_EQ(problems.size(), prefixes.size()) << Joined(problems);
  for (std::size_t i = 0; i < prefixes.size(); ++i) {
    EXPECT_THAT(problems[i].ToString(), StartsWith(prefixes[i])) << Joined(problems);
  }
}

// ---- files --------------------------------------------------------------------------------------

TEST(LoadFromFile, InstalledConfigLoadsCleanlyAndMatchesTheEmbeddedDefault) {
  const std::filesystem::path path = SourcePath("/../../config/iodrift.yaml");
  LoadResult result = LoadFromFile(path);
  ASSERT_TRUE(result.has_value()) << Joined(result.error());
  // Every documented default is the real default: the file is DefaultConfig with an explicit
  // state dir.
  EXPECT_EQ(*result, DefaultConfig("/var/lib/iodrift"));
}

TEST(LoadFromFile, MissingFileIsOneProblem) {
  LoadResult result = LoadFromFile("/nonexistent/iodrift.yaml");
  ASSERT_FALSE(result.has_value());
  ASSERT_EQ(result.error().size(), 1u);
  EXPECT_EQ(result.error()[0].ToString(),
            "/nonexistent/iodrift.yaml: cannot open: no such file or directory");
}

TEST(LoadFromFile, DirectoryIsOneProblem) {
  TempDir dir;
  LoadResult result = LoadFromFile(dir.path());
  ASSERT_FALSE(result.has_value());
  ASSERT_EQ(result.error().size(), 1u);
  EXPECT_THAT(result.error()[0].message, HasSubstr("directory"));
}

TEST(LoadFromFile, FifoWithoutWriterDoesNotHang) {
  TempDir dir;
  const std::filesystem::path fifo = dir.path() / "fifo.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer: open does not block (O_NONBLOCK) and the read sees end of file: an empty config.
  LoadResult result = LoadFromFile(fifo);
  EXPECT_TRUE(result.has_value());
}

TEST(LoadFromFile, TenMegabyteFileIsRefusedQuickly) {
  TempDir dir;
  const std::filesystem::path big = dir.path() / "big.yaml";
  {
    std::ofstream out(big, std::ios::binary);
    std::string line = "key: " + std::string(1018, 'x') + "\n";  // 1 KiB lines
    for (int i = 0; i < 10 * 1024; ++i) out << line;
  }
  ASSERT_EQ(std::filesystem::file_size(big), 10u * 1024 * 1024);
  const auto start = std::chrono::steady_clock::now();
  LoadResult result = LoadFromFile(big);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(result.has_value());
  ASSERT_EQ(result.error().size(), 1u);
  EXPECT_EQ(result.error()[0].ToString(),
            big.string() + ": file is larger than 1 MiB; is this really a config file?");
  EXPECT_LT(took, seconds(2));
}

TEST(LoadFromFile, ProblemsCarryThePath) {
  TempDir dir;
  const std::filesystem::path file = dir.path() / "x.yaml";
  std::ofstream(file) << "log_level: info\nlistn: x\n";
  LoadResult result = LoadFromFile(file);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error()[0].ToString(),
            file.string() + ":2:1: listn: unknown key (did you mean `listen`?)");
}

// Every file in tests/config/bad fails; a `# expect: LINE:COLUMN [KEY]` header names a problem it
// must produce. Files without a header (binary garbage) must still produce one.
TEST(ConfigBadCorpus, EveryFileProducesItsProblem) {
  const std::filesystem::path dir = SourcePath("/../config/bad");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 20u) << dir;
  const std::regex expect_line(R"(^# expect: (\d+):(\d+)(?: (\S+))?$)");
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    std::optional<std::string> expected_prefix;
    {
      std::ifstream in(file, std::ios::binary);
      std::string first_line;
      std::getline(in, first_line);
      std::smatch match;
      if (std::regex_match(first_line, match, expect_line)) {
        expected_prefix = file.string() + ":" + match[1].str() + ":" + match[2].str() + ": " +
                          (match[3].matched ? match[3].str() + ": " : std::string());
      }
    }
    LoadResult result = LoadFromFile(file);
    ASSERT_FALSE(result.has_value());
    ASSERT_FALSE(result.error().empty());
    const std::string all = Joined(result.error());
    for (const Problem& problem : result.error()) {
      EXPECT_EQ(problem.file, file.string());
      EXPECT_GT(problem.line, 0) << all;
      EXPECT_GT(problem.column, 0) << all;
      EXPECT_FALSE(problem.message.empty());
    }
    if (expected_prefix) {
      bool found = false;
      for (const Problem& problem : result.error()) {
        found = found || problem.ToString().starts_with(*expected_prefix);
      }
      EXPECT_TRUE(found) << "want a problem starting with " << *expected_prefix << "\ngot:\n"
                         << all;
    } else {
      EXPECT_EQ(file.filename(), "binary_garbage.yaml") << "corpus file without `# expect:`";
    }
  }
}

// ---- Problem, kinds, defaults -------------------------------------------------------------------

TEST(ConfigProblem, ToStringFormats) {
  EXPECT_EQ((Problem{"a.yaml", 4, 15, "probes[0].interval", "bad"}).ToString(),
            "a.yaml:4:15: probes[0].interval: bad");
  EXPECT_EQ((Problem{"a.yaml", 2, 1, "", "syntax"}).ToString(), "a.yaml:2:1: syntax");
  EXPECT_EQ((Problem{"a.yaml", 0, 0, "", "cannot open"}).ToString(), "a.yaml: cannot open");
}

TEST(ConfigProbeKind, NamesRoundTrip) {
  for (ProbeKind kind : {ProbeKind::kCached, ProbeKind::kBuffered, ProbeKind::kDirect,
                         ProbeKind::kRandom, ProbeKind::kMetadata, ProbeKind::kMemory}) {
    EXPECT_EQ(ParseProbeKind(ProbeKindName(kind)), kind);
  }
  EXPECT_EQ(ProbeKindName(ProbeKind::kBuffered), "buffered");
  EXPECT_EQ(ParseProbeKind("Buffered"), std::nullopt);
  EXPECT_EQ(ParseProbeKind(""), std::nullopt);
}

TEST(ConfigDefault, OneProbeOfEachKindInsideTheStateDir) {
  Config config = DefaultConfig("/tmp/st");
  EXPECT_EQ(config.state_dir, "/tmp/st");
  EXPECT_EQ(config.listen, "127.0.0.1:9723");
  EXPECT_EQ(config.dbus, "auto");
  EXPECT_EQ(config.collectors, CollectorsConfig{});
  ASSERT_EQ(config.probes.size(), 6u);
  const char* kNames[] = {"state-cached", "state-buffered", "state-direct",
                          "state-random", "state-metadata", "memory"};
  for (std::size_t i = 0; i < 6; ++i) {
    const ProbeSpec& probe = config.probes[i];
    EXPECT_EQ(probe.name, kNames[i]);
    EXPECT_EQ(probe.kind, static_cast<ProbeKind>(i));
    EXPECT_EQ(probe.interval, minutes(5));
    EXPECT_EQ(probe.size, 0u);
    EXPECT_EQ(probe.target, probe.kind == ProbeKind::kMemory ? "" : "/tmp/st/probe");
  }
  EXPECT_EQ(DefaultConfig("/tmp/st/").probes[0].target, "/tmp/st/probe");
}

// DefaultStateDir() of a non-root user with XDG_STATE_HOME and HOME set as given (nullptr =
// unset), computed in a child process so the test's own environment and uid stay untouched. When
// the test runs as root the child first becomes uid 65534 (nobody).
std::string StateDirAsUser(const char* xdg_state_home, const char* home) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    if (::geteuid() == 0 && ::setuid(65534) != 0) ::_exit(2);
    xdg_state_home ? ::setenv("XDG_STATE_HOME", xdg_state_home, 1) : ::unsetenv("XDG_STATE_HOME");
    home ? ::setenv("HOME", home, 1) : ::unsetenv("HOME");
    const std::string dir = DefaultStateDir();
    const bool ok = ::write(fds[1], dir.data(), dir.size()) == static_cast<ssize_t>(dir.size());
    ::_exit(ok ? 0 : 3);
  }
  ::close(fds[1]);
  std::string out;
  char buffer[512];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0) out.append(buffer, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "child failed";
  return out;
}

TEST(ConfigDefault, StateDirIsVarLibForRoot) {
  if (::geteuid() != 0) IODRIFT_SKIP_GUARANTEED("needs root");
  EXPECT_EQ(DefaultStateDir(), "/var/lib/iodrift");
}

TEST(ConfigDefault, StateDirFollowsXdgThenHomeForOtherUsers) {
  EXPECT_EQ(StateDirAsUser("/xdg/state", "/home/op"), "/xdg/state/iodrift");
  // The XDG spec says a relative XDG_STATE_HOME is invalid and must be ignored.
  EXPECT_EQ(StateDirAsUser("relative/ignored", "/home/op"), "/home/op/.local/state/iodrift");
  EXPECT_EQ(StateDirAsUser(nullptr, "/home/op"), "/home/op/.local/state/iodrift");
  EXPECT_EQ(StateDirAsUser("", "/home/op/"), "/home/op/.local/state/iodrift");
  // Without HOME the passwd entry decides; any absolute path will do here.
  EXPECT_THAT(StateDirAsUser(nullptr, nullptr), StartsWith("/"));
}

// ---- duration and size tables -------------------------------------------------------------------

TEST(ParseDuration, AcceptsUnitsAndCombinations) {
  struct Case {
    const char* text;
    milliseconds want;
  };
  const Case kCases[] = {
      {"500ms", milliseconds(500)},
      {"1ms", milliseconds(1)},
      {"30s", seconds(30)},
      {"10m", minutes(10)},
      {"1h", hours(1)},
      {"1d", hours(24)},
      {"1m30s", seconds(90)},
      {"1h30m", minutes(90)},
      {"1d2h3m4s5ms", milliseconds(93784005)},
      {"1.5s", milliseconds(1500)},
      {"0.5h", minutes(30)},
      {"1.0005s", milliseconds(1000)},  // rounded down to whole milliseconds
      {"30d", hours(720)},
      {"720h", hours(720)},
      {"007s", seconds(7)},
  };
  for (const Case& c : kCases) {
    EXPECT_EQ(ParseDuration(c.text), std::optional<milliseconds>(c.want)) << c.text;
  }
}

TEST(ParseDuration, RejectsJunkZeroNegativeAndTooLong) {
  const char* kCases[] = {"",     "0",       "0s",         "0ms",   "-5s",
                          "+5s",  "30",      "s",          "5 s",   " 5s",
                          "5s ",  "5S",      "5sec",       "5min",  "1.s",
                          ".5s",  "1.2.3s",  "1.1234567s", "30s1m", "5s5s",
                          "1m1h", "31d",     "30d1ms",     "721h",  "99999999999999999999999s",
                          "1e3s", "0.0001s", "5us",        "1w",    "abc",
                          "5s\n"};
  for (const char* text : kCases) {
    EXPECT_EQ(ParseDuration(text), std::nullopt) << testing::PrintToString(std::string(text));
  }
}

TEST(ParseSize, AcceptsBinaryAndDecimalUnits) {
  struct Case {
    const char* text;
    std::uint64_t want;
  };
  const Case kCases[] = {
      {"4096", 4096},
      {"1", 1},
      {"4096B", 4096},
      {"4KiB", 4096},
      {"64MiB", 64ULL << 20},
      {"1GiB", 1ULL << 30},
      {"1.5GiB", 1610612736},
      {"2TiB", 2ULL << 40},
      {"1kB", 1000},
      {"1KB", 1000},
      {"100MB", 100000000},
      {"2GB", 2000000000},
      {"1TB", 1000000000000},
      {"0.5KiB", 512},
      {"1.1KiB", 1126},  // rounded down to whole bytes
      {"18446744073709551615", UINT64_MAX},
      {"16777215TiB", 16777215ULL << 40},
  };
  for (const Case& c : kCases) {
    EXPECT_EQ(ParseSize(c.text), std::optional<std::uint64_t>(c.want)) << c.text;
  }
}

TEST(ParseSize, RejectsJunkZeroNegativeAndOverflow) {
  const char* kCases[] = {"",
                          "0",
                          "0KiB",
                          "-1",
                          "-4KiB",
                          "+4KiB",
                          "4K",
                          "4k",
                          "4kib",
                          "4 KiB",
                          "4KiB ",
                          "KiB",
                          "1.5",
                          "1.5B",
                          "0.0000001GiB",
                          "1.KiB",
                          ".5KiB",
                          "4PiB",
                          "4Mb",
                          "abc",
                          "0x1000",
                          "1e6",
                          "18446744073709551616",
                          "16777216TiB",
                          "99999999999999999999GB",
                          "0.0001B"};
  for (const char* text : kCases) {
    EXPECT_EQ(ParseSize(text), std::nullopt) << text;
  }
}

}  // namespace
}  // namespace iodrift::config

namespace iodrift::config {
namespace {

TEST(LoadFromString, ReadsTheSchedulerSection) {
  auto loaded = LoadFromString(
      "scheduler:\n  max_concurrent: 2\n  io_class: idle\n  io_level: 3\n"
      "  nice: 0\n",
      "s.yaml");
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->scheduler.max_concurrent, 2u);
  EXPECT_EQ(loaded->scheduler.io_class, "idle");
  EXPECT_EQ(loaded->scheduler.io_level, 3);
  EXPECT_EQ(loaded->scheduler.nice, 0);
  EXPECT_EQ(LoadFromString("", "e.yaml")->scheduler, SchedulerConfig{});
}

TEST(LoadFromString, RejectsBadSchedulerValuesNamingLineAndKey) {
  auto loaded = LoadFromString(
      "scheduler:\n  max_concurrent: 0\n  io_class: realtime\n  io_level: 8\n  nice: -5\n",
      "s.yaml");
  ASSERT_FALSE(loaded);
  std::string all;
  for (const auto& p : loaded.error()) all += p.ToString() + "\n";
  EXPECT_EQ(loaded.error().size(), 4u) << all;
  EXPECT_NE(all.find("s.yaml:2:19: scheduler.max_concurrent:"), std::string::npos) << all;
  EXPECT_NE(all.find("s.yaml:3:13: scheduler.io_class: must be one of best-effort|idle|none"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("s.yaml:4:13: scheduler.io_level:"), std::string::npos) << all;
  EXPECT_NE(all.find("s.yaml:5:9: scheduler.nice:"), std::string::npos) << all;
}

// ---- http: TLS and basic auth
// --------------------------------------------------------------------

constexpr const char* kBcrypt = "$2y$10$ZpUdDe5bPu/d8/Nk3wSCOuRRp9bWlEb1/Cx9Kqp7wsr0pTp1OdkF6";

TEST(LoadFromString, HttpTlsAndBasicAuthLoad) {
  TempDir dir;
  const auto cert = dir.path() / "tls.crt";
  const auto key = dir.path() / "tls.key";
  std::ofstream(cert) << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  std::ofstream(key) << "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
  Config config =
      LoadOk("http:\n  tls_cert_file: " + cert.string() + "\n  tls_key_file: " + key.string() +
             "\n  basic_auth_users:\n    alice: " + kBcrypt +
             "\n    bob: \"$2b$04$Y3NrnIAJbzElkdgBnXyqAuBouNuD4CCzhTbEaAwPXS1KbekEGECYy\"\n");
  EXPECT_EQ(config.http.tls_cert_file, cert.string());
  EXPECT_EQ(config.http.tls_key_file, key.string());
  ASSERT_EQ(config.http.basic_auth_users.size(), 2u);
  EXPECT_EQ(config.http.basic_auth_users.at("alice"), kBcrypt);
  // Omitted or empty: TLS and auth off.
  EXPECT_TRUE(LoadOk("http:\n  basic_auth_users:\n").http.basic_auth_users.empty());
  EXPECT_TRUE(LoadOk("http:\n  basic_auth_users: {}\n").http.basic_auth_users.empty());
  EXPECT_TRUE(LoadOk("").http.tls_cert_file.empty());
}

TEST(LoadFromString, TlsFilesMustBeReadablePemOfTheRightKind) {
  TempDir dir;
  const auto cert = dir.path() / "tls.crt";
  const auto key = dir.path() / "tls.key";
  const auto encrypted = dir.path() / "enc.key";
  std::ofstream(cert) << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  std::ofstream(key) << "-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n";
  std::ofstream(encrypted) << "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n"
                              "-----END ENCRYPTED PRIVATE KEY-----\n";
  auto doc = [](const std::filesystem::path& c, const std::filesystem::path& k) {
    return "http:\n  tls_cert_file: " + c.string() + "\n  tls_key_file: " + k.string() + "\n";
  };
  LoadOk(doc(cert, key));
  // Swapped: the key file holds no certificate, the certificate file no key.
  auto swapped = ProblemsOf(doc(key, cert));
  ASSERT_EQ(swapped.size(), 2u) << Joined(swapped);
  EXPECT_THAT(swapped[0].ToString(), StartsWith("bad.yaml:2:18: http.tls_cert_file: not a PEM "
                                                "certificate"));
  EXPECT_THAT(swapped[1].ToString(), StartsWith("bad.yaml:3:17: http.tls_key_file: not a PEM "
                                                "private key"));
  EXPECT_THAT(OnlyProblem(doc(cert, encrypted)).ToString(),
              HasSubstr("http.tls_key_file: the private key in"));
  EXPECT_EQ(OnlyProblem(doc(cert, dir.path() / "none.key")).ToString(),
            "bad.yaml:3:17: http.tls_key_file: cannot read `" + (dir.path() / "none.key").string() +
                "`: no such file or directory");
  EXPECT_THAT(OnlyProblem(doc(cert, dir.path())).ToString(),
              HasSubstr("http.tls_key_file: `" + dir.path().string() + "` is not a regular file"));
  if (::geteuid() != 0) {  // root reads everything
    std::filesystem::permissions(key, std::filesystem::perms::none);
    EXPECT_THAT(OnlyProblem(doc(cert, key)).ToString(), HasSubstr("permission denied"));
  }
  // Both or neither.
  EXPECT_EQ(OnlyProblem("http:\n  tls_cert_file: " + cert.string() + "\n").ToString(),
            "bad.yaml:2:3: http.tls_key_file: missing (tls_cert_file needs tls_key_file, the "
            "certificate's private key)");
  EXPECT_EQ(OnlyProblem("http:\n  tls_key_file: " + key.string() + "\n").ToString(),
            "bad.yaml:2:3: http.tls_cert_file: missing (tls_key_file needs tls_cert_file, the "
            "certificate)");
}

TEST(LoadFromString, BasicAuthNeedsBcryptHashesAndNeverEchoesThem) {
  const Problem plain = OnlyProblem("http:\n  basic_auth_users:\n    alice: hunter2\n");
  EXPECT_THAT(plain.ToString(), StartsWith("bad.yaml:3:12: http.basic_auth_users.alice: must be a "
                                           "bcrypt hash"));
  EXPECT_THAT(plain.ToString(), ::testing::Not(HasSubstr("hunter2")));
  EXPECT_THAT(
      OnlyProblem("http:\n  basic_auth_users:\n    bob: \"$1$saltsalt$qjXMvbEw8oaL.CzflDugX/\"\n")
          .ToString(),
      StartsWith("bad.yaml:3:10: http.basic_auth_users.bob: must be a bcrypt hash"));
  EXPECT_THAT(OnlyProblem("http:\n  basic_auth_users:\n    bob:\n").ToString(),
              StartsWith("bad.yaml:3:5: http.basic_auth_users.bob: has no value"));
  EXPECT_THAT(OnlyProblem("http:\n  basic_auth_users: alice\n").ToString(),
              StartsWith("bad.yaml:2:21: http.basic_auth_users: expected a map of user: bcrypt "
                         "hash, got `alice`"));
  EXPECT_THAT(OnlyProblem(std::string("http:\n  basic_auth_users:\n    \"a:b\": ") + kBcrypt + "\n")
                  .ToString(),
              StartsWith("bad.yaml:3:5: http.basic_auth_users: user name `a:b` must be"));
  EXPECT_THAT(OnlyProblem(std::string("http:\n  basic_auth_users:\n    x: ") + kBcrypt +
                          "\n    x: " + kBcrypt + "\n")
                  .ToString(),
              StartsWith("bad.yaml:4:5: http.basic_auth_users.x: duplicate user"));
}

TEST(CheckBcryptHash, AcceptsTheThreeBcryptPrefixesOnly) {
  EXPECT_EQ(CheckBcryptHash(kBcrypt), std::nullopt);
  std::string h = kBcrypt;
  for (const char* prefix : {"$2a$", "$2b$", "$2y$"}) {
    EXPECT_EQ(CheckBcryptHash(prefix + h.substr(4)), std::nullopt) << prefix;
  }
  EXPECT_NE(CheckBcryptHash("$2x$" + h.substr(4)), std::nullopt);
  EXPECT_NE(CheckBcryptHash("$2$" + h.substr(4)), std::nullopt);
  EXPECT_NE(CheckBcryptHash(h.substr(0, 59)), std::nullopt);
  EXPECT_NE(CheckBcryptHash(h + "A"), std::nullopt);
  EXPECT_NE(CheckBcryptHash("$2y$03$" + h.substr(7)), std::nullopt);
  EXPECT_NE(CheckBcryptHash("$2y$1x$" + h.substr(7)), std::nullopt);
  EXPECT_NE(CheckBcryptHash(h.substr(0, 59) + "!"), std::nullopt);
  EXPECT_NE(CheckBcryptHash(""), std::nullopt);
}

}  // namespace
}  // namespace iodrift::config
