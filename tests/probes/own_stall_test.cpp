// OwnIoStall (collectors/probes/own_stall.h) and the io_pressure rule that uses it.
#include "collectors/probes/own_stall.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "collectors/common/proc_root.h"
#include "collectors/probes/context.h"

namespace iodrift::probes {
namespace {

TEST(OwnIoStall, MirrorsThePsiAverageOfOneStalledSecond) {
  OwnIoStall own;
  EXPECT_EQ(own.Avg10Share(100), 0);
  own.Record(100, 1.0);
  // 50 % of a 2 s period, folded in with weight 1 - e^-0.2, then decaying with e^(-t/10).
  const double fresh = 50 * (1 - std::exp(-0.2));
  EXPECT_NEAR(own.Avg10Share(100), fresh, 1e-9);
  EXPECT_NEAR(own.Avg10Share(110), fresh * std::exp(-1.0), 1e-9);
  EXPECT_NEAR(own.Avg10Share(99), fresh, 1e-9);  // a clock read before the run ended: age 0
  EXPECT_EQ(own.Avg10Share(161), 0);             // past the one-minute horizon: forgotten
}

TEST(OwnIoStall, AddsRunsAndIgnoresRunsWithoutStall) {
  OwnIoStall own;
  own.Record(10, 0.2);
  own.Record(11, 0);
  own.Record(11, -1);
  own.Record(12, 0.3);
  const double k = 50 * (1 - std::exp(-0.2));
  EXPECT_NEAR(own.Avg10Share(12), k * (0.2 * std::exp(-0.2) + 0.3), 1e-9);
}

TEST(OwnIoStall, ProbesOneSecondApartDoNotFlagThemselves) {
  // What the memory squeeze test saw at 1 s intervals: two probes, each stalled ~0.13 s per run,
  // kept avg10 around 12-16 % by themselves. With their own share removed, nothing is left.
  OwnIoStall own;
  for (int i = 0; i < 30; ++i) own.Record(i, 0.26);
  const double share = own.Avg10Share(30);
  EXPECT_GT(share, 10);
  EXPECT_FALSE(OwnIoStall::Exceeds(share + 1, share, 10));
  // Someone else's 15 % on top still counts.
  EXPECT_TRUE(OwnIoStall::Exceeds(share + 15, share, 10));
  EXPECT_TRUE(OwnIoStall::Exceeds(15, 0, 10));
}

class IoPressureRule : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("iodrift-ownstall-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_ / "pressure");
    std::ofstream(dir_ / "pressure/io") << "some avg10=15.00 avg60=3.00 avg300=1.00 total=1000\n"
                                           "full avg10=9.00 avg60=2.00 avg300=0.50 total=500\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  bool Suspect(double own_share) {
    ProbeResult r;
    RunContext::Begin(ProcRoot(dir_), own_share).Finish(r, 0);
    return std::find(r.suspect.begin(), r.suspect.end(), "io_pressure") != r.suspect.end();
  }
  std::filesystem::path dir_;
};

TEST_F(IoPressureRule, FlagsOthersPressureButNotTheDaemonsOwn) {
  EXPECT_TRUE(Suspect(0));     // 15 % > 10 %: someone was waiting for I/O
  EXPECT_TRUE(Suspect(4.9));   // 10.1 % left after our own share
  EXPECT_FALSE(Suspect(5.1));  // 9.9 % left
  EXPECT_FALSE(Suspect(15));   // all of it was ours
}

}  // namespace
}  // namespace iodrift::probes
