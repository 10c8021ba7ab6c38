#include "collectors/analysis/probe_states.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "collectors/analysis/verdict.h"
#include "collectors/common/state_health.h"

namespace iodrift::analysis {

using namespace probes;  // NOLINT: reads what the probes measured
namespace {

// Copies the baseline view of `pb` into `state`.
void Show(const ProbeBaseline& pb, ProbeState& state) {
  state.baseline = pb.baseline;
  state.baseline_samples = pb.samples;
  state.baseline_features = pb.baseline_features;
  state.worst_ratio = pb.worst_ratio;
  state.uptime_at_worst = pb.uptime_at_worst;
}

// A state for `spec` that never ran: counters at zero, `last` naming the probe.
ProbeState FreshState(const ProbeSpec& spec, std::uint64_t generation, std::size_t baseline_runs) {
  ProbeState s;
  s.spec = spec;
  s.generation = generation;
  s.last.name = spec.name;
  s.last.kind = spec.kind;
  s.last.target = spec.target;
  s.last.outcome = Outcome::kSkipped;
  for (Outcome o : kAllOutcomes) s.runs[o] = 0;
  s.baseline_runs_needed = baseline_runs;
  return s;
}

void AddLatency(LatencyHistogram& total, const LatencyHistogram& run) {
  if (total.bucket_counts.size() < run.bucket_counts.size()) {
    total.bucket_counts.resize(run.bucket_counts.size());
  }
  for (std::size_t i = 0; i < run.bucket_counts.size(); ++i) {
    total.bucket_counts[i] += run.bucket_counts[i];
  }
  total.count += run.count;
  total.sum_seconds += run.sum_seconds;
}

}  // namespace

bool ProbeState::ran() const {
  std::uint64_t total = 0;
  for (const auto& [outcome, n] : runs) total += n;
  return total > 0;
}

std::optional<double> ProbeState::baseline_bytes_per_second() const {
  return IsThroughputKind(spec.kind) ? baseline : std::nullopt;
}

std::optional<double> ProbeState::baseline_ops_per_second() const {
  return IsThroughputKind(spec.kind) ? std::nullopt : baseline;
}

std::size_t ProbeState::baseline_runs_counted() const {
  return baseline ? baseline_runs_needed : baseline_samples.size();
}

ProbeStates::ProbeStates(std::size_t baseline_runs)
    : baseline_runs_(std::max<std::size_t>(baseline_runs, 1)) {}

ProbeStates::~ProbeStates() { Flush(); }

void ProbeStates::EnablePersistence(const std::filesystem::path& state_dir,
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
    boot_id_for_load_ = *boot_id;
    boot_time_for_load_ = boot_time_seconds.value_or(0);
    min_save_interval_ = min_save_interval;
    dirty_ = true;
    if (loaded.deferred) {
      load_deferred_ = true;
      spdlog::warn(
          "baselines: cannot read {} now ({}); it is left in place and not saved over; "
          "keeping baselines in memory and loading it again every {} s",
          (state_dir / kBaselineFileName).string(), loaded.deferred->message,
          std::chrono::duration_cast<std::chrono::seconds>(min_save_interval).count());
      StateHealth::Process().SaveFailed(
          "baselines", "not saved: the state file could not be read: " + loaded.deferred->message);
      last_save_ = std::chrono::steady_clock::now();
    }
    // Baselines of probes no longer configured are not carried on.
    for (auto it = state_.probes.begin(); it != state_.probes.end();) {
      it = slots_.empty() || slots_.count(it->first) ? std::next(it) : state_.probes.erase(it);
    }
    for (auto& [name, slot] : slots_) {
      auto it = state_.probes.find(name);
      if (it == state_.probes.end()) continue;
      auto next = std::make_shared<ProbeState>(*slot.state);
      Show(it->second, *next);
      slot.state = std::move(next);
    }
    StoreVerdictsLocked();
    PublishLocked();
    spdlog::info("baselines: state_file={} boot_id={} probes={} past_boots={}",
                 (state_dir / kBaselineFileName).string(), *boot_id, state_.probes.size(),
                 state_.history.size());
  }
  // Write at once: a new boot's history move and a set-aside file's replacement are on disk
  // even if no probe ever completes.
  MaybeSave(true);
}

