// The verdict is decided once, when a run is published (ProbeStates stores it in the probe's
// state, probe_states.h "Verdict"), and every output shows what was stored: /api/v1/probes,
// iodrift_probe_verdict, the status page and the explain text. A run of the twin published later
// decides the stored verdict again (verdict.h rule 6).
#include <algorithm>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "collectors/analysis/explain.h"
#include "collectors/analysis/probe_states.h"
#include "collectors/analysis/verdict.h"
#include "daemon/page_format.h"
#include "daemon/probes_api.h"
#include "daemon/status_page.h"
#include "daemon/verdict_metrics.h"
#include "tests/analysis/states_test_util.h"

namespace iodrift::daemon {
namespace {

using analysis::Cause;
using probes::ProbeKind;
using probes::ProbeResult;
using probes::testing::LoopRun;

const analysis::ProbeState& Named(const analysis::ProbeSnapshot& all, const std::string& name) {
  const auto it =
      std::find_if(all.begin(), all.end(), [&](const auto& s) { return s->spec.name == name; });
  EXPECT_NE(it, all.end()) << name;
  return **it;
}

// A buffered probe "b" and its direct twin "d" on one device, each with a baseline of one run;
// then "b" at 1 % of its baseline for as many runs as a cause needs, all of the added time block
// I/O wait. The twin's last run is from before: the stored verdict waits for a twin run.
class StoredVerdict : public ::testing::Test {
 protected:
  void SetUp() override {
    probes::testing::DefineAndRecord(store_,
                                     LoopRun("b", ProbeKind::kBuffered, 0, 0.5, 0.40, 0.30));
    probes::testing::DefineAndRecord(store_, LoopRun("d", ProbeKind::kDirect, 0, 0.4, 0.90, 0.05));
    for (std::size_t i = 0; i < analysis::kSustainedRuns; ++i) {
      const ProbeResult slow = LoopRun("b", ProbeKind::kBuffered, 1000 + 100.0 * i, 0.005, 0.99);
      probes::testing::DefineAndRecord(store_, slow);
      slow_end_ = slow.start_time_seconds + slow.duration_seconds;
    }
  }
  // The direct twin's follow-up run, right after the last slow run, slowed as well (2 %).
  ProbeResult FollowUp() const {
    return LoopRun("d", ProbeKind::kDirect, slow_end_ + 0.01, 0.008, 0.99);
  }

  analysis::ProbeStates store_{1};
  double slow_end_ = 0;
};

TEST_F(StoredVerdict, ATwinRunPublishedLaterDecidesTheProbesStoredVerdict) {
  auto snapshot = store_.Snapshot();
  const analysis::Verdict waiting = Named(*snapshot, "b").verdict;
  EXPECT_EQ(waiting.cause, Cause::kUndetermined) << waiting.line;
  EXPECT_TRUE(waiting.wants_twin_run) << waiting.line;
  EXPECT_EQ(Named(*snapshot, "b").twin, "d");

  // Only the twin runs: the buffered probe's stored verdict changes with the twin's run.
  ASSERT_TRUE(probes::testing::DefineAndRecord(store_, FollowUp()));
  snapshot = store_.Snapshot();
  const analysis::Verdict decided = Named(*snapshot, "b").verdict;
  EXPECT_EQ(decided.cause, Cause::kDevice) << decided.line;
  EXPECT_FALSE(decided.wants_twin_run);
  EXPECT_NE(decided.line.find("direct twin at 2 % of its baseline"), std::string::npos)
      << decided.line;
  // In a published snapshot every stored verdict is the one its state and twin give.
  for (const auto& state : *snapshot) {
    EXPECT_EQ(state->verdict, analysis::VerdictOf(*state, analysis::FindTwin(*snapshot, *state)))
        << state->spec.name << ": " << state->verdict.line;
  }
}

TEST_F(StoredVerdict, AReloadThatRemovesTheTwinDecidesTheStoredVerdict) {
  ASSERT_TRUE(Named(*store_.Snapshot(), "b").verdict.wants_twin_run);
  store_.Define({Named(*store_.Snapshot(), "b").spec});  // "d" is no longer configured
  const analysis::ProbeState& b = Named(*store_.Snapshot(), "b");
  EXPECT_EQ(b.verdict.cause, Cause::kDevice) << b.verdict.line;  // no twin: not waited for
  EXPECT_EQ(b.twin, "");
}

TEST_F(StoredVerdict, EveryOutputShowsTheStoredVerdictNotOneDecidedAgain) {
  // The published snapshot with the twin's follow-up run put in by hand, never published: the
  // buffered probe's verdict decided again from it would be `device`; the stored one waits.
  auto snapshot = std::make_shared<analysis::ProbeSnapshot>(*store_.Snapshot());
  for (auto& state : *snapshot) {
    if (state->spec.name != "d") continue;
    auto twin = std::make_shared<analysis::ProbeState>(*state);
    twin->last = FollowUp();
    twin->last.generation = twin->generation;
    twin->baseline_ratio = 0.02;
    state = std::move(twin);
  }
  const analysis::ProbeState& b = Named(*snapshot, "b");
  ASSERT_EQ(analysis::VerdictOf(b, analysis::FindTwin(*snapshot, b)).cause, Cause::kDevice);
  const std::string stored = b.verdict.line;
  ASSERT_EQ(b.verdict.cause, Cause::kUndetermined) << stored;
  ASSERT_NE(stored.find("cannot be told apart"), std::string::npos) << stored;

  // /api/v1/probes
  const std::string json = ProbesApiJson(std::nullopt, std::nullopt, 240, *snapshot);
  EXPECT_NE(json.find(R"("cause":"undetermined","verdict":"undetermined","verdict_text":")" +
                      stored + "\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("explain":")" + stored + "\\n"), std::string::npos) << json;
  EXPECT_EQ(json.find("Verdict: device"), std::string::npos) << json;

  // iodrift_probe_verdict
  std::vector<prometheus::MetricFamily> families;
  AppendVerdictFamily(*snapshot, families);
  ASSERT_EQ(families.size(), 1u);
  for (const auto& m : families[0].metric) {
    for (const auto& label : m.label) {
      if (label.name == "cause") {
        EXPECT_EQ(label.value, "undetermined");
      }
    }
  }

  // The status page and the explain text (also D-Bus Explain's).
  StatusPageInput in;
  in.probes = snapshot;
  const std::string page = RenderStatusPage(in);
  EXPECT_NE(page.find(HtmlEscape(stored)), std::string::npos);
  EXPECT_EQ(page.find("Verdict: device"), std::string::npos);
  EXPECT_EQ(analysis::ExplainProbe(b, b.window).rfind(stored + "\n", 0), 0u);
}

}  // namespace
}  // namespace iodrift::daemon
