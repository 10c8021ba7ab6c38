#include "daemon/systemd_notify.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

namespace iodrift::daemon {
namespace {

// STATUS= is one line; a newline in the text would start a new assignment.
std::string OneLine(std::string_view text) {
  std::string out(text);
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

}  // namespace

SystemdNotifier::SystemdNotifier() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && *socket != '\0';
}

SystemdNotifier::~SystemdNotifier() { StopWatchdog(); }

void SystemdNotifier::Send(const std::string& message) {
  if (!enabled_) return;
  int r = sd_notify(0, message.c_str());
  if (r < 0) spdlog::debug("sd_notify failed: {}", r);
}

void SystemdNotifier::Ready(std::string_view status) {
  std::string message = "READY=1";
  if (!status.empty()) message += "\nSTATUS=" + OneLine(status);
  Send(message);
}

void SystemdNotifier::Status(std::string_view text) { Send("STATUS=" + OneLine(text)); }

void SystemdNotifier::Reloading() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const unsigned long long usec = static_cast<unsigned long long>(ts.tv_sec) * 1000000ULL +
                                  static_cast<unsigned long long>(ts.tv_nsec) / 1000ULL;
  Send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec));
}

void SystemdNotifier::Stopping() {
  Send("STOPPING=1");
  StopWatchdog();
}

std::optional<std::chrono::microseconds> SystemdNotifier::StartWatchdog(
    LivenessCheck liveness, StatusFn status, std::chrono::milliseconds status_interval) {
  StopWatchdog();
  if (!enabled_) return std::nullopt;
  uint64_t usec = 0;
  const bool watchdog = sd_watchdog_enabled(0, &usec) > 0 && usec > 0;
  std::chrono::microseconds period;
  if (watchdog) {
    period = std::chrono::microseconds(usec / 2);
  } else if (status) {
    period = status_interval;
  } else {
    return std::nullopt;  // nothing to do periodically
  }
  if (period < std::chrono::milliseconds(1)) period = std::chrono::milliseconds(1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
  }
  if (!liveness) liveness = [] { return true; };
  thread_ = std::thread(&SystemdNotifier::Loop, this, period, watchdog, std::move(liveness),
                        std::move(status));
  if (!watchdog) return std::nullopt;
  spdlog::info("systemd watchdog interval={}ms ping_every={}ms", usec / 1000, usec / 2000);
  return std::chrono::microseconds(usec);
}

void SystemdNotifier::Loop(std::chrono::microseconds period, bool watchdog, LivenessCheck liveness,
                           StatusFn status) {
  bool failing = false;
  for (;;) {
    // Tick first, then sleep: the first ping goes out as soon as the watchdog starts.
    if (watchdog) {
      const bool alive = liveness();
      if (alive) {
        Send("WATCHDOG=1");
        std::lock_guard<std::mutex> lock(mu_);
        ++pings_;
      }
      if (!alive && !failing) {
        spdlog::warn("liveness check failed: not pinging the systemd watchdog");
      } else if (alive && failing) {
        spdlog::info("liveness check passes again: pinging the systemd watchdog");
      }
      failing = !alive;
    }
    if (status) Status(status());
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, period, [this] { return stop_; })) return;
  }
}

void SystemdNotifier::StopWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

std::size_t SystemdNotifier::WatchdogPings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pings_;
}

std::string FormatProbeStatus(std::size_t probes, std::optional<double> last_run_age_seconds,
                              std::size_t failing) {
  std::string out = std::to_string(probes) + (probes == 1 ? " probe, " : " probes, ");
  if (last_run_age_seconds) {
    const long long age = std::max(0LL, std::llround(*last_run_age_seconds));
    out += "last run " + std::to_string(age) + " s ago, ";
  } else {
    out += "no run yet, ";
  }
  out += std::to_string(failing) + " failing";
  return out;
}

std::string ProbeStatusText(const analysis::ProbeSnapshot& states, double now_epoch_seconds,
                            std::string_view state_problem) {
  std::optional<double> last_end;
  std::size_t failing = 0;
  for (const auto& state : states) {
    if (!state->ran()) continue;
    const auto& r = state->last;
    if (r.start_time_seconds > 0) {
      const double end = r.start_time_seconds + r.duration_seconds;
      last_end = last_end ? std::max(*last_end, end) : end;
    }
    if (!r.success()) ++failing;
  }
  std::optional<double> age;
  if (last_end) age = now_epoch_seconds - *last_end;
  std::string text = FormatProbeStatus(states.size(), age, failing);
  if (state_problem.empty()) return text;
  return std::string(state_problem) + "; " + text;
}

}  // namespace iodrift::daemon
