// PreparedProbeFamilies (daemon/probe_metrics.h): the probe families' text is made once per
// probe-state snapshot and copied on scrapes. Each event that changes what /metrics shows of a
// probe — its run, its twin's run (the page-cache tax), a reload, a recorded recovery experiment
// or experiment run — must give new text equal to a fresh rendering, and scrapes in between must
// not make it again (the stale-cache bug class, and the cost the preparing is there to save).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/analysis/probe_states.h"
#include "daemon/exposition.h"
#include "daemon/probe_metrics.h"
#include "tests/analysis/states_test_util.h"

namespace iodrift::daemon {
namespace {

using probes::ProbeKind;
using probes::ProbeResult;

ProbeResult Sequential(const std::string& name, ProbeKind kind, double bps) {
  ProbeResult r;
  r.name = name;
  r.kind = kind;
  r.target = "/srv/disk/probe";
  r.outcome = probes::Outcome::kOk;
  r.spec_size = 64ull << 20;
  r.bytes = 64ull << 20;
  r.duration_seconds = 0.5;
  r.throughput_bytes_per_second = bps;
  return r;
}

// What a scrape without preparing would show for the store's current snapshot.
std::string Fresh(const analysis::ProbeStates& store) {
  std::vector<prometheus::MetricFamily> families;
  AppendProbeFamilies(*store.Snapshot(), families);
  std::string text;
  WriteExposition(families, text);
  return text;
}

std::string Scrape(PreparedProbeFamilies& prepared, const analysis::ProbeStates& store) {
  std::string text;
  prepared.AppendText(store.Snapshot(), text);
  return text;
}

// One event: the scraped text must be new, equal to a fresh rendering, made exactly once, and
// stay the same bytes over further scrapes without being made again.
void ExpectRebuiltOnce(PreparedProbeFamilies& prepared, const analysis::ProbeStates& store,
                       std::string& last, const char* event) {
  SCOPED_TRACE(event);
  const auto renders = prepared.renders();
  const std::string text = Scrape(prepared, store);
  EXPECT_NE(text, last) << "the text did not change";
  EXPECT_EQ(text, Fresh(store));
  EXPECT_EQ(prepared.renders(), renders + 1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Scrape(prepared, store), text);
  EXPECT_EQ(prepared.renders(), renders + 1) << "scrapes without a change made the text again";
  last = text;
}

TEST(PreparedProbeFamilies, RebuiltExactlyOnEveryStateChange) {
  analysis::ProbeStates store;
  PreparedProbeFamilies prepared;
  std::string last = Scrape(prepared, store);
  EXPECT_EQ(last, "");  // no probe ran: no families

  // A run.
  probes::testing::DefineAndRecord(store, Sequential("buf", ProbeKind::kBuffered, 200e6));
  ExpectRebuiltOnce(prepared, store, last, "buffered run");
  EXPECT_EQ(last.find("iodrift_page_cache_tax_ratio"), std::string::npos);

  // Its twin's run: the buffered probe's figures are unchanged, the tax appears.
  probes::testing::DefineAndRecord(store, Sequential("dir", ProbeKind::kDirect, 400e6));
  ExpectRebuiltOnce(prepared, store, last, "direct twin run");
  EXPECT_NE(last.find("iodrift_page_cache_tax_ratio{target=\"/srv/disk/probe\"} 0.5"),
            std::string::npos);
  // The twin again, faster: only the twin-derived figure (and the twin's own) move.
  probes::testing::DefineAndRecord(store, Sequential("dir", ProbeKind::kDirect, 800e6));
  ExpectRebuiltOnce(prepared, store, last, "direct twin second run");
  EXPECT_NE(last.find("iodrift_page_cache_tax_ratio{target=\"/srv/disk/probe\"} 0.75"),
            std::string::npos);

  // A reload that changes the interval of one probe (its state is kept, the interval moves).
  auto reload = [&](auto change) {
    std::vector<probes::ProbeSpec> specs;
    for (const auto& state : *store.Snapshot()) specs.push_back(state->spec);
    change(specs.at(0));
    store.Define(specs);
  };
  reload([](probes::ProbeSpec& buf) { buf.interval = std::chrono::seconds(42); });
  ExpectRebuiltOnce(prepared, store, last, "reload: interval");
  EXPECT_NE(last.find("iodrift_probe_interval_seconds{kind=\"buffered\",probe=\"buf\","
                      "target=\"/srv/disk/probe\"} 42\n"),
            std::string::npos);
  // A reload that moves it to another target: its state (and the twin-derived tax) is reset.
  reload([](probes::ProbeSpec& buf) { buf.target = "/srv/other/probe"; });
  ExpectRebuiltOnce(prepared, store, last, "reload: reset");
  EXPECT_EQ(last.find("probe=\"buf\""), std::string::npos) << "the reset probe has not run";
  EXPECT_EQ(last.find("iodrift_page_cache_tax_ratio"), std::string::npos);

  // A recorded recovery experiment, and a run made by one.
  const auto generation = store.Get("dir")->generation;
  analysis::DiagnoseReport report;
  report.probe = "dir";
  report.finish_time_seconds = 1234;
  store.RecordDiagnosis("dir", generation, report);
  ExpectRebuiltOnce(prepared, store, last, "diagnosis");
  store.RecordExperimentRun("dir", generation);
  ExpectRebuiltOnce(prepared, store, last, "experiment run");

  // A run recorded and prepared by the daemon's listener: the scrape after it makes nothing.
  probes::testing::DefineAndRecord(store, Sequential("dir", ProbeKind::kDirect, 600e6));
  const auto renders = prepared.renders();
  prepared.Prepare(store.Snapshot());
  prepared.Prepare(store.Snapshot());
  EXPECT_EQ(prepared.renders(), renders + 1);
  EXPECT_EQ(Scrape(prepared, store), Fresh(store));
  EXPECT_EQ(prepared.renders(), renders + 1);
}

// A scrape holding an older snapshot (taken before a run was prepared) gets that snapshot's text,
// never the newer one's, and the newer text is made again for the next scrape.
TEST(PreparedProbeFamilies, AnOlderSnapshotGetsItsOwnText) {
  analysis::ProbeStates store;
  PreparedProbeFamilies prepared;
  probes::testing::DefineAndRecord(store, Sequential("buf", ProbeKind::kBuffered, 200e6));
  const auto old_snapshot = store.Snapshot();
  const std::string old_text = Fresh(store);
  probes::testing::DefineAndRecord(store, Sequential("buf", ProbeKind::kBuffered, 100e6));
  prepared.Prepare(store.Snapshot());
  std::string text;
  prepared.AppendText(old_snapshot, text);
  EXPECT_EQ(text, old_text);
  EXPECT_EQ(Scrape(prepared, store), Fresh(store));
}

}  // namespace
}  // namespace iodrift::daemon
