// Parallel readers (`readers:`): the config key, the slicing/spread/efficiency math, real runs
// of buffered, direct and random with a readers curve on a file, the result's outputs (visitor,
// D-Bus dict, metrics) and the baseline key.
#include "collectors/probes/readers.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "collectors/analysis/baseline_store.h"
#include "collectors/probes/result_fields.h"
#include "collectors/probes/runner.h"
#include "config/config.h"
#include "daemon/dbus/result_dict.h"
#include "daemon/json_writer.h"
#include "daemon/probe_metrics.h"
#include "daemon/probe_report.h"
#include "tests/analysis/states_test_util.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
using namespace ::iodrift::analysis;  // NOLINT: tests of the analysis of probe results
namespace {

using testing::TempDir;

// --- The config key -----------------------------------------------------------------------

std::string OnlyProblemText(std::string_view yaml) {
  auto result = config::LoadFromString(yaml, "bad.yaml");
  EXPECT_FALSE(result.has_value()) << yaml;
  if (result.has_value() || result.error().size() != 1) {
    std::string all;
    if (!result.has_value())
      for (const auto& p : result.error()) all += p.ToString() + "\n";
    ADD_FAILURE() << "expected exactly one problem, got:\n" << all;
    return all;
  }
  return result.error().front().ToString();
}

constexpr const char* kHead = "probes:\n  - name: b\n    kind: buffered\n    target: /dev/sda\n";

TEST(ReadersConfig, AcceptsACountOrAList) {
  auto one = config::LoadFromString(std::string(kHead) + "    readers: 4\n", "ok.yaml");
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->probes.at(0).readers, (std::vector<std::uint32_t>{4}));
  auto list = config::LoadFromString(std::string(kHead) + "    readers: [1, 2, 4, 8]\n", "ok.yaml");
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ(list->probes.at(0).readers, (std::vector<std::uint32_t>{1, 2, 4, 8}));
  auto none = config::LoadFromString(kHead, "ok.yaml");
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->probes.at(0).readers.empty());
  EXPECT_EQ(ReaderCounts(none->probes.at(0)), (std::vector<std::uint32_t>{1}));
  for (const char* kind : {"direct", "random"}) {
    auto ok = config::LoadFromString("probes:\n  - name: x\n    kind: " + std::string(kind) +
                                         "\n    target: /dev/sda\n    readers: [1, 64]\n",
                                     "ok.yaml");
    EXPECT_TRUE(ok.has_value()) << kind;
  }
}

TEST(ReadersConfig, BadValuesNameKeyAndLine) {
  const std::string head = kHead;
  EXPECT_EQ(OnlyProblemText(head + "    readers: 0\n"),
            "bad.yaml:5:14: probes[0].readers: must be an integer from 1 to 64, got `0`");
  EXPECT_EQ(OnlyProblemText(head + "    readers: 65\n"),
            "bad.yaml:5:14: probes[0].readers: must be an integer from 1 to 64, got `65`");
  EXPECT_EQ(OnlyProblemText(head + "    readers: [1, 2, x]\n"),
            "bad.yaml:5:21: probes[0].readers[2]: expected an integer from 1 to 64, got `x`");
  EXPECT_EQ(OnlyProblemText(head + "    readers: [1, 2, 2]\n"),
            "bad.yaml:5:21: probes[0].readers[2]: repeats reader count 2");
  EXPECT_EQ(OnlyProblemText(head + "    readers: []\n"),
            "bad.yaml:5:14: probes[0].readers: expected a reader count from 1 to 64 or a list of "
            "1 to 16 of them like [1, 2, 4, 8], got an empty list");
  EXPECT_EQ(OnlyProblemText("probes:\n  - name: m\n    kind: metadata\n    target: /tmp\n"
                            "    readers: 2\n"),
            "bad.yaml:5:5: probes[0].readers: only applies to kinds buffered, direct and random");
}

// --- The math ------------------------------------------------------------------------------

