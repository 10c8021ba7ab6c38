#include "daemon/exporter.h"

#include <atomic>
#include <chrono>
#include <sstream>

#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include "collectors/common/families.h"
#include "collectors/proc/state_collectors.h"
#include "collectors/self/process_collector.h"
#include "iodrift_version.h"

namespace iodrift::daemon {

struct Exporter::CollectorSet {
  ProcRoot root;
  std::vector<std::unique_ptr<Collector>> collectors;
  // Last outcome per collector, for log-once. Atomic: concurrent scrapes update it.
  std::unique_ptr<std::atomic<int>[]> last_state;  // 0 unknown, 1 ok, 2 failing
};

Exporter::Exporter(const ProcRoot& root, const config::CollectorsConfig& collectors) {
  Reconfigure(root, collectors);
}

Exporter::~Exporter() = default;

void Exporter::Reconfigure(const ProcRoot& root, const config::CollectorsConfig& collectors) {
  auto set = std::make_shared<CollectorSet>();
  set->root = root;
  set->collectors = proc::MakeStateCollectors(collectors);
  set->collectors.push_back(self::MakeProcessCollector());
  set->last_state = std::make_unique<std::atomic<int>[]>(set->collectors.size());
  std::lock_guard lock(mu_);
  set_ = std::move(set);
}

void Exporter::AddSource(FamilySource source) {
  std::lock_guard lock(mu_);
  sources_.push_back(std::move(source));
}

std::shared_ptr<const Exporter::CollectorSet> Exporter::Current() const {
  std::lock_guard lock(mu_);
  return set_;
}

std::vector<prometheus::MetricFamily> Exporter::Collect() const {
  using prometheus::MetricType;
  auto set = Current();
  std::vector<prometheus::MetricFamily> out;
  out.reserve(512);
  auto success =
      MakeFamily("iodrift_collector_success",
                 "1 when the collector read its source on this scrape, else 0.", MetricType::Gauge);
  auto duration = MakeFamily("iodrift_collector_duration_seconds",
                             "Time the collector took on this scrape.", MetricType::Gauge);
  for (std::size_t i = 0; i < set->collectors.size(); ++i) {
    const auto& collector = *set->collectors[i];
    auto start = std::chrono::steady_clock::now();
    auto result = collector.Collect(set->root, out);
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    Labels labels{{"collector", std::string(collector.Name())}};
    AddSample(success, result ? 1 : 0, labels);
    AddSample(duration, took.count(), std::move(labels));
    int state = result ? 1 : 2;
    int previous = set->last_state[i].exchange(state);
    if (previous != state) {
      if (!result) {
        spdlog::warn("collector={} failing: {} (logged once; see iodrift_collector_success)",
                     collector.Name(), result.error().message);
      } else if (previous == 2) {
        spdlog::info("collector={} recovered", collector.Name());
      }
    }
  }
  out.push_back(std::move(success));
  out.push_back(std::move(duration));

  auto build = MakeFamily("iodrift_build_info", "iodrift version and git revision; value 1.",
                          MetricType::Gauge);
  AddSample(build, 1, {{"revision", IODRIFT_REVISION}, {"version", IODRIFT_VERSION}});
  out.push_back(std::move(build));

  std::vector<FamilySource> sources;
  {
    std::lock_guard lock(mu_);
    sources = sources_;
  }
  for (const auto& source : sources) source(out);
  return out;
}

std::string Exporter::RenderText() const {
  std::ostringstream stream;
  prometheus::TextSerializer().Serialize(stream, Collect());
  return std::move(stream).str();
}

}  // namespace iodrift::daemon
