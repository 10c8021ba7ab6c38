// The timed read's accounting (collectors/probes/accounting.h): the parsers on samples captured
// on the development VM, and real runs — every reader's CPU is counted, the parts add up to the
// readers' summed wall time within 10 %, and leaving one reader's accounting out misses by more.
#include "collectors/probes/accounting.h"

#include <fcntl.h>
#include <sys/resource.h>

#include <cerrno>
#include <cmath>
#include <ctime>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/probes/readers.h"
#include "collectors/probes/runner.h"
#include "collectors/probes/time_parts.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

#include "tests/probes/accounting_samples.inc"

std::string_view Bytes(const unsigned char* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// --- Parsers -----------------------------------------------------------------------------------

TEST(Accounting, ParsesARealTaskstatsReply) {
  const auto reply = Bytes(kTaskstatsRoot, sizeof kTaskstatsRoot);
  auto d = ParseTaskstatsReply(reply, 29906);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->blkio_ns, 21025888u);
  EXPECT_EQ(d->swapin_ns, 0u);
  EXPECT_EQ(d->reclaim_ns, 0u);
  EXPECT_EQ(d->thrashing_ns, 0u);
  EXPECT_EQ(d->compaction_ns, 0u);
  EXPECT_EQ(d->irq_ns, 0u);  // version 16: known

  auto other = ParseTaskstatsReply(reply, 1);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("answer for pid 29906, asked 1"), std::string::npos)
      << other.error().message;
  auto cut = ParseTaskstatsReply(reply.substr(0, 100), 29906);
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().code, EINVAL);
  EXPECT_NE(cut.error().message.find("netlink length"), std::string::npos) << cut.error().message;
  EXPECT_FALSE(ParseTaskstatsReply("", 29906));
}

TEST(Accounting, ARefusedTaskstatsQueryNamesTheCapability) {
  auto d = ParseTaskstatsReply(Bytes(kTaskstatsNobody, sizeof kTaskstatsNobody), 29711);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, EPERM);
  EXPECT_NE(d.error().message.find("CAP_NET_ADMIN"), std::string::npos) << d.error().message;
}

TEST(Accounting, ParsesStatBlkioTicks) {
  // /proc/thread-self/stat of a python3 thread after 16 MiB of O_DIRECT reads
  // (task_delayacct=1): field 42 is 1 tick.
  const std::string real =
      "32427 (python3) R 32425 32425 14520 0 -1 4194304 7197 6505 1 0 5 15 15 12 20 0 1 0 1481499 "
      "18055168 3633 18446744073709551615 94632123744256 94632123744597 140734359146608 0 0 0 0 "
      "16781312 2 0 0 0 17 0 0 0 1 0 0 94632123755952 94632123756568 94632961945600 "
      "140734359148229 140734359148561 140734359148561 140734359150543 0\n";
  EXPECT_EQ(ParseStatBlkioTicks(real), 1u);
  // A comm with spaces and parentheses: fields are counted after the last ')'.
  std::string odd = real;
  odd.replace(odd.find("(python3)"), 9, "(a) b (c))");
  EXPECT_EQ(ParseStatBlkioTicks(odd), 1u);
  EXPECT_FALSE(ParseStatBlkioTicks("1 (x) R 2 3"));
  EXPECT_FALSE(ParseStatBlkioTicks("no parenthesis"));
}

TEST(Accounting, ParsesDiskCounters) {
  // /proc/diskstats of the development VM (kernel 6.18: 20 fields).
  const char* text =
      "   7       0 loop0 95391 65 99936674 51782 4419 7410 6261932 13531 0 22072 67755 69 0 "
      "49328286 2 1293 2438\n"
      " 254       0 vda 886357 94397 176210320 215303 308117 143267 199025064 936910 0 215808 "
      "1265024 118471 10 189075400 65455 38714 47355\n"
      "   1 2 short 3\n";
  const auto disks = ParseDiskCounters(text);
  ASSERT_EQ(disks.size(), 2u);
  EXPECT_EQ(disks.at("loop0").io_ticks_ms, 22072u);
  EXPECT_EQ(disks.at("loop0").sectors, 99936674u + 6261932u);
  EXPECT_EQ(disks.at("vda").io_ticks_ms, 215808u);
  EXPECT_EQ(disks.at("vda").sectors, 176210320u + 199025064u);
}