TEST(ReadersMath, SlicesAreDisjointAlignedAndCoverTheRegion) {
  for (std::uint32_t n : {1u, 2u, 3u, 4u, 7u, 8u, 64u}) {
    const std::uint64_t region = (64ull << 20) + 3 * 4096;
    const auto slices = ReaderSlices(region, n, 4096);
    ASSERT_EQ(slices.size(), n);
    std::uint64_t expect_offset = 0;
    for (const Slice& s : slices) {
      EXPECT_EQ(s.offset, expect_offset) << n;  // consecutive: disjoint, no gap
      EXPECT_EQ(s.offset % 4096, 0u);
      expect_offset = s.offset + s.length;
    }
    EXPECT_EQ(expect_offset, region);
    // Equal shares but for the last one, which takes the remainder (< n units).
    EXPECT_LT(slices.back().length - slices.front().length, n * 4096ull);
  }
  // Fewer units than readers: the first readers get nothing, the last takes all.
  const auto tiny = SplitRegion(2 * 4096, 4, 4096);
  ASSERT_EQ(tiny.size(), 4u);
  EXPECT_EQ(tiny[0].length, 0u);
  EXPECT_EQ(tiny[3].length, 2 * 4096u);
  EXPECT_TRUE(SplitRegion(100, 0, 1).empty());
}

TEST(ReadersMath, SpreadAndEfficiency) {
  EXPECT_EQ(Spread({3, 1, 2}), (std::pair<double, double>{1, 3}));
  EXPECT_EQ(Spread({}), (std::pair<double, double>{0, 0}));
  EXPECT_DOUBLE_EQ(*ScalingEfficiency(300, 4, 100), 0.75);
  EXPECT_DOUBLE_EQ(*ScalingEfficiency(100, 4, 100), 0.25);  // no gain: 1/N
  EXPECT_FALSE(ScalingEfficiency(100, 4, 0));
  EXPECT_FALSE(ScalingEfficiency(100, 0, 100));

  std::vector<ReaderStep> steps(3);
  steps[0].readers = 2, steps[0].rate = 150;
  steps[1].readers = 1, steps[1].rate = 100;
  steps[2].readers = 4, steps[2].rate = 400;
  FillScalingEfficiency(steps);
  EXPECT_DOUBLE_EQ(*steps[0].scaling_efficiency, 0.75);
  EXPECT_DOUBLE_EQ(*steps[1].scaling_efficiency, 1.0);
  EXPECT_DOUBLE_EQ(*steps[2].scaling_efficiency, 1.0);
  std::vector<ReaderStep> no_one(1);
  no_one[0].readers = 2, no_one[0].rate = 5;
  FillScalingEfficiency(no_one);
  EXPECT_FALSE(no_one[0].scaling_efficiency);
}

TEST(ReadersMath, RunReadersRunsEveryReaderAtOnce) {
  ProbeEnv env;
  env.io_class = IoClass::kUnchanged;
  std::vector<int> ran(8, 0);
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  RunReaders(8, env, [&](std::uint32_t i) {
    const int now = ++inside;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    // Wait (bounded) until all eight are inside: they were released together.
    for (int spin = 0; spin < 200000 && inside.load() < 8 && most.load() < 8; ++spin)
      std::this_thread::yield();
    ran[i] = 1;
  });
  EXPECT_EQ(std::count(ran.begin(), ran.end(), 1), 8);
  EXPECT_GE(most.load(), 2);  // more than one reader ran at the same time
  EXPECT_THROW(RunReaders(3, env,
                          [](std::uint32_t i) {
                            if (i == 1) throw std::runtime_error("reader 1 failed");
                          }),
               std::runtime_error);
}

// --- Real runs on a file -----------------------------------------------------------------

void ExpectCurve(const ProbeResult& r, const std::vector<std::uint32_t>& counts) {
  ASSERT_EQ(r.readers.size(), counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const ReaderStep& s = r.readers[i];
    EXPECT_EQ(s.readers, counts[i]);
    EXPECT_GT(s.rate, 0);
    EXPECT_GT(s.per_reader_min, 0);
    EXPECT_LE(s.per_reader_min, s.per_reader_max);
    ASSERT_TRUE(s.scaling_efficiency);
    EXPECT_NEAR(*s.scaling_efficiency, s.rate / (s.readers * r.readers[0].rate), 1e-9);
  }
  EXPECT_DOUBLE_EQ(*r.readers[0].scaling_efficiency, 1.0);
}

