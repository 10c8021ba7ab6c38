// slabinfo collector: a bounded, stable set of slab caches (include/exclude regexes in
// `collectors.slabinfo`) plus the total over all caches. /proc/slabinfo is mode 0400, so an
// unprivileged daemon reports success 0 here.
//
// Cost cap: /proc/slabinfo is the one expensive file of a scrape. The kernel walks every cache's
// partial slab lists with interrupts off to fill it (slab_show, count_partial_free_approx): on
// the 2-core dev VM that was ~40 % of a whole scrape's CPU in `perf record`. Read from
// a live procfs, it is therefore re-read at most every kSlabinfoMaxAge; scrapes in between export
// the previous read's figures, and iodrift_slabinfo_age_seconds says how old they are (0 right
// after a read). Slab caches move over minutes, not seconds. A --proc-root fixture tree (not
// procfs) is read on every scrape, as before, and exports no age.
#include <linux/magic.h>
#include <sys/vfs.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "collectors/common/families.h"
#include "collectors/proc/name_filter.h"
#include "collectors/proc/slabinfo.h"
#include "collectors/proc/state_collectors.h"

namespace iodrift::proc {
namespace {

// Hard cap on exported caches, whatever the regexes say: 4 series each.
constexpr std::size_t kMaxSlabCaches = 256;

// A live /proc/slabinfo is re-read at most this often (see the top of this file).
constexpr std::chrono::seconds kSlabinfoMaxAge{10};

bool OnProcfs(const std::filesystem::path& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
}

class SlabinfoCollector final : public Collector {
 public:
  explicit SlabinfoCollector(const SlabinfoOptions& options)
      : filter_(options.include, options.exclude) {}

  std::string_view Name() const override { return "slabinfo"; }

  Expected<void> Collect(const ProcRoot& root,
                         std::vector<prometheus::MetricFamily>& out) const override {
    using prometheus::MetricType;
    using Clock = std::chrono::steady_clock;
    std::unique_lock lock(mu_);
    const auto now = Clock::now();
    if (!live_) live_ = OnProcfs(root.Path("slabinfo"));
    std::optional<double> age;
    if (*live_ && last_ && now - last_read_ < kSlabinfoMaxAge) {
      age = std::chrono::duration<double>(now - last_read_).count();
    } else {
      auto read = ReadSlabinfo(root);
      if (!read) {
        last_.reset();
        return tl::unexpected(read.error());
      }
      last_ = std::move(*read);
      last_read_ = now;
      if (*live_) age = 0.0;
    }
    const Slabinfo* slabinfo = &*last_;
    auto objects = MakeFamily("iodrift_slabinfo_objects",
                              "Allocated objects in the slab cache (/proc/slabinfo num_objs).",
                              MetricType::Gauge);
    auto active = MakeFamily("iodrift_slabinfo_active_objects",
                             "Objects in use in the slab cache (/proc/slabinfo active_objs).",
                             MetricType::Gauge);
    auto size = MakeFamily("iodrift_slabinfo_object_size_bytes",
                           "Size of one object of the slab cache.", MetricType::Gauge);
    auto bytes = MakeFamily("iodrift_slabinfo_bytes",
                            "Memory held by the slab cache: slabs x pages per slab x page size.",
                            MetricType::Gauge);
    // A kernel may list two caches under one name (e.g. after a module reload); their figures
    // are summed so that every {slab} series is unique. Order of first appearance is kept.
    std::vector<SlabCache> selected;
    std::unordered_map<std::string_view, std::size_t> index;
    for (const auto& cache : slabinfo->caches) {
      if (!filter_.Matches(cache.name)) continue;
      auto [it, inserted] = index.emplace(cache.name, selected.size());
      if (inserted) {
        if (selected.size() == kMaxSlabCaches) {
          index.erase(it);
          continue;
        }
        selected.push_back(cache);
        continue;
      }
      auto& merged = selected[it->second];
      merged.objects += cache.objects;
      merged.active_objects += cache.active_objects;
      merged.bytes += cache.bytes;
      merged.object_size = std::max(merged.object_size, cache.object_size);
    }
    for (const auto& cache : selected) {
      Labels labels{{"slab", cache.name}};
      AddSample(objects, static_cast<double>(cache.objects), labels);
      AddSample(active, static_cast<double>(cache.active_objects), labels);
      AddSample(size, static_cast<double>(cache.object_size), labels);
      AddSample(bytes, static_cast<double>(cache.bytes), std::move(labels));
    }
    auto total = MakeFamily("iodrift_slabinfo_total_bytes",
                            "Memory held by all slab caches in /proc/slabinfo.", MetricType::Gauge);
    AddSample(total, static_cast<double>(slabinfo->total_bytes));
    for (auto* family : {&objects, &active, &size, &bytes, &total})
      out.push_back(std::move(*family));
    if (age) {
      auto age_family = MakeFamily("iodrift_slabinfo_age_seconds",
                                   "Age of the /proc/slabinfo read exported (re-read at most every "
                                   "10 s: the kernel's slabinfo is costly).",
                                   MetricType::Gauge);
      AddSample(age_family, *age);
      out.push_back(std::move(age_family));
    }
    return {};
  }

 private:
  NameFilter filter_;
  mutable std::mutex mu_;
  mutable std::optional<bool> live_;  // slabinfo is on procfs (decided at the first read)
  mutable std::optional<Slabinfo> last_;
  mutable std::chrono::steady_clock::time_point last_read_{};
};

}  // namespace

std::unique_ptr<Collector> MakeSlabinfoCollector(const SlabinfoOptions& options) {
  return std::make_unique<SlabinfoCollector>(options);
}

}  // namespace iodrift::proc