void ProbeStates::Flush() { MaybeSave(true); }

bool ProbeStates::LoadDeferred() {
  std::filesystem::path dir;
  std::string boot_id;
  std::uint64_t boot_time = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!load_deferred_) return true;
    dir = state_dir_;
    boot_id = boot_id_for_load_;
    boot_time = boot_time_for_load_;
  }
  LoadedBaselines loaded = LoadBaselines(dir, boot_id, boot_time, 1);
  std::lock_guard<std::mutex> lock(mu_);
  if (loaded.deferred) {
    StateHealth::Process().SaveFailed(
        "baselines", "not saved: the state file could not be read: " + loaded.deferred->message);
    return false;
  }
  // What the file holds wins for every probe whose baseline has not formed here meanwhile.
  for (auto& [name, pb] : loaded.state.probes) {
    auto slot = slots_.find(name);
    if (slot == slots_.end()) continue;
    auto here = state_.probes.find(name);
    if (here != state_.probes.end() && here->second.baseline) continue;
    state_.probes[name] = pb;
    auto next = std::make_shared<ProbeState>(*slot->second.state);
    Show(pb, *next);
    slot->second.state = std::move(next);
  }
  state_.history = std::move(loaded.state.history);
  load_deferred_ = false;
  dirty_ = true;
  StoreVerdictsLocked();
  PublishLocked();
  spdlog::info("baselines: loaded {} after all: probes={} past_boots={}",
               (dir / kBaselineFileName).string(), loaded.state.probes.size(),
               state_.history.size());
  return true;
}

void ProbeStates::MaybeSave(bool force) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!persist_ || !dirty_) return;
    const auto now = std::chrono::steady_clock::now();
    if (!force && last_save_ != std::chrono::steady_clock::time_point{} &&
        now - last_save_ < min_save_interval_) {
      return;
    }
    if (load_deferred_) last_save_ = now;
  }
  // A state file that could not be read is never saved over: it is loaded first.
  {
    std::lock_guard<std::mutex> save_lock(save_mu_);
    if (!LoadDeferred()) return;
  }
  std::string text;
  std::uint64_t seq = 0;
  std::filesystem::path dir;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!persist_ || !dirty_) return;
    const auto now = std::chrono::steady_clock::now();
    // Never a file larger than LoadBaselines reads back (it would be set aside at the next
    // start): the oldest history goes first.
    text = SerializeBaselineState(state_);
    if (text.size() > kMaxBaselineFileBytes) {
      const Compaction dropped = FitBaselineState(state_);
      spdlog::warn(
          "baselines: state over {} bytes; dropped past_boots={} forming_samples={} probes={}",
          kMaxBaselineFileBytes, dropped.past_boots, dropped.samples, dropped.probes);
      text = SerializeBaselineState(state_);
    }
    seq = ++save_seq_;
    dir = state_dir_;
    dirty_ = false;
    last_save_ = now;
  }
  std::lock_guard<std::mutex> save_lock(save_mu_);
  if (seq <= written_seq_) return;  // a newer state was written meanwhile
  auto written = WriteFileAtomically(dir, kBaselineFileName, text);
  if (!written) {
    StateHealth::Process().SaveFailed("baselines", written.error().message);
    if (!save_failing_) {
      spdlog::warn("baselines: cannot save: {}; keeping baselines in memory (retrying quietly)",
                   written.error().message);
      save_failing_ = true;
    }
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = true;  // retried after the next interval
    return;
  }
  StateHealth::Process().Saved("baselines");
  if (save_failing_) {
    spdlog::info("baselines: saved again to {}", (dir / kBaselineFileName).string());
    save_failing_ = false;
  }
  written_seq_ = seq;
}