TEST(ReadersProbe, SequentialKindsReadTheWholeRegionOncePerStep) {
  TempDir dir;
  const std::string file = (dir.path() / "f").string();
  ASSERT_TRUE(testing::WriteRandomFile(file, 16 << 20));
  for (ProbeKind kind : {ProbeKind::kBuffered, ProbeKind::kDirect}) {
    auto spec = testing::MakeSpec("s", kind, file, 8 << 20);
    spec.time_budget = std::chrono::seconds(20);  // never cut short: the bytes are exact
    spec.timeout = std::chrono::seconds(60);
    spec.readers = {1, 2, 4};
    const ProbeResult r = RunProbe(spec, testing::MakeEnv(dir.path()));
    if (kind == ProbeKind::kDirect && !testing::MachineReadsWithODirect(file)) {
      EXPECT_FALSE(r.supported) << "O_DIRECT fails on " << file << " but the probe ran";
      continue;
    }
    ASSERT_TRUE(r.supported) << ProbeKindName(kind) << ": " << r.error;
    ASSERT_EQ(r.outcome, Outcome::kOk) << ProbeKindName(kind) << ": " << r.error;
    ExpectCurve(r, {1, 2, 4});
    for (const ReaderStep& s : r.readers) EXPECT_EQ(s.bytes, 8u << 20);
    EXPECT_EQ(r.bytes, 3u * (8u << 20));  // three steps, each the whole region
    EXPECT_DOUBLE_EQ(*r.throughput_bytes_per_second, r.readers[0].rate);
  }
}

TEST(ReadersProbe, RandomSharesTheRequestsAmongItsReaders) {
  TempDir dir;
  const std::string file = (dir.path() / "f").string();
  ASSERT_TRUE(testing::WriteRandomFile(file, 16 << 20));
  auto spec = testing::MakeSpec("r", ProbeKind::kRandom, file);
  spec.requests = 40;
  spec.time_budget = std::chrono::seconds(20);
  spec.timeout = std::chrono::seconds(60);
  spec.readers = {1, 4};
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(dir.path()));
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  ExpectCurve(r, {1, 4});
  const std::uint64_t request = static_cast<std::uint64_t>(r.extra.at("request_bytes"));
  EXPECT_EQ(r.readers[0].bytes, 41 * request);        // 40 + one warm-up
  EXPECT_EQ(r.readers[1].bytes, (40 + 4) * request);  // 4 x (10 + one warm-up)
  ASSERT_TRUE(r.latency);
  EXPECT_EQ(r.latency->count, 40u);  // the first step's figures
  EXPECT_DOUBLE_EQ(r.ops_per_second.at("read"), r.readers[0].rate);
}

TEST(ReadersProbe, NoReadersKeyKeepsTheClassicResult) {
  TempDir dir;
  const std::string file = (dir.path() / "f").string();
  ASSERT_TRUE(testing::WriteRandomFile(file, 8 << 20));
  auto spec = testing::MakeSpec("d", ProbeKind::kDirect, file, 4 << 20);
  const ProbeResult r = RunProbe(spec, testing::MakeEnv(dir.path()));
  ASSERT_EQ(r.supported, testing::MachineReadsWithODirect(file)) << r.error;
  if (!r.supported) return;  // no O_DIRECT on this filesystem: nothing else to check
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
  EXPECT_TRUE(r.readers.empty());
}

// --- Outputs -------------------------------------------------------------------------------

