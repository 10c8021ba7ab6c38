#include "collectors/probes/result_store.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace iodrift::probes {
namespace {

// Copies the baseline view of `pb` into `rec`.
void Show(const ProbeBaseline& pb, ProbeRecord& rec) {
  rec.baseline = pb.baseline;
  rec.baseline_bytes_per_second = IsThroughputKind(pb.key.kind) ? pb.baseline : std::nullopt;
  rec.baseline_samples = pb.samples;
  rec.baseline_features = pb.baseline_features;
  rec.worst_ratio = pb.worst_ratio;
  rec.uptime_at_worst = pb.uptime_at_worst;
}

}  // namespace

ResultStore::ResultStore(std::size_t baseline_runs)
    : baseline_runs_(std::max<std::size_t>(baseline_runs, 1)) {}

ResultStore::~ResultStore() { Flush(); }

void ResultStore::EnablePersistence(const std::filesystem::path& state_dir,
                                    const std::optional<std::string>& boot_id,
                                    const std::optional<std::uint64_t>& boot_time_seconds,
                                    std::chrono::steady_clock::duration min_save_interval) {
  if (!boot_id || boot_id->empty()) {
    spdlog::warn(
        "baselines: no boot id (proc_root lacks sys/kernel/random/boot_id); baselines "
        "are kept in memory only");
    return;
  }
  LoadedBaselines loaded = LoadBaselines(state_dir, *boot_id, boot_time_seconds.value_or(0));
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = std::move(loaded.state);
    persist_ = true;
    state_dir_ = state_dir;
    min_save_interval_ = min_save_interval;
    dirty_ = true;
    for (auto& [name, rec] : records_) {
      if (auto it = state_.probes.find(name); it != state_.probes.end()) Show(it->second, rec);
    }
    spdlog::info("baselines: state_file={} boot_id={} probes={} past_boots={}",
                 (state_dir / kBaselineFileName).string(), *boot_id, state_.probes.size(),
                 state_.history.size());
  }
  // Write at once: a new boot's history move and a set-aside file's replacement are on disk
  // even if no probe ever completes.
  MaybeSave(true);
}

void ResultStore::Flush() { MaybeSave(true); }

void ResultStore::MaybeSave(bool force) {
  std::string text;
  std::uint64_t seq = 0;
  std::filesystem::path dir;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!persist_ || !dirty_) return;
    const auto now = std::chrono::steady_clock::now();
    if (!force && last_save_ != std::chrono::steady_clock::time_point{} &&
        now - last_save_ < min_save_interval_) {
      return;
    }
    text = SerializeBaselineState(state_);
    seq = ++save_seq_;
    dir = state_dir_;
    dirty_ = false;
    last_save_ = now;
  }
  std::lock_guard<std::mutex> save_lock(save_mu_);
  if (seq <= written_seq_) return;  // a newer state was written meanwhile
  auto written = WriteFileAtomically(dir, kBaselineFileName, text);
  if (!written) {
    if (!save_failing_) {
      spdlog::warn("baselines: cannot save: {}; keeping baselines in memory (retrying quietly)",
                   written.error().message);
      save_failing_ = true;
    }
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = true;  // retried after the next interval
    return;
  }
  if (save_failing_) {
    spdlog::info("baselines: saved again to {}", (dir / kBaselineFileName).string());
    save_failing_ = false;
  }
  written_seq_ = seq;
}

void ResultStore::Record(const ProbeResult& result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ProbeRecord& rec = records_[result.name];
    if (!rec.runs.empty() && (rec.last.kind != result.kind || rec.last.target != result.target)) {
      rec = ProbeRecord{};
    }
    if (rec.runs.empty()) {
      for (Outcome o : kAllOutcomes) rec.runs[o] = 0;
      rec.baseline_runs_needed = baseline_runs_;
    }
    rec.last = result;
    ++rec.runs[result.outcome];
    rec.read_bytes_total += result.bytes;
    if (result.latency) {
      auto& total = rec.latency_total;
      const auto& run = *result.latency;
      if (total.bucket_counts.size() < run.bucket_counts.size()) {
        total.bucket_counts.resize(run.bucket_counts.size());
      }
      for (std::size_t i = 0; i < run.bucket_counts.size(); ++i) {
        total.bucket_counts[i] += run.bucket_counts[i];
      }
      total.count += run.count;
      total.sum_seconds += run.sum_seconds;
    }

    ProbeBaseline& pb = state_.probes[result.name];
    const BaselineUpdate update = UpdateBaseline(pb, result, baseline_runs_);
    if (update.restarted) {
      rec.window.Clear();
      rec.correlations = DriftCorrelations{};
      rec.last_figure.reset();
      rec.baseline_ratio.reset();
    }
    if (update.changed) dirty_ = true;
    Show(pb, rec);
    if (auto figure = DriftFigure(result)) {
      rec.last_figure = figure;
      rec.baseline_ratio = update.ratio;
      if (CountsForWorst(result)) {
        rec.window.Add(DriftSample{*figure, ExtractDriftFeatures(result)});
        rec.correlations = rec.window.Correlations();
      }
    }
  }
  MaybeSave(false);
}

std::optional<ProbeRecord> ResultStore::Get(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(name);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

std::vector<ProbeRecord> ResultStore::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ProbeRecord> out;
  out.reserve(records_.size());
  for (const auto& [name, rec] : records_) out.push_back(rec);
  return out;
}

void ResultStore::Retain(const std::set<std::string>& names) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = records_.begin(); it != records_.end();) {
    it = names.count(it->first) ? std::next(it) : records_.erase(it);
  }
  for (auto it = state_.probes.begin(); it != state_.probes.end();) {
    if (names.count(it->first)) {
      ++it;
    } else {
      it = state_.probes.erase(it);
      dirty_ = true;
    }
  }
}

BaselineState ResultStore::Baselines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

}  // namespace iodrift::probes