std::vector<DefinedProbe> ProbeStates::Define(const std::vector<ProbeSpec>& specs) {
  std::vector<DefinedProbe> defined;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, Slot> next;
    std::vector<std::string> order;
    for (const auto& spec : specs) {
      if (next.count(spec.name)) continue;  // duplicate names are a config error; keep the first
      auto old = slots_.find(spec.name);
      Slot slot;
      if (old != slots_.end() && old->second.state->spec == spec) {  // every field (operator==)
        slot = old->second;
      } else if (old != slots_.end() && old->second.state->spec.kind == spec.kind &&
                 old->second.state->spec.target == spec.target) {
        // Same measurement, other schedule or size: the state carries on under a new
        // generation (a run started under the old spec is dropped; a size change restarts
        // the baseline with the next result, UpdateBaseline).
        slot.generation = next_generation_++;
        auto state = std::make_shared<ProbeState>(*old->second.state);
        state->spec = spec;
        state->generation = slot.generation;
        slot.state = std::move(state);
      } else {
        // New, or another kind or target: nothing of the old figures may mix in.
        slot.generation = next_generation_++;
        auto state =
            std::make_shared<ProbeState>(FreshState(spec, slot.generation, baseline_runs_));
        if (auto it = state_.probes.find(spec.name); it != state_.probes.end()) {
          if (it->second.key.kind == spec.kind && it->second.key.target == spec.target) {
            Show(it->second, *state);  // a baseline loaded from the state file for this boot
          } else {
            state_.probes.erase(it);
            dirty_ = true;
          }
        }
        slot.state = std::move(state);
      }
      defined.push_back({spec, slot.generation});
      order.push_back(spec.name);
      next[spec.name] = std::move(slot);
    }
    std::set<std::string> names(order.begin(), order.end());
    for (auto it = state_.probes.begin(); it != state_.probes.end();) {
      if (names.count(it->first)) {
        ++it;
      } else {
        it = state_.probes.erase(it);
        dirty_ = true;
      }
    }
    slots_ = std::move(next);
    order_ = std::move(order);
    StoreVerdictsLocked();
    PublishLocked();
  }
  MaybeSave(false);
  return defined;
}

bool ProbeStates::Record(const ProbeResult& result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(result.name);
    if (it == slots_.end() || it->second.generation != result.generation) return false;
    auto next = std::make_shared<ProbeState>(*it->second.state);
    ProbeState& s = *next;
    s.last = result;
    ++s.runs[result.outcome];
    s.read_bytes_total += result.bytes;
    if (result.latency) AddLatency(s.latency_total, *result.latency);

    ProbeBaseline& pb = state_.probes[result.name];
    const BaselineUpdate update = UpdateBaseline(pb, result, baseline_runs_);
    if (update.restarted) {
      s.window.Clear();
      s.correlations = DriftCorrelations{};
      s.last_figure.reset();
      s.baseline_ratio.reset();
      s.recent_ratios.clear();
    }
    if (update.changed) dirty_ = true;
    Show(pb, s);
    if (auto figure = DriftFigure(result)) {
      s.last_figure = figure;
      s.baseline_ratio = update.ratio;
      if (update.ratio) {
        s.recent_ratios.push_back(*update.ratio);
        if (s.recent_ratios.size() > kRecentRatios) s.recent_ratios.erase(s.recent_ratios.begin());
      }
      if (CountsForWorst(result)) {
        s.window.Add(DriftSample{*figure, ExtractDriftFeatures(result)});
        s.correlations = s.window.Correlations();
      }
    }
    if (history_enabled_) {
      s.history =
          s.history.Append(MakeHistoryPoint(result, s.baseline, boot_id_), history_capacity_);
    }
    StoreVerdict(s, TwinLocked(s));
    if (update.worst) {
      // The boot record keeps what the verdict named at the worst run (boot_record.h).
      pb.record.worst_verdict = CauseName(s.verdict.cause);
    }
    it->second.state = std::move(next);
    // The probes whose twin this one is: their verdict may change with this run.
    for (auto& [name, slot] : slots_) {
      if (name != result.name && IsTwinOf(*slot.state, *it->second.state)) {
        StoreVerdictLocked(slot);
      }
    }
    PublishLocked();
  }
  MaybeSave(false);
  return true;
}

