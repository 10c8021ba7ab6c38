#include "daemon/exporter.h"

#include <atomic>
#include <chrono>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "collectors/common/families.h"
#include "collectors/proc/state_collectors.h"
#include "collectors/self/process_collector.h"
#include "daemon/collector_runner.h"
#include "daemon/exposition.h"
#include "iodrift_version.h"

namespace iodrift::daemon {

struct Exporter::CollectorSet {
  ProcRoot root;
  config::CollectorsConfig config;  // what it was built from (a reload with the same keeps it)
  // Runs the reads off the HTTP threads (one worker, sequentially), with a deadline.
  std::unique_ptr<CollectorRunner> runner;
  // Last outcome per collector, for log-once. Atomic: concurrent scrapes update it.
  std::unique_ptr<std::atomic<int>[]> last_state;  // 0 unknown, 1 ok, 2 failing
};

Exporter::Exporter(const ProcRoot& root, const config::CollectorsConfig& collectors,
                   std::chrono::milliseconds collector_timeout)
    : collector_timeout_(collector_timeout) {
  Reconfigure(root, collectors);
}

Exporter::~Exporter() = default;

void Exporter::Reconfigure(const ProcRoot& root, const config::CollectorsConfig& collectors) {
  // The same collectors over the same root: keep the runner (its stuck reads, its worker and
  // its kept files), so a reload costs nothing here.
  const auto current = Current();
  if (current && current->root.root() == root.root() && current->config == collectors) return;
  auto set = std::make_shared<CollectorSet>();
  set->config = collectors;
  // The collectors' procfs/sysfs files stay open between scrapes (re-read with pread).
  set->root = root.KeepingFilesOpen();
  auto made = proc::MakeStateCollectors(collectors);
  made.push_back(self::MakeProcessCollector());
  std::vector<std::shared_ptr<const Collector>> shared;
  shared.reserve(made.size());
  for (auto& collector : made) shared.emplace_back(std::move(collector));
  // Reads a replaced runner left blocked stay known to the new one (no second read of them).
  set->runner = std::make_unique<CollectorRunner>(std::move(shared), set->root,
                                                  kDefaultCollectorHedge, in_flight_);
  set->last_state = std::make_unique<std::atomic<int>[]>(set->runner->Size());
  // Log-once carries over: a collector failing before the reload is not logged again.
  if (current) {
    for (std::size_t i = 0; i < set->runner->Size(); ++i) {
      for (std::size_t j = 0; j < current->runner->Size(); ++j) {
        if (current->runner->Name(j) == set->runner->Name(i)) {
          set->last_state[i] = current->last_state[j].load();
        }
      }
    }
  }
  std::lock_guard lock(mu_);
  set_ = std::move(set);
}

void Exporter::AddTextSource(TextSource source) {
  std::lock_guard lock(mu_);
  text_sources_.push_back(std::move(source));
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
  auto stuck = MakeFamily(
      "iodrift_collector_stuck",
      "1 when the collector's read is blocked in the kernel (it missed this scrape's deadline, "
      "or an earlier read, also one from before a reload, has not returned): no other read of "
      "it starts until that one returns.",
      MetricType::Gauge);
  auto collisions =
      MakeFamily("iodrift_collector_name_collisions",
                 "Families the collector dropped on this scrape because their metric name (after "
                 "sanitising the kernel's field name) was already exported; the first one wins.",
                 MetricType::Gauge);
  // Two kernel fields can map to one metric name ("Active(file)" and "Active_file"); a second
  // HELP line for a name makes Prometheus reject the whole scrape.
  std::unordered_set<std::string> names;
  // The reads run on the runner's worker; the scrape waits for them until one deadline, so hung
  // reads cost it at most collector_timeout_ in all.
  const auto deadline = std::chrono::steady_clock::now() + collector_timeout_;
  auto outcomes = set->runner->Scrape(deadline);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const std::string_view name = set->runner->Name(i);
    const auto& result = outcomes[i].result;
    std::size_t dropped = 0;
    for (auto& family : outcomes[i].families) {
      if (names.insert(family.name).second) {
        out.push_back(std::move(family));
      } else {
        ++dropped;
      }
    }
    Labels labels{{"collector", std::string(name)}};
    AddSample(collisions, static_cast<double>(dropped), labels);
    AddSample(success, result ? 1 : 0, labels);
    AddSample(stuck, outcomes[i].stuck ? 1 : 0, labels);
    AddSample(duration, outcomes[i].took.count(), std::move(labels));
    int state = result ? 1 : 2;
    int previous = set->last_state[i].exchange(state);
    if (previous != state) {
      if (!result) {
        spdlog::warn("collector={} failing: {} (logged once; see iodrift_collector_success)", name,
                     result.error().message);
      } else if (previous == 2) {
        spdlog::info("collector={} recovered", name);
      }
    }
  }
  out.push_back(std::move(success));
  out.push_back(std::move(duration));
  out.push_back(std::move(stuck));
  out.push_back(std::move(collisions));

  auto build = MakeFamily("iodrift_build_info", "iodrift version and git revision; value 1.",
                          MetricType::Gauge);
  AddSample(build, 1, {{"revision", IODRIFT_REVISION}, {"version", IODRIFT_VERSION}});
  out.push_back(std::move(build));
  return out;
}

Exporter::Rendered Exporter::Render() const {
  Rendered out;
  // One allocation: sized from the previous scrape's text.
  out.head.reserve(last_text_size_.load(std::memory_order_relaxed) + 4096);
  WriteExposition(Collect(), out.head);
  last_text_size_.store(out.head.size(), std::memory_order_relaxed);
  std::vector<TextSource> text_sources;
  {
    std::lock_guard lock(mu_);
    text_sources = text_sources_;
  }
  for (const auto& source : text_sources) {
    if (auto part = source(); part && !part->text().empty()) out.tail.push_back(std::move(part));
  }
  return out;
}

std::string Exporter::RenderText() const {
  Rendered rendered = Render();
  for (const auto& part : rendered.tail) rendered.head += part->text();
  return std::move(rendered.head);
}

}  // namespace iodrift::daemon
