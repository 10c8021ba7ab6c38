// The kind table (collectors/probes/kinds.h): every kind has one row, names round-trip, twins
// pair both ways, and what the loader and the runner read from it.
#include "collectors/probes/kinds.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace iodrift::probes {
namespace {

TEST(ProbeKinds, EveryKindHasOneRowWithAUniqueNameThatRoundTrips) {
  std::set<std::string_view> names;
  for (const KindTraits& k : AllKinds()) {
    EXPECT_EQ(&Traits(k.kind), &k);
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_EQ(ProbeKindName(k.kind), k.name);
    EXPECT_EQ(ParseProbeKind(k.name), k.kind);
    EXPECT_EQ(std::string(KindChoices()).find(std::string(k.name)) != std::string::npos, true);
    EXPECT_EQ(k.ops_figure, !k.op.empty()) << k.name << ": an operations figure names its op";
  }
  EXPECT_EQ(names.size(), 6u);
  EXPECT_EQ(KindChoices(), "cached|buffered|direct|random|metadata|memory");
}

TEST(ProbeKinds, TwinsPairBothWaysOnKindsWithATarget) {
  for (const KindTraits& k : AllKinds()) {
    if (!k.twin) continue;
    EXPECT_TRUE(k.has_target) << k.name;
    EXPECT_EQ(Traits(*k.twin).twin, k.kind) << k.name << " and its twin do not pair both ways";
  }
  EXPECT_EQ(Traits(ProbeKind::kBuffered).twin, ProbeKind::kDirect);
}

TEST(ProbeKinds, SpecSizeIsTheKeyTheKindNames) {
  ProbeSpec spec;
  spec.size = 1 << 20;
  spec.files = 7;
  spec.requests = 9;
  spec.kind = ProbeKind::kBuffered;
  EXPECT_EQ(SpecSize(spec), 1u << 20);
  spec.kind = ProbeKind::kMetadata;
  EXPECT_EQ(SpecSize(spec), 7u);
  spec.kind = ProbeKind::kRandom;
  EXPECT_EQ(SpecSize(spec), 9u);
}

}  // namespace
}  // namespace iodrift::probes