TEST(Accounting, ParsesCgroupCpuThrottling) {
  // cgroup v2 root cpu.stat (a root cgroup has no quota: no throttled_usec) and v1 cpu.stat of
  // the development VM; a v2 child with a quota (Documentation/admin-guide/cgroup-v2.rst).
  EXPECT_FALSE(ParseCpuStatThrottled(
      "usage_usec 23415092000\nuser_usec 17706976000\nsystem_usec 5708116000\n"
      "nice_usec 620136000\n"));
  EXPECT_EQ(ParseCpuStatThrottled("nr_periods 0\nnr_throttled 0\nthrottled_time 0\n"
                                  "nr_bursts 0\nburst_time 0\n"),
            0.0);
  EXPECT_DOUBLE_EQ(*ParseCpuStatThrottled("usage_usec 9000\nnr_periods 40\nnr_throttled 30\n"
                                          "throttled_usec 2500000\nnr_bursts 0\n"),
                   2.5);
  EXPECT_DOUBLE_EQ(*ParseCpuStatThrottled("throttled_time 1500000000\n"), 1.5);
  EXPECT_EQ(ParseFlatKeyed("low 0\nhigh 3\nmax 0\noom 0\n", "high"), 3u);
  EXPECT_FALSE(ParseFlatKeyed("low 0\n", "high"));
}

