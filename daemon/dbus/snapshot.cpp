#include "daemon/dbus/snapshot.h"

#include <cmath>
#include <utility>

#include <spdlog/spdlog.h>

#include "collectors/common/collector.h"
#include "collectors/proc/boot.h"
#include "collectors/proc/meminfo.h"
#include "daemon/dbus/names.h"

namespace iodrift::daemon::dbus {
namespace {

// One of Snapshot's reads as a Collector, so that it runs on the CollectorRunner: its fields
// travel as one family of gauges labelled `field` (byte figures stay exact below 2^53).
class FieldsCollector final : public Collector {
 public:
  using ReadFn = std::function<Expected<SnapshotState>(const ProcRoot&)>;
  FieldsCollector(std::string name, ReadFn read) : name_(std::move(name)), read_(std::move(read)) {}
  std::string_view Name() const override { return name_; }
  Expected<void> Collect(const ProcRoot& root,
                         std::vector<prometheus::MetricFamily>& out) const override {
    auto fields = read_(root);
    if (!fields) return tl::unexpected(fields.error());
    prometheus::MetricFamily family;
    family.name = name_;
    family.type = prometheus::MetricType::Gauge;
    for (const auto& [field, value] : *fields) {
      prometheus::ClientMetric metric;
      metric.label.push_back({"field", field});
      metric.gauge.value = static_cast<double>(value);
      family.metric.push_back(std::move(metric));
    }
    out.push_back(std::move(family));
    return {};
  }

 private:
  std::string name_;
  ReadFn read_;
};

Expected<SnapshotState> MeminfoFields(const ProcRoot& root) {
  auto meminfo = proc::ReadMeminfo(root);
  if (!meminfo) return tl::unexpected(meminfo.error());
  SnapshotState out;
  for (const auto& field : meminfo->fields) out[field.name] = field.value;
  return out;
}

Expected<SnapshotState> BootFields(const ProcRoot& root) {
  auto boot = proc::ReadBootState(root);
  if (!boot) return tl::unexpected(boot.error());
  SnapshotState out;
  if (boot->uptime_seconds && *boot->uptime_seconds >= 0) {
    out["uptime_seconds"] = static_cast<std::uint64_t>(std::floor(*boot->uptime_seconds));
  }
  if (boot->boot_time_seconds) out["boot_time_seconds"] = *boot->boot_time_seconds;
  return out;
}

std::vector<std::shared_ptr<const Collector>> SnapshotCollectors() {
  return {std::make_shared<FieldsCollector>("meminfo", MeminfoFields),
          std::make_shared<FieldsCollector>("boot", BootFields)};
}

void AddFields(const CollectorRunner::Outcome& outcome, SnapshotState& out) {
  for (const auto& family : outcome.families) {
    for (const auto& metric : family.metric) {
      if (metric.label.empty()) continue;
      out[metric.label.front().value] = static_cast<std::uint64_t>(metric.gauge.value);
    }
  }
}

}  // namespace

SnapshotReader::SnapshotReader(ProcRoot root, std::chrono::milliseconds timeout)
    : runner_(SnapshotCollectors(), std::move(root)), timeout_(timeout) {}

Expected<SnapshotState> SnapshotReader::Read() {
  const auto outcomes = runner_.Scrape(CollectorRunner::Clock::now() + timeout_);
  // outcomes[0]: meminfo (the answer itself), outcomes[1]: boot state (optional extras).
  if (!outcomes[0].result) {
    const auto& error = outcomes[0].result.error();
    return Fail(error.code, "meminfo: " + error.message);
  }
  SnapshotState out;
  AddFields(outcomes[0], out);
  if (outcomes[1].result) {
    AddFields(outcomes[1], out);
  } else {
    spdlog::debug("dbus: snapshot without the boot state: {}", outcomes[1].result.error().message);
  }
  return out;
}

SnapshotAnswerer::SnapshotAnswerer(ProcRoot root, Locked locked, std::size_t max_waiting,
                                   std::chrono::milliseconds timeout)
    : reader_(std::move(root), timeout),
      locked_(std::move(locked)),
      max_waiting_(max_waiting),
      thread_([this] { Loop(); }) {}

SnapshotAnswerer::~SnapshotAnswerer() { Stop(); }

void SnapshotAnswerer::Submit(Reply&& reply) {
  std::unique_lock lock(mu_);
  if (stop_ || queued_.size() + in_hand_.size() >= max_waiting_) {
    const std::string why = stop_ ? "iodriftd is stopping"
                                  : std::to_string(queued_.size() + in_hand_.size()) +
                                        " Snapshot calls are waiting; try again later";
    lock.unlock();
    reply.returnError(sdbus::Error(stop_ ? kErrorFailed : kErrorBusy, why));
    return;
  }
  queued_.push_back(std::move(reply));
  cv_.notify_one();
}

void SnapshotAnswerer::FailAll(const std::string& why) {
  std::vector<Reply> orphans;
  {
    std::lock_guard lock(mu_);
    orphans.swap(queued_);
    for (auto& reply : in_hand_) orphans.push_back(std::move(reply));
    in_hand_.clear();
  }
  for (auto& reply : orphans) {
    try {
      reply.returnError(sdbus::Error(kErrorFailed, why));
    } catch (const sdbus::Error&) {
    }
  }
}

void SnapshotAnswerer::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SnapshotAnswerer::Loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queued_.empty(); });
      if (stop_) return;
      for (auto& reply : queued_) in_hand_.push_back(std::move(reply));
      queued_.clear();
    }
    const Expected<SnapshotState> state = reader_.Read();
    locked_([&] {
      std::vector<Reply> ready;
      {
        std::lock_guard lock(mu_);
        ready.swap(in_hand_);  // empty when FailAll answered them meanwhile
      }
      for (auto& reply : ready) {
        try {
          if (state) {
            reply.returnResults(*state);
          } else {
            reply.returnError(sdbus::Error(kErrorFailed, state.error().message));
          }
        } catch (const sdbus::Error& e) {
          spdlog::debug("dbus: snapshot reply failed: {}", e.getMessage());
        }
      }
    });
  }
}

}  // namespace iodrift::daemon::dbus
