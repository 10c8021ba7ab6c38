#include "daemon/probes_api.h"

#include <cctype>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "collectors/analysis/verdict.h"
#include "daemon/json_writer.h"
#include "daemon/probe_report.h"
#include "tests/analysis/states_test_util.h"

namespace iodrift::daemon {
namespace {

// A strict RFC 8259 syntax check (no duplicate-key or number-range checks): enough to prove the
// spliced document is one valid JSON value.
class JsonChecker {
 public:
  explicit JsonChecker(std::string_view s) : s_(s) {}
  bool Valid() {
    Ws();
    if (!Value()) return false;
    Ws();
    return i_ == s_.size();
  }

 private:
  void Ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(char c) {
    Ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  bool String() {
    if (!Eat('"')) return false;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (static_cast<unsigned char>(s_[i_]) < 0x20) return false;
      if (s_[i_] == '\\') ++i_;
      ++i_;
    }
    return i_ < s_.size() && s_[i_++] == '"';
  }
  bool Number() {
    std::size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' ||
                              s_[i_] == 'e' || s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-')) {
      ++i_;
    }
    return i_ > start;
  }
  bool Value() {
    Ws();
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '{') {
      ++i_;
      if (Eat('}')) return true;
      do {
        Ws();
        if (!String() || !Eat(':') || !Value()) return false;
      } while (Eat(','));
      return Eat('}');
    }
    if (c == '[') {
      ++i_;
      if (Eat(']')) return true;
      do {
        if (!Value()) return false;
      } while (Eat(','));
      return Eat(']');
    }
    if (c == '"') return String();
    if (c == 't') return Literal("true");
    if (c == 'f') return Literal("false");
    if (c == 'n') return Literal("null");
    return Number();
  }
  std::string_view s_;
  std::size_t i_ = 0;
};

analysis::ProbeState RandomRecord() {
  analysis::ProbeState rec;
  probes::ProbeResult& r = rec.last;
  r.name = "disk-random";
  r.kind = probes::ProbeKind::kRandom;
  r.target = "/dev/\"vdb\"";
  r.outcome = probes::Outcome::kOk;
  r.start_time_seconds = 1000;
  r.ops_per_second = {{"read", 1000}};
  r.context = {{"MemFree", 4096}};
  rec.last_figure = 1000;
  rec.baseline = 2000;
  rec.baseline_ratio = 0.5;
  rec.worst_ratio = 0.4;
  rec.uptime_at_worst = 77;
  rec.runs = {{probes::Outcome::kOk, 3}, {probes::Outcome::kTimeout, 1}};
  return rec;
}

// RandomRecord with `n` history points, one second apart from t = 1000.
analysis::ProbeState WithHistory(std::size_t n) {
  analysis::ProbeState rec = RandomRecord();
  for (std::size_t i = 0; i < n; ++i) {
    probes::ProbeResult r = rec.last;
    r.start_time_seconds = 1000 + static_cast<double>(i);
    r.uptime_seconds = 10 + static_cast<double>(i);
    rec.history = rec.history.Append(
        analysis::MakeHistoryPoint(r, 2000.0, std::make_shared<const std::string>("boot-1")), 240);
  }
  return rec;
}

// One state, its verdict stored as ProbeStates stores it.
analysis::ProbeSnapshot Snap(analysis::ProbeState state) {
  return probes::testing::WithStoredVerdicts(
      {std::make_shared<const analysis::ProbeState>(std::move(state))});
}

TEST(ProbesApiJson, HistoryPointsSayWhetherTheyAreInTheDriftWindow) {
  analysis::ProbeState rec = RandomRecord();
  probes::ProbeResult suspect = rec.last;
  suspect.suspect = {"io_pressure"};  // kept out of the window behind the correlations
  rec.history = rec.history.Append(analysis::MakeHistoryPoint(rec.last, 2000.0, nullptr), 240);
  rec.history = rec.history.Append(analysis::MakeHistoryPoint(suspect, 2000.0, nullptr), 240);
  const std::string json = ProbesApiJson(std::nullopt, std::nullopt, 240, Snap(rec));
  const auto first = json.find(R"("drift_window":true)");
  ASSERT_NE(first, std::string::npos) << json;
  EXPECT_NE(json.find(R"("drift_window":false)", first), std::string::npos) << json;
}

TEST(ProbesApiJson, IsValidJsonWithTheHeaderFirst) {
  const std::string json = ProbesApiJson(std::string("b"), 12.5, 240, Snap(WithHistory(3)));
  EXPECT_TRUE(JsonChecker(json).Valid()) << json;
  EXPECT_EQ(
      json.rfind(
          R"({"boot_id":"b","uptime_seconds":12.5,"history_runs":240,"probes":[{"name":"disk-random",)",
          0),
      0u)
      << json;
  EXPECT_EQ(json.back(), '\n');
}

