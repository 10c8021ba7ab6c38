#include "collectors/probes/result_store.h"

#include <algorithm>

namespace iodrift::probes {

void ResultStore::Record(const ProbeResult& result) {
  std::lock_guard<std::mutex> lock(mu_);
  ProbeRecord& rec = records_[result.name];
  if (!rec.runs.empty() && (rec.last.kind != result.kind || rec.last.target != result.target)) {
    rec = ProbeRecord{};
  }
  if (rec.runs.empty()) {
    for (Outcome o : {Outcome::kOk, Outcome::kError, Outcome::kTimeout, Outcome::kSkipped}) {
      rec.runs[o] = 0;
    }
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
  if (!rec.baseline_bytes_per_second && result.success() && result.throughput_bytes_per_second) {
    rec.baseline_samples.push_back(*result.throughput_bytes_per_second);
    if (rec.baseline_samples.size() >= kBaselineRuns) {
      std::vector<double> s = rec.baseline_samples;
      std::sort(s.begin(), s.end());
      rec.baseline_bytes_per_second = s[s.size() / 2];
      rec.baseline_samples.clear();
    }
  }
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
}

}  // namespace iodrift::probes