void ProbeStates::RecordDiagnosis(const std::string& name, std::uint64_t generation,
                                  DiagnoseReport report) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(name);
  if (it == slots_.end() || it->second.generation != generation) return;
  auto next = std::make_shared<ProbeState>(*it->second.state);
  next->diagnosis = std::make_shared<const DiagnoseReport>(std::move(report));
  it->second.state = std::move(next);
  PublishLocked();
}

void ProbeStates::RecordExperimentRun(const std::string& name, std::uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(name);
  if (it == slots_.end() || it->second.generation != generation) return;
  auto next = std::make_shared<ProbeState>(*it->second.state);
  ++next->experiment_runs;
  it->second.state = std::move(next);
  PublishLocked();
}

const ProbeState* ProbeStates::TwinLocked(const ProbeState& state) const {
  for (const auto& name : order_) {
    const ProbeState& other = *slots_.at(name).state;
    if (IsTwinOf(state, other)) return &other;
  }
  return nullptr;
}

void ProbeStates::StoreVerdictLocked(Slot& slot) {
  const ProbeState* twin = TwinLocked(*slot.state);
  Verdict verdict = VerdictOf(*slot.state, twin);
  std::string twin_name = twin ? twin->spec.name : std::string();
  if (verdict == slot.state->verdict && twin_name == slot.state->twin) return;
  auto next = std::make_shared<ProbeState>(*slot.state);
  next->verdict = std::move(verdict);
  next->twin = std::move(twin_name);
  slot.state = std::move(next);
}

void ProbeStates::StoreVerdictsLocked() {
  for (const auto& name : order_) StoreVerdictLocked(slots_.at(name));
}

void ProbeStates::PublishLocked() {
  auto snapshot = std::make_shared<ProbeSnapshot>();
  snapshot->reserve(order_.size());
  for (const auto& name : order_) snapshot->push_back(slots_.at(name).state);
  published_ = std::move(snapshot);
}

std::shared_ptr<const ProbeSnapshot> ProbeStates::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_;
}

std::shared_ptr<const ProbeState> ProbeStates::Get(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(name);
  return it == slots_.end() ? nullptr : it->second.state;
}

void ProbeStates::ConfigureHistory(bool enabled, std::size_t capacity) {
  std::lock_guard<std::mutex> lock(mu_);
  capacity = std::clamp(capacity, kMinHistoryRuns, kMaxHistoryRuns);
  if (enabled == history_enabled_ && capacity == history_capacity_) return;
  history_enabled_ = enabled;
  history_capacity_ = capacity;
  for (auto& [name, slot] : slots_) {
    auto next = std::make_shared<ProbeState>(*slot.state);
    next->history = enabled ? next->history.Trimmed(capacity) : HistoryRing{};
    slot.state = std::move(next);
  }
  PublishLocked();
}

std::size_t ProbeStates::history_capacity() const {
  std::lock_guard<std::mutex> lock(mu_);
  return history_capacity_;
}

void ProbeStates::SetBootId(std::optional<std::string> boot_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (boot_id && !boot_id->empty()) {
    boot_id_ = std::make_shared<const std::string>(std::move(*boot_id));
  } else {
    boot_id_.reset();
  }
}

BaselineState ProbeStates::Baselines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

}  // namespace iodrift::analysis
