// What the timed-read accounting (collectors/probes/accounting.h) gets on this machine, and what
// it costs. Not built by CMake; by hand (after building iodrift_core):
//   c++ -std=c++20 -O2 -I. tests/bench/accounting_bench.cpp build/libiodrift_core.a \
//       -o /tmp/accounting_bench && /tmp/accounting_bench [--rounds 15] [--iterations 400]
//   /tmp/accounting_bench --dump-taskstats FILE   (writes one raw TASKSTATS_CMD_GET reply)
//
// Prints which delay source the process gets (kernel.task_delayacct, CAP_NET_ADMIN), the cgroup
// directories found, one step's figures, then the CPU µs (CLOCK_PROCESS_CPUTIME_ID) of one
// run's accounting, before/after side by side in each round (medians over the rounds):
//   before  the old RunTimer: diskstats + thread-self/schedstat + getrusage, at both ends
//   after   StepAccounting with one reader: BeginStep/BeginReader/EndReader/EndStep + Parts()
// and, for `after` with 4 readers, the cost per step (each reader samples its own thread).
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "collectors/probes/accounting.h"
#include "collectors/probes/time_parts.h"

using namespace iodrift;
using namespace iodrift::probes;

namespace {

double CpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string DiskOfRoot() {
  // The device of / in diskstats terms is not needed for the cost; any listed disk will do.
  std::ifstream f("/proc/diskstats");
  std::string line, name;
  while (std::getline(f, line)) {
    char n[64];
    unsigned a, b;
    if (std::sscanf(line.c_str(), "%u %u %63s", &a, &b, n) == 3 && std::strncmp(n, "loop", 4)) {
      return n;
    }
  }
  return "";
}

// The old RunTimer's reads, both ends.
void Before(const ProcRoot& root, const std::string& device) {
  TimePartsInput in;
  auto d0 = root.Read("diskstats");
  auto s0 = root.Read("thread-self/schedstat");
  const ThreadCpu c0 = CurrentThreadCpu();
  const ThreadCpu c1 = CurrentThreadCpu();
  auto s1 = root.Read("thread-self/schedstat");
  auto d1 = root.Read("diskstats");
  in.rusage_user_seconds = c1.user_seconds - c0.user_seconds;
  if (s0 && s1) in.on_cpu_seconds = static_cast<double>(ParseSchedStat(*s1)->on_cpu_ns);
  if (d0 && d1) {
    auto t = ParseDiskCounters(*d1);
    if (t.count(device)) in.device_busy_seconds = static_cast<double>(t.at(device).io_ticks_ms);
  }
  volatile double sink = ComputeTimeParts(in).Sum();
  (void)sink;
}

TimeParts After(const std::string& device, std::uint32_t readers) {
  StepAccounting acct(ProcRoot(), "/sys", device, readers);
  acct.BeginStep();
  if (readers == 1) {
    acct.BeginReader(0);
    acct.EndReader(0, 0);
  } else {
    std::vector<std::thread> t;
    for (std::uint32_t i = 0; i < readers; ++i) {
      t.emplace_back([&, i] {
        acct.BeginReader(i);
        acct.EndReader(i, 0);
      });
    }
    for (auto& x : t) x.join();
  }
  acct.EndStep();
  return acct.Parts();
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 15, iterations = 400;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    if (a == "--iterations" && i + 1 < argc) iterations = std::atoi(argv[++i]);
    if (a == "--dump-taskstats" && i + 1 < argc) {
      // One raw reply for this thread, for tests/probes/accounting_test.cpp; after reading
      // $ACCOUNTING_BENCH_READ (a file) with O_DIRECT when set, so the block I/O delay is not 0.
      if (const char* path = std::getenv("ACCOUNTING_BENCH_READ")) {
        const int fd = ::open(path, O_RDONLY | O_DIRECT);
        void* buf = nullptr;
        if (fd >= 0 && posix_memalign(&buf, 4096, 1 << 20) == 0) {
          while (::read(fd, buf, 1 << 20) > 0) {
          }
        }
        std::free(buf);
        if (fd >= 0) ::close(fd);
      }
      auto client = TaskstatsClient::Open();
      if (!client) {
        std::fprintf(stderr, "%s\n", client.error().message.c_str());
        return 1;
      }
      const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
      auto raw = client->QueryRaw(tid);
      if (!raw) {
        std::fprintf(stderr, "%s\n", raw.error().message.c_str());
        return 1;
      }
      std::ofstream(argv[++i], std::ios::binary) << *raw;
      auto parsed = ParseTaskstatsReply(*raw, tid);
      std::printf("tid %d, %zu bytes: %s\n", tid, raw->size(),
                  parsed ? "parsed" : parsed.error().message.c_str());
      if (parsed) {
        std::printf("blkio %llu swapin %llu reclaim %llu thrashing %llu compaction %llu irq %s\n",
                    (unsigned long long)*parsed->blkio_ns, (unsigned long long)*parsed->swapin_ns,
                    (unsigned long long)parsed->reclaim_ns.value_or(0),
                    (unsigned long long)parsed->thrashing_ns.value_or(0),
                    (unsigned long long)parsed->compaction_ns.value_or(0),
                    parsed->irq_ns ? std::to_string(*parsed->irq_ns).c_str() : "unknown");
      }
      return parsed ? 0 : 1;
    }
  }
  const std::string device = DiskOfRoot();
  std::printf("delay source: %s\n", DelaySourceName(DelaySourceNow()));
  {
    auto client = TaskstatsClient::Open();
    if (!client) {
      std::printf("taskstats: %s\n", client.error().message.c_str());
    } else {
      auto q = client->Query(static_cast<pid_t>(::syscall(SYS_gettid)));
      std::printf("taskstats query: %s\n", q ? "answered" : q.error().message.c_str());
    }
  }
  const TimeParts p = After(device, 1);
  std::printf("one step on %s:", device.c_str());
  for (const auto& f : TimePartFields()) {
    if (auto v = f.Get(p)) {
      std::printf(" %s=%g", std::string(f.name).c_str(), *v);
    } else {
      std::printf(" %s=unknown", std::string(f.name).c_str());
    }
  }
  std::printf("\n");
  const ProcRoot root;
  std::vector<double> before, after, system, reader;
  StepAccounting reused(ProcRoot(), "/sys", device, 1);
  for (int r = 0; r < rounds; ++r) {
    const double t0 = CpuMicros();
    for (int i = 0; i < iterations; ++i) Before(root, device);
    const double t1 = CpuMicros();
    for (int i = 0; i < iterations; ++i) After(device, 1);
    const double t2 = CpuMicros();
    for (int i = 0; i < iterations; ++i) After(device, 0);
    const double t3 = CpuMicros();
    for (int i = 0; i < iterations; ++i) {
      reused.BeginReader(0);
      reused.EndReader(0, 0);
    }
    const double t4 = CpuMicros();
    before.push_back((t1 - t0) / iterations);
    after.push_back((t2 - t1) / iterations);
    system.push_back((t3 - t2) / iterations);
    reader.push_back((t4 - t3) / iterations);
  }
  std::printf(
      "CPU us per run, median of %d rounds x %d (delay source %s):\n"
      "  before (old RunTimer, probe thread only)        %.1f\n"
      "  after, 1 reader (whole StepAccounting)          %.1f\n"
      "    of which per step (system samples, Parts)     %.1f\n"
      "    of which per reader (its own two samples)     %.1f\n"
      "  after, N readers = step + N x reader\n",
      rounds, iterations, DelaySourceName(DelaySourceNow()), Median(before), Median(after),
      Median(system), Median(reader));
  return 0;
}