TEST(Accounting, FindsTheOwnCgroupOnAHybridAndAPureV2Machine) {
  // The development VM: v1 controllers plus a v2 hierarchy at /sys/fs/cgroup/unified.
  const char* hybrid_cgroup =
      "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/38c8\n1:cpu:/\n0::/\n";
  const char* hybrid_mounts =
      "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
  const CgroupDirs h = ResolveCgroupDirs(hybrid_cgroup, hybrid_mounts);
  EXPECT_EQ(h.v2, "/sys/fs/cgroup/unified");
  EXPECT_EQ(h.v1_cpu, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(h.v1_memory, "/sys/fs/cgroup/memory/process_api/38c8");
  // A systemd service on a v2-only host.
  const CgroupDirs v2 = ResolveCgroupDirs(
      "0::/system.slice/iodrift.service\n",
      "25 22 0:23 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n");
  EXPECT_EQ(v2.v2, "/sys/fs/cgroup/system.slice/iodrift.service");
  EXPECT_TRUE(v2.v1_cpu.empty());
  // A container whose cgroup namespace root is mounted: the mount's root is cut off.
  const CgroupDirs ns =
      ResolveCgroupDirs("0::/kubepods/pod1/c1\n",
                        "25 22 0:23 /kubepods/pod1 /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n");
  EXPECT_EQ(ns.v2, "/sys/fs/cgroup/c1");
}

TEST(Accounting, StepInputSumsTheReadersAndDiffsTheSystem) {
  ThreadUsage a;
  a.timed_seconds = 1.0;
  a.accounted = true;
  a.accounted_seconds = 1.001;
  a.system_seconds = 0.2;
  a.on_cpu_seconds = 0.25;
  a.runqueue_seconds = 0.05;
  a.blkio_seconds = 0.5;
  a.read_bytes = 1000;
  ThreadUsage b = a;
  b.blkio_seconds.reset();  // stat_blkio missing on one reader: unknown for the step
  SystemSample s0, s1;
  s0.disk = DiskCounters{100, 10};
  s1.disk = DiskCounters{400, 18};  // 8 sectors = 4096 bytes, 2000 of them ours
  s0.cpu_throttled_seconds = 1.0;
  s1.cpu_throttled_seconds = 1.25;
  s0.page_reported_kib = 10;
  s1.page_reported_kib = 4;  // went backwards: unknown, never negative
  const TimePartsInput in = StepInput({a, b}, s0, s1);
  EXPECT_DOUBLE_EQ(in.wall_seconds, 2.0);
  EXPECT_DOUBLE_EQ(*in.accounted_seconds, 2.002);
  EXPECT_DOUBLE_EQ(*in.on_cpu_seconds, 0.5);
  EXPECT_FALSE(in.blkio_delay_seconds);
  EXPECT_DOUBLE_EQ(*in.device_busy_seconds, 0.3);
  EXPECT_DOUBLE_EQ(*in.device_bytes, 4096);
  EXPECT_DOUBLE_EQ(*in.own_read_bytes, 2000);
  EXPECT_DOUBLE_EQ(*in.cpu_throttled_seconds, 0.25);
  EXPECT_FALSE(in.page_reported_bytes);
  EXPECT_FALSE(in.psi_io_some_seconds);
}

// A reader samples itself outside any wait, so what it waited between its samples fits in their
// span; a delay total that grew by more (block I/O wait 4.75 s over a 58 ms run, as a VM's delay
// accounting reported run after run) is unknown, never a figure. Growth within the span, or over
// it by one /proc/PID/stat clock tick of rounding, is kept.
TEST(Accounting, ADelayLongerThanTheReadersSpanIsUnknown) {
  ThreadSample b, e;
  b.mono = 100.0;
  e.mono = 100.058;
  auto ns = [](double seconds) { return static_cast<std::uint64_t>(seconds * 1e9); };
  b.delays = {ns(1), ns(1), ns(1), ns(1), ns(1), ns(1)};
  e.delays = {ns(1 + 4.75), ns(1 + 0.03), ns(1 + 0.068), ns(1), ns(1 + 0.2), ns(1 + 0.01)};
  const ThreadUsage u = UsageBetween(b, e, 0.057);
  EXPECT_FALSE(u.blkio_seconds);
  EXPECT_FALSE(u.compaction_seconds);
  ASSERT_TRUE(u.swapin_seconds);
  EXPECT_NEAR(*u.swapin_seconds, 0.03, 1e-9);
  ASSERT_TRUE(u.reclaim_seconds);  // 10 ms over the span: a tick's rounding
  EXPECT_NEAR(*u.reclaim_seconds, 0.068, 1e-9);
  ASSERT_TRUE(u.thrashing_seconds);
  EXPECT_EQ(*u.thrashing_seconds, 0);
  ASSERT_TRUE(u.irq_seconds);
  // The step: block I/O wait unknown, so no time part is put on it.
  SystemSample s;
  const TimeParts parts = ComputeTimeParts(StepInput({u}, s, s));
  EXPECT_FALSE(parts.blkio_delay);
}

// --- Real runs -----------------------------------------------------------------------------

double ProcessCpu(int who) {
  rusage ru{};
  getrusage(who, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// The calling thread's CPU clock (the scheduler's sum_exec_runtime, ns), not CurrentThreadCpu():
// the test's yardstick must not be the code under test's own rusage reading.
double ThreadClockSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Every reader's CPU inside its timed read is counted: four readers each burn a known amount of
// their own CPU (10, 20, 30, 40 ms by the thread's own CPU clock, the scheduler's
// sum_exec_runtime that schedstat also reports) as the body RunReaders times. Each reader's
// accounted CPU must be its own burn: counting one reader, or the coordinating thread that waits
// in join(), misses by 60 ms or more. CPU time does not depend on how busy the machine is.
TEST(AccountingRun, EachReadersCpuInsideTheTimedReadIsCountedExactly) {
  constexpr std::uint32_t kReaders = 4;
  testing::TempDir dir;
  ProbeEnv env = testing::MakeEnv(dir.path());
  env.io_class = IoClass::kUnchanged;
  StepAccounting accounting(env.proc_root, env.sys_root, "", kReaders);
  std::vector<double> burnt(kReaders, 0);
  RunReaders(
      kReaders, env,
      [&](std::uint32_t i) {
        const double t0 = ThreadClockSeconds();
        volatile std::uint64_t x = 0;
        while (ThreadClockSeconds() - t0 < 0.01 * (i + 1)) x = x + 1;
        burnt[i] = ThreadClockSeconds() - t0;
      },
      &accounting);
  double burnt_sum = 0;
  for (std::uint32_t i = 0; i < kReaders; ++i) {
    SCOPED_TRACE("reader " + std::to_string(i));
    const ThreadUsage& u = accounting.readers()[i];
    ASSERT_TRUE(u.accounted);
    ASSERT_TRUE(u.on_cpu_seconds) << "schedstat is readable on every kernel we support";
    // The samples' own reads of /proc add a little CPU on each side of the burn.
    EXPECT_GE(*u.on_cpu_seconds, burnt[i] * 0.999);
    EXPECT_LE(*u.on_cpu_seconds, burnt[i] + 0.005);
    // user + system come from the thread's rusage (microseconds): the same CPU, split.
    EXPECT_NEAR(u.user_seconds + u.system_seconds, burnt[i], 0.005);
    burnt_sum += burnt[i];
  }
  const TimeParts parts = ComputeTimeParts(
      StepInput(accounting.readers(), accounting.system_begin(), accounting.system_end()));
  EXPECT_GE(parts.user_cpu + parts.kernel_cpu, burnt_sum * 0.99);
  EXPECT_LE(parts.user_cpu + parts.kernel_cpu, burnt_sum + 0.02);
}

TEST(AccountingRun, FourReadersPartsHoldOnlyTheReadersCpuAndAddUp) {
  testing::TempDir dir;
  const std::string file = (dir.path() / "f").string();
  ASSERT_TRUE(testing::WriteRandomFile(file, 64 << 20));
  for (ProbeKind kind : {ProbeKind::kDirect, ProbeKind::kBuffered}) {
    SCOPED_TRACE(ProbeKindName(kind));
    auto spec = testing::MakeSpec("b", kind, file, 64 << 20);
    spec.time_budget = std::chrono::seconds(30);
    spec.timeout = std::chrono::seconds(120);
    spec.readers = {4};
    const double self0 = ProcessCpu(RUSAGE_SELF), thread0 = ProcessCpu(RUSAGE_THREAD);
    const ProbeResult r = RunProbe(spec, testing::MakeEnv(dir.path()));
    const double self1 = ProcessCpu(RUSAGE_SELF), thread1 = ProcessCpu(RUSAGE_THREAD);
    if (r.outcome == Outcome::kSkipped && !r.supported) continue;  // no O_DIRECT here
    ASSERT_EQ(r.outcome, Outcome::kOk) << r.error;
    ASSERT_EQ(r.readers.size(), 1u);
    ASSERT_TRUE(r.time_seconds);
    ASSERT_TRUE(r.readers[0].time_seconds);
    const TimeParts& tp = *r.time_seconds;
    // The CPU the four reader threads used: the process's minus this thread's (which ran the
    // probe's preparation and waited in join()). The parts hold some of it and nothing else:
    // the old accounting counted this thread instead (a direct run here: 14 ms of the probe
    // thread's CPU against 5 ms of the readers'). How much of the readers' CPU falls inside
    // their timed reads is the machine's (their buffers' allocation and fault-in is outside:
    // 27-90 % inside was measured, 27 % under ASan on a busy CI machine), so the share is not
    // asserted here: EachReadersCpuInsideTheTimedReadIsCountedExactly counts a known one.
    const double readers_cpu = (self1 - self0) - (thread1 - thread0);
    const double parts_cpu = tp.user_cpu + tp.kernel_cpu;
    EXPECT_GT(parts_cpu, 0);
    EXPECT_LE(parts_cpu, 1.1 * readers_cpu + 0.001) << "readers' CPU " << readers_cpu;
    // wall: the four readers' timed reads summed, at least the step's wall time (the longest
    // reader) and at most four times it.
    EXPECT_GE(tp.wall, r.readers[0].seconds * 0.999);
    EXPECT_LE(tp.wall, 4 * r.readers[0].seconds * 1.001);
    EXPECT_NEAR(tp.Sum(), tp.wall, 0.1 * tp.wall);
  }
}

TEST(AccountingRun, LeavingOutOneReadersAccountingMissesTheWall) {
  testing::TempDir dir;
  const std::string file = (dir.path() / "f").string();
  ASSERT_TRUE(testing::WriteRandomFile(file, 32 << 20));
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ProbeEnv env = testing::MakeEnv(dir.path());
  env.io_class = IoClass::kUnchanged;
  constexpr std::uint32_t kReaders = 4;
  const auto slices = ReaderSlices(32 << 20, kReaders, PageSize());
  std::vector<AlignedBuffer> buffers;
  for (std::uint32_t i = 0; i < kReaders; ++i)
    buffers.push_back(*AlignedBuffer::Make(1 << 20, 4096));
  StepAccounting accounting(env.proc_root, env.sys_root, "", kReaders);
  RunControl control;
  RunReaders(
      kReaders, env,
      [&](std::uint32_t i) {
        ReadSequential(fd, buffers[i].data(), 1 << 20, slices[i].offset, slices[i].length, 30,
                       control);
      },
      &accounting);
  ::close(fd);
  std::vector<ThreadUsage> readers = accounting.readers();
  for (const ThreadUsage& u : readers) {
    ASSERT_TRUE(u.accounted);
    EXPECT_GE(u.accounted_seconds, u.timed_seconds);
  }
  const TimeParts whole =
      ComputeTimeParts(StepInput(readers, accounting.system_begin(), accounting.system_end()));
  EXPECT_NEAR(whole.Sum(), whole.wall, 0.1 * whole.wall);
  readers[2].accounted = false;  // reader 2's samples lost: its time is a hole in the parts
  const TimeParts holed =
      ComputeTimeParts(StepInput(readers, accounting.system_begin(), accounting.system_end()));
  EXPECT_DOUBLE_EQ(holed.wall, whole.wall);
  EXPECT_GT(std::fabs(holed.Sum() - holed.wall), 0.1 * holed.wall)
      << "sum " << holed.Sum() << " wall " << holed.wall;
}

TEST(AccountingRun, DelaySourceFollowsTheSysctl) {
  // What this process gets here, whatever it is; the name is one of three.
  StepAccounting one(ProcRoot(), "/sys", "", 1);
  const DelaySource s = one.delay_source();
  const std::string name = DelaySourceName(s);
  EXPECT_TRUE(name == "off" || name == "stat_blkio" || name == "taskstats") << name;
  one.BeginStep();
  one.BeginReader(0);
  one.EndReader(0, 0);
  one.EndStep();
  const TimeParts p = one.Parts();
  EXPECT_EQ(p.blkio_delay.has_value(), s != DelaySource::kOff);
  EXPECT_EQ(p.reclaim_delay.has_value(), s == DelaySource::kTaskstats);
}

}  // namespace
}  // namespace iodrift::probes