ProbeResult CurveResult() {
  ProbeResult r;
  r.name = "b";
  r.kind = ProbeKind::kBuffered;
  r.target = "/dev/loop0";
  r.outcome = Outcome::kOk;
  r.throughput_bytes_per_second = 100;
  for (auto [n, rate] : {std::pair{1u, 100.0}, {2u, 180.0}, {16u, 800.0}}) {
    ReaderStep s;
    s.readers = n;
    s.rate = rate;
    s.per_reader_min = rate / n * 0.9;
    s.per_reader_max = rate / n * 1.1;
    s.bytes = 1000 * n;
    s.seconds = 0.5;
    if (n != 2) {  // one step without time parts
      TimeParts tp;
      tp.wall = 0.5 * n;
      tp.kernel_cpu = 0.1 * n;
      tp.other = 0.4 * n;
      tp.blkio_delay = 0.25;
      s.time_seconds = tp;
    }
    r.readers.push_back(s);
  }
  FillScalingEfficiency(r.readers);
  return r;
}

TEST(ReadersOutputs, DbusDictRoundTripsTheCurve) {
  const ProbeResult r = CurveResult();
  const ProbeResult back = daemon::dbus::FromDict(daemon::dbus::ToDict(r));
  ASSERT_EQ(back.readers.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.readers[i].readers, r.readers[i].readers);
    EXPECT_DOUBLE_EQ(back.readers[i].rate, r.readers[i].rate);
    EXPECT_DOUBLE_EQ(back.readers[i].per_reader_min, r.readers[i].per_reader_min);
    EXPECT_DOUBLE_EQ(back.readers[i].per_reader_max, r.readers[i].per_reader_max);
    EXPECT_DOUBLE_EQ(*back.readers[i].scaling_efficiency, *r.readers[i].scaling_efficiency);
    EXPECT_EQ(back.readers[i].bytes, r.readers[i].bytes);
    ASSERT_EQ(back.readers[i].time_seconds.has_value(), r.readers[i].time_seconds.has_value());
    if (!r.readers[i].time_seconds) continue;
    EXPECT_DOUBLE_EQ(back.readers[i].time_seconds->wall, r.readers[i].time_seconds->wall);
    EXPECT_DOUBLE_EQ(back.readers[i].time_seconds->kernel_cpu,
                     r.readers[i].time_seconds->kernel_cpu);
    EXPECT_EQ(back.readers[i].time_seconds->blkio_delay, 0.25);
    EXPECT_FALSE(back.readers[i].time_seconds->reclaim_delay);
  }
  // JSON (--once, /api/v1/probes) is the same before and after D-Bus (iodriftctl's view).
  auto json = [](const ProbeResult& x) {
    daemon::JsonWriter w;
    daemon::WriteProbeResultJson(w, x);
    return w.str();
  };
  EXPECT_EQ(json(back), json(r));
  EXPECT_NE(
      json(r).find(R"("readers":{"unit":"bytes_per_second","rate":{"1":100,"2":180,"16":800})"),
      std::string::npos)
      << json(r);
  EXPECT_NE(json(r).find(R"("time_kernel_cpu":{"1":0.1,"16":1.6})"), std::string::npos) << json(r);
  EXPECT_EQ(json(r).find("time_reclaim_delay"), std::string::npos) << json(r);  // no step knows it
  ProbeResult plain;
  EXPECT_NE(json(plain).find(R"("readers":null)"), std::string::npos);
  EXPECT_TRUE(daemon::dbus::FromDict(daemon::dbus::ToDict(plain)).readers.empty());
  EXPECT_EQ(daemon::dbus::ToDict(plain).count("readers"), 0u);
}

const prometheus::MetricFamily* Family(const std::vector<prometheus::MetricFamily>& families,
                                       const std::string& name) {
  for (const auto& f : families)
    if (f.name == name) return &f;
  return nullptr;
}

std::map<std::string, double> ByLabels(const prometheus::MetricFamily& f) {
  std::map<std::string, double> out;
  for (const auto& m : f.metric) {
    std::string key;
    for (const auto& l : m.label)
      if (l.name == "readers" || l.name == "stat" || l.name == "op")
        key += l.name + "=" + l.value + ",";
    out[key] = m.gauge.value;
  }
  return out;
}