TEST(ProbesApiJson, HasEveryFieldOfOnceJsonThenBaselineRatioAndHistory) {
  const analysis::ProbeState rec = WithHistory(2);
  JsonWriter once;
  WriteProbeResultJson(once, rec.last);
  std::string fields = once.str();
  fields.pop_back();  // the closing brace: the API's object continues after these fields
  const std::string json = ProbesApiJson(std::nullopt, std::nullopt, 240, Snap(rec));
  EXPECT_NE(
      json.find(
          fields +
          R"(,"figure":1000,"figure_unit":"ops/s","baseline":2000,"ratio":0.5,"worst_ratio":0.4,"uptime_at_worst":77,)"),
      std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("runs":{"ok":3,"error":0,"timeout":1,"skipped":0})"), std::string::npos);
  EXPECT_NE(
      json.find(
          R"("history":[{"time_seconds":1000,"boot_id":"boot-1","uptime_seconds":10,"result":"ok","figure":1000,"baseline":2000,"ratio":0.5,"drift_window":true,"features":{"uptime_seconds":10,"mem_free_bytes":4096,"cached_bytes":null,)"),
      std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("time_seconds":1001,)"), std::string::npos);
  EXPECT_EQ(json.find(R"("time_seconds":1002,)"), std::string::npos);
  EXPECT_NE(json.find(R"({"boot_id":null,"uptime_seconds":null,)"), std::string::npos);
  EXPECT_TRUE(JsonChecker(json).Valid()) << json;
}

// The verdict's cause is a field of its own (`cause`; `verdict` the same value, its first name),
// next to the verdict line, and the line names the same cause.
TEST(ProbesApiJson, CarriesTheVerdictsCauseAsAField) {
  const analysis::ProbeState rec = WithHistory(2);
  const analysis::ProbeSnapshot snap = Snap(rec);
  const analysis::Verdict verdict =
      analysis::VerdictOf(*snap[0], analysis::FindTwin(snap, *snap[0]));
  const std::string cause(analysis::CauseName(verdict.cause));
  const std::string json = ProbesApiJson(std::nullopt, std::nullopt, 240, snap);
  EXPECT_NE(json.find(R"("cause":")" + cause + R"(","verdict":")" + cause +
                      R"(","verdict_text":")" + verdict.line + "\""),
            std::string::npos)
      << json;
  EXPECT_EQ(verdict.line.rfind("Verdict: " + cause + ": ", 0), 0u) << verdict.line;
}

TEST(ProbesApiJson, NoProbesIsAnEmptyArray) {
  const std::string json = ProbesApiJson(std::nullopt, 1.0, 2, {});
  EXPECT_EQ(json, "{\"boot_id\":null,\"uptime_seconds\":1,\"history_runs\":2,\"probes\":[]}\n");
}

TEST(ProbesApiJson, NoHistoryGivesAnEmptyHistoryAndAProbeThatNeverRanIsLeftOut) {
  analysis::ProbeState never;
  never.spec.name = "never";
  never.last.name = "never";
  analysis::ProbeSnapshot states = Snap(RandomRecord());
  states.push_back(std::make_shared<const analysis::ProbeState>(never));
  const std::string json = ProbesApiJson(std::nullopt, std::nullopt, 240, states);
  EXPECT_NE(json.find(R"("history":[]})"), std::string::npos) << json;
  EXPECT_EQ(json.find("never"), std::string::npos) << json;
  EXPECT_TRUE(JsonChecker(json).Valid());
}

TEST(ProbesApiJson, LastPointsKeepsOnlyTheNewestHistory) {
  const auto json = [](std::optional<std::size_t> last) {
    return ProbesApiJson(std::nullopt, std::nullopt, 240, Snap(WithHistory(5)), last);
  };
  const std::string two = json(2);
  EXPECT_TRUE(JsonChecker(two).Valid()) << two;
  EXPECT_EQ(two.find(R"("time_seconds":1002,)"), std::string::npos) << two;
  EXPECT_NE(two.find(R"("history":[{"time_seconds":1003,)"), std::string::npos) << two;
  EXPECT_NE(two.find(R"("time_seconds":1004,)"), std::string::npos) << two;
  EXPECT_NE(json(0).find(R"("history":[]})"), std::string::npos);
  EXPECT_EQ(json(5), json(std::nullopt));
  EXPECT_EQ(json(99), json(std::nullopt));  // more than the ring holds: all of it
}

TEST(ParseRunsArgument, AcceptsWholeNumbersAndNamesWhatIsWrong) {
  EXPECT_EQ(ParseRunsArgument("0"), 0u);
  EXPECT_EQ(ParseRunsArgument("1000000"), 1000000u);
  for (const char* bad : {"", "-1", "1e3", "10x", " 1", "1000001", "99999999999999999999999"}) {
    auto parsed = ParseRunsArgument(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(
        parsed.error().message.rfind("runs: expected a whole number from 0 to 1000000, got \"", 0),
        0u)
        << parsed.error().message;
  }
}

TEST(JsonCheckerSelfTest, RejectsBrokenDocuments) {
  EXPECT_TRUE(JsonChecker(R"({"a":[1,2,{"b":null}],"c":"x"})").Valid());
  EXPECT_FALSE(JsonChecker(R"({"a":1,})").Valid());
  EXPECT_FALSE(JsonChecker(R"({"a":1}})").Valid());
  EXPECT_FALSE(JsonChecker(R"({"a" 1})").Valid());
}

}  // namespace
}  // namespace iodrift::daemon
