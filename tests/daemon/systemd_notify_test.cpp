// SystemdNotifier against a real AF_UNIX datagram socket named by NOTIFY_SOCKET, the way systemd
// (PID 1) receives sd_notify messages.
#include "daemon/systemd_notify.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/common/state_health.h"

namespace iodrift::daemon {
namespace {

using std::chrono::milliseconds;

// A bound datagram socket in a fresh temp dir, exported as NOTIFY_SOCKET for the test's life.
class NotifySocket {
 public:
  NotifySocket() {
    char dir_template[] = "/tmp/iodrift-notify-XXXXXX";
    dir_ = ::mkdtemp(dir_template);
    path_ = dir_ + "/notify";
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path_.c_str());
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::setenv("NOTIFY_SOCKET", path_.c_str(), 1);
  }
  ~NotifySocket() {
    ::unsetenv("NOTIFY_SOCKET");
    ::close(fd_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  bool bound() const { return bound_; }

  // The next datagram, or nullopt when none arrives within `timeout`.
  std::optional<std::string> Receive(milliseconds timeout = milliseconds(2000)) {
    struct pollfd pfd {
      fd_, POLLIN, 0
    };
    if (::poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0) return std::nullopt;
    return std::string(buf, static_cast<std::size_t>(n));
  }

  // Every datagram that arrives within `window`.
  std::vector<std::string> ReceiveFor(milliseconds window) {
    std::vector<std::string> out;
    const auto deadline = std::chrono::steady_clock::now() + window;
    for (;;) {
      auto left =
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      auto message = Receive(left);
      if (!message) break;
      out.push_back(*message);
    }
    return out;
  }

 private:
  std::string dir_;
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

class SystemdNotifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("WATCHDOG_USEC");
    ::unsetenv("WATCHDOG_PID");
  }
  void TearDown() override {
    ::unsetenv("WATCHDOG_USEC");
    ::unsetenv("WATCHDOG_PID");
    ::unsetenv("NOTIFY_SOCKET");
  }
};

std::size_t CountPings(const std::vector<std::string>& messages) {
  std::size_t n = 0;
  for (const auto& m : messages) n += m == "WATCHDOG=1" ? 1 : 0;
  return n;
}

TEST_F(SystemdNotifierTest, IsANoOpOutsideSystemd) {
  ::unsetenv("NOTIFY_SOCKET");
  ::setenv("WATCHDOG_USEC", "100000", 1);
  SystemdNotifier notifier;
  EXPECT_FALSE(notifier.Enabled());
  notifier.Ready("x");
  notifier.Status("x");
  notifier.Reloading();
  EXPECT_EQ(notifier.StartWatchdog([] { return true; }), std::nullopt);
  notifier.Stopping();
  EXPECT_EQ(notifier.WatchdogPings(), 0u);
}

TEST_F(SystemdNotifierTest, ReadySendsReadyWithStatus) {
  NotifySocket socket;
  ASSERT_TRUE(socket.bound());
  SystemdNotifier notifier;
  EXPECT_TRUE(notifier.Enabled());
  notifier.Ready("5 probes, no run yet, 0 failing");
  EXPECT_EQ(socket.Receive(), "READY=1\nSTATUS=5 probes, no run yet, 0 failing");
  notifier.Ready();
  EXPECT_EQ(socket.Receive(), "READY=1");
}

TEST_F(SystemdNotifierTest, StatusIsOneLine) {
  NotifySocket socket;
  ASSERT_TRUE(socket.bound());
  SystemdNotifier notifier;
  notifier.Status("reload rejected:\n2 problems");
  EXPECT_EQ(socket.Receive(), "STATUS=reload rejected: 2 problems");
}

TEST_F(SystemdNotifierTest, ReloadingCarriesMonotonicTimestamp) {
  NotifySocket socket;
  ASSERT_TRUE(socket.bound());
  SystemdNotifier notifier;
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const unsigned long long before = ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000ULL;
  notifier.Reloading();
  auto message = socket.Receive();
  ASSERT_TRUE(message);
  const std::string prefix = "RELOADING=1\nMONOTONIC_USEC=";
  ASSERT_EQ(message->substr(0, prefix.size()), prefix) << *message;
  const unsigned long long usec = std::stoull(message->substr(prefix.size()));
  EXPECT_GE(usec, before);
  EXPECT_LT(usec, before + 10'000'000ULL);
}

TEST_F(SystemdNotifierTest, StoppingSendsStoppingAndEndsThePings) {
  NotifySocket socket;
  ASSERT_TRUE(socket.bound());
  ::setenv("WATCHDOG_USEC", "100000", 1);
  SystemdNotifier notifier;
  ASSERT_TRUE(notifier.StartWatchdog([] { return true; }));
  EXPECT_EQ(socket.Receive(), "WATCHDOG=1");
  notifier.Stopping();
  auto rest = socket.ReceiveFor(milliseconds(300));
  ASSERT_FALSE(rest.empty());
  // Pings sent before STOPPING=1 may still be queued; none may follow it.
  auto stopping = std::find(rest.begin(), rest.end(), "STOPPING=1");
  ASSERT_NE(stopping, rest.end());
  EXPECT_EQ(std::count(stopping + 1, rest.end(), std::string("WATCHDOG=1")), 0);
}

TEST_F(SystemdNotifierTest, WatchdogPingsAtHalfTheInterval) {
  NotifySocket socket;
  ASSERT_TRUE(socket.bound());
  ::setenv("WATCHDOG_USEC", "200000", 1);  // 200 ms → a ping every 100 ms
  SystemdNotifier notifier;
  auto interval = notifier.StartWatchdog([] { return true; });
  ASSERT_TRUE(interval);
  EXPECT_EQ(*interval, std::chrono::microseconds(200000));
  auto messages = socket.ReceiveFor(milliseconds(650));
  notifier.StopWatchdog();
  const std::size_t pings = CountPings(messages);
  // 1 at start + 6 in 650 ms at 100 ms; allow a loaded CI machine some slack.
  EXPECT_GE(pings, 3u);
  EXPECT_LE(pings, 8u);
  EXPECT_GE(notifier.WatchdogPings(), pings);
}

TEST_F(SystemdNotifierTest, NoPingsWhileLivenessFails) {
  NotifySocket socket;
  ASSERT_TRUE(socket.bound());
  ::setenv("WATCHDOG_USEC", "100000", 1);
  std::atomic<bool> alive{false};
  std::atomic<int> checks{0};
  SystemdNotifier notifier;
  ASSERT_TRUE(notifier.StartWatchdog([&] {
    ++checks;
    return alive.load();
  }));
  EXPECT_EQ(CountPings(socket.ReceiveFor(milliseconds(400))), 0u);
  EXPECT_GE(checks.load(), 3);  // the check did run; it just said "not alive"
  alive = true;
  EXPECT_EQ(socket.Receive(), "WATCHDOG=1");  // pings resume once the daemon answers again
}

TEST_F(SystemdNotifierTest, WatchdogForAnotherPidIsIgnored) {
  NotifySocket socket;
  ASSERT_TRUE(socket.bound());
  ::setenv("WATCHDOG_USEC", "100000", 1);
  ::setenv("WATCHDOG_PID", std::to_string(::getpid() + 1).c_str(), 1);
  SystemdNotifier notifier;
  EXPECT_EQ(notifier.StartWatchdog([] { return true; }), std::nullopt);
  EXPECT_EQ(CountPings(socket.ReceiveFor(milliseconds(250))), 0u);
}

TEST_F(SystemdNotifierTest, WithoutWatchdogStatusIsStillRefreshed) {
  NotifySocket socket;
  ASSERT_TRUE(socket.bound());
  SystemdNotifier notifier;
  int n = 0;
  EXPECT_EQ(
      notifier.StartWatchdog([] { return true; }, [&n] { return "tick " + std::to_string(n++); },
                             milliseconds(50)),
      std::nullopt);
  EXPECT_EQ(socket.Receive(), "STATUS=tick 0");
  EXPECT_EQ(socket.Receive(), "STATUS=tick 1");
  notifier.StopWatchdog();
  EXPECT_EQ(notifier.WatchdogPings(), 0u);
}

TEST_F(SystemdNotifierTest, WatchdogTickRefreshesStatus) {
  NotifySocket socket;
  ASSERT_TRUE(socket.bound());
  ::setenv("WATCHDOG_USEC", "100000", 1);
  SystemdNotifier notifier;
  ASSERT_TRUE(notifier.StartWatchdog([] { return true; }, [] { return std::string("ok"); }));
  EXPECT_EQ(socket.Receive(), "WATCHDOG=1");
  EXPECT_EQ(socket.Receive(), "STATUS=ok");
}

TEST(FormatProbeStatus, ReadsLikeSystemctlStatus) {
  EXPECT_EQ(FormatProbeStatus(5, 12.4, 0), "5 probes, last run 12 s ago, 0 failing");
  EXPECT_EQ(FormatProbeStatus(1, std::nullopt, 0), "1 probe, no run yet, 0 failing");
  EXPECT_EQ(FormatProbeStatus(2, -0.3, 1), "2 probes, last run 0 s ago, 1 failing");
}

TEST(ProbeStatusText, UsesTheLatestRunAndCountsFailures) {
  std::vector<analysis::ProbeState> records(4);  // the fourth never ran
  records[0].last.outcome = probes::Outcome::kOk;
  records[0].last.start_time_seconds = 1000;
  records[0].last.duration_seconds = 2;
  records[1].last.outcome = probes::Outcome::kTimeout;
  records[1].last.start_time_seconds = 1005;
  records[1].last.duration_seconds = 1;
  records[2].last.outcome = probes::Outcome::kError;
  for (int i = 0; i < 3; ++i) records[i].runs[records[i].last.outcome] = 1;
  analysis::ProbeSnapshot states;
  for (const auto& r : records) states.push_back(std::make_shared<const analysis::ProbeState>(r));
  EXPECT_EQ(ProbeStatusText(states, 1018), "4 probes, last run 12 s ago, 2 failing");
  analysis::ProbeSnapshot never = {states.back(), states.back()};
  EXPECT_EQ(ProbeStatusText(never, 1018), "2 probes, no run yet, 0 failing");
}

TEST(ProbeStatusText, PutsAnUnwritableStateDirFirst) {
  analysis::ProbeSnapshot none;
  StateHealthView view;
  EXPECT_EQ(ProbeStatusText(none, 1018, StateProblemText(view)), "0 probes, no run yet, 0 failing");
  view.writable = false;
  view.failing_writer = "baselines";
  view.last_error = "Read-only file system";
  EXPECT_EQ(ProbeStatusText(none, 1018, StateProblemText(view)),
            "state dir not writable (baselines: Read-only file system); baselines and "
            "calibration kept in memory only; 0 probes, no run yet, 0 failing");
}

}  // namespace
}  // namespace iodrift::daemon