TEST(ReadersOutputs, MetricsPerReaderCountOnlyForACurve) {
  analysis::ProbeStates store;
  ProbeResult r = CurveResult();
  r.spec_size = 0;
  testing::DefineAndRecord(store, r);
  std::vector<prometheus::MetricFamily> out;
  daemon::AppendProbeFamilies(*store.Snapshot(), out);
  const auto* rate = Family(out, "iodrift_probe_readers_throughput_bytes_per_second");
  ASSERT_NE(rate, nullptr);
  EXPECT_EQ(ByLabels(*rate), (std::map<std::string, double>{
                                 {"readers=1,", 100}, {"readers=16,", 800}, {"readers=2,", 180}}));
  const auto* spread = Family(out, "iodrift_probe_reader_throughput_bytes_per_second");
  ASSERT_NE(spread, nullptr);
  EXPECT_DOUBLE_EQ(ByLabels(*spread).at("readers=2,stat=min,"), 90 * 0.9);
  EXPECT_DOUBLE_EQ(ByLabels(*spread).at("readers=2,stat=max,"), 90 * 1.1);
  const auto* efficiency = Family(out, "iodrift_probe_readers_scaling_efficiency");
  ASSERT_NE(efficiency, nullptr);
  EXPECT_DOUBLE_EQ(ByLabels(*efficiency).at("readers=2,"), 0.9);
  EXPECT_DOUBLE_EQ(ByLabels(*efficiency).at("readers=16,"), 0.5);
  EXPECT_EQ(Family(out, "iodrift_probe_readers_ops_per_second"), nullptr);

  // A random curve: ops families with op=read; a plain probe: none of the readers families.
  analysis::ProbeStates plain;
  ProbeResult classic = CurveResult();
  classic.readers.clear();
  testing::DefineAndRecord(plain, classic);
  out.clear();
  daemon::AppendProbeFamilies(*plain.Snapshot(), out);
  for (const auto& f : out)
    EXPECT_EQ(f.name.find("iodrift_probe_reader"), std::string::npos) << f.name;
  analysis::ProbeStates random;
  ProbeResult ops = CurveResult();
  ops.kind = ProbeKind::kRandom;
  ops.throughput_bytes_per_second.reset();
  ops.ops_per_second["read"] = 100;
  testing::DefineAndRecord(random, ops);
  out.clear();
  daemon::AppendProbeFamilies(*random.Snapshot(), out);
  const auto* iops = Family(out, "iodrift_probe_readers_ops_per_second");
  ASSERT_NE(iops, nullptr);
  EXPECT_DOUBLE_EQ(ByLabels(*iops).at("op=read,readers=2,"), 180);
}

TEST(ReadersBaseline, ABaselineNeverMixesReaderCounts) {
  ProbeResult r = CurveResult();
  r.spec_size = 1 << 20;
  ProbeBaseline pb;
  UpdateBaseline(pb, r, 3);
  EXPECT_EQ(pb.key.readers, 1u);
  ProbeResult four = r;
  four.readers.erase(four.readers.begin());  // the curve now starts at 2 readers
  const BaselineUpdate update = UpdateBaseline(pb, four, 3);
  EXPECT_TRUE(update.restarted);
  EXPECT_EQ(pb.key.readers, 2u);
  // A failed run without a curve does not restart it.
  ProbeResult failed;
  failed.name = r.name, failed.kind = r.kind, failed.target = r.target;
  failed.spec_size = r.spec_size;
  failed.outcome = Outcome::kError;
  EXPECT_FALSE(UpdateBaseline(pb, failed, 3).restarted);
  // The file keeps the count (and reads old files without one as 1).
  BaselineState state;
  state.boot_id = "b";
  state.probes[r.name] = pb;
  auto parsed = ParseBaselineState(SerializeBaselineState(state));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->probes.at(r.name).key.readers, 2u);
  EXPECT_EQ(parsed->probes.at(r.name).key, pb.key);
}

}  // namespace
}  // namespace iodrift::probes
