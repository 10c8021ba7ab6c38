#include "daemon/dbus/result_dict.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "collectors/probes/result_fields.h"

namespace iodrift::daemon::dbus {
namespace {

// The value of `key` when present with type T, else nullopt.
template <typename T>
std::optional<T> Get(const Dict& dict, const std::string& key) {
  auto it = dict.find(key);
  if (it == dict.end()) return std::nullopt;
  try {
    if (!it->second.containsValueOfType<T>()) return std::nullopt;
    return it->second.get<T>();
  } catch (const sdbus::Error&) {
    return std::nullopt;
  }
}

// The walk of result_fields.h as a{sv}: scalars as their D-Bus types (a field that does not
// apply is left out), kRecord groups as a{sv}, kMap groups as typed maps (a{sd}, a{st}, a{sx});
// an empty or absent group is left out.
class DictWriter : public probes::ResultFieldVisitor {
 public:
  Dict Take() { return std::move(top_); }

  void Text(std::string_view key, const std::string& value) override { Put(key, value); }
  void Flag(std::string_view key, bool value) override { Put(key, value); }
  void Real(std::string_view key, const std::optional<double>& value) override {
    if (value) Put(key, *value);
  }
  void Count(std::string_view key, const std::optional<std::uint64_t>& value) override {
    if (value) Put(key, *value);
  }
  void Signed(std::string_view key, std::int64_t value) override { Put(key, value); }
  void TextList(std::string_view key, const std::vector<std::string>& values) override {
    Put(key, values);
  }
  void BeginGroup(std::string_view key, probes::GroupShape shape, bool present) override {
    groups_.push_back(Open{std::string(key), shape, present, {}, {}, {}, {}});
  }
  void EndGroup() override {
    Open g = std::move(groups_.back());
    groups_.pop_back();
    if (!g.present) return;
    if (g.shape == probes::GroupShape::kRecord) {
      if (!g.record.empty()) Put(g.key, g.record);
    } else if (!g.reals.empty()) {
      Put(g.key, g.reals);
    } else if (!g.counts.empty()) {
      Put(g.key, g.counts);
    } else if (!g.signeds.empty()) {
      Put(g.key, g.signeds);
    }
  }

 private:
  struct Open {
    std::string key;
    probes::GroupShape shape;
    bool present;
    Dict record;
    std::map<std::string, double> reals;
    std::map<std::string, std::uint64_t> counts;
    std::map<std::string, std::int64_t> signeds;
  };
  template <typename T>
  void Put(std::string_view key, const T& value) {
    std::string k(key);
    if (groups_.empty()) {
      top_[k] = sdbus::Variant(value);
      return;
    }
    Open& g = groups_.back();
    if (g.shape == probes::GroupShape::kRecord) {
      g.record[k] = sdbus::Variant(value);
    } else if constexpr (std::is_same_v<T, double>) {
      g.reals[k] = value;
    } else if constexpr (std::is_same_v<T, std::uint64_t>) {
      g.counts[k] = value;
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
      g.signeds[k] = value;
    }
  }
  Dict top_;
  std::vector<Open> groups_;
};

template <typename Map>
void CopyMap(const Dict& d, const std::string& key, Map& out) {
  if (auto v = Get<std::map<std::string, typename Map::mapped_type>>(d, key)) {
    out.insert(v->begin(), v->end());
  }
}

}  // namespace

Dict ToDict(const probes::ProbeResult& r) {
  DictWriter writer;
  probes::VisitProbeResult(r, writer);
  return writer.Take();
}

probes::ProbeResult FromDict(const Dict& d) {
  probes::ProbeResult r;
  if (auto v = Get<std::string>(d, "name")) r.name = *v;
  if (auto v = Get<std::string>(d, "kind")) {
    if (auto kind = probes::ParseProbeKind(*v)) r.kind = *kind;
  }
  if (auto v = Get<std::string>(d, "target")) r.target = *v;
  r.outcome = probes::Outcome::kError;
  if (auto v = Get<std::string>(d, "result")) {
    for (auto o : probes::kAllOutcomes) {
      if (*v == probes::OutcomeName(o)) r.outcome = o;
    }
  } else if (auto ok = Get<bool>(d, "success"); ok && *ok) {
    r.outcome = probes::Outcome::kOk;
  }
  if (auto v = Get<bool>(d, "supported")) r.supported = *v;
  if (auto v = Get<std::string>(d, "error")) r.error = *v;
  if (auto v = Get<double>(d, "start_time_seconds")) r.start_time_seconds = *v;
  if (auto v = Get<double>(d, "duration_seconds")) r.duration_seconds = *v;
  if (auto v = Get<std::uint64_t>(d, "bytes")) r.bytes = *v;
  r.throughput_bytes_per_second = Get<double>(d, "throughput_bytes_per_second");
  CopyMap(d, "ops_per_second", r.ops_per_second);
  if (auto v = Get<Dict>(d, "latency_seconds")) {
    probes::LatencyHistogram latency;
    latency.p50_seconds = Get<double>(*v, "p50");
    latency.p99_seconds = Get<double>(*v, "p99");
    latency.count = Get<std::uint64_t>(*v, "count").value_or(0);
    r.latency = latency;
  }
  if (auto v = Get<std::map<std::string, double>>(d, "cpu_seconds")) {
    if (auto it = v->find("user"); it != v->end()) r.cpu_user_seconds = it->second;
    if (auto it = v->find("system"); it != v->end()) r.cpu_system_seconds = it->second;
  }
  if (auto v = Get<std::vector<std::string>>(d, "suspect")) r.suspect = *v;
  CopyMap(d, "context", r.context);
  CopyMap(d, "vmstat_delta", r.vmstat_delta);
  CopyMap(d, "extra", r.extra);
  if (auto v = Get<Dict>(d, "target_info")) {
    auto text = [&](const char* key) { return Get<std::string>(*v, key).value_or(""); };
    r.target_info.device = text("device");
    r.target_info.fstype = text("fstype");
    r.target_info.scheduler = text("scheduler");
    r.target_info.read_ahead_kb = text("read_ahead_kb");
    r.target_info.rotational = text("rotational");
    r.target_info.loop_dio = text("loop_dio");
    r.target_info.logical_block_size =
        static_cast<std::uint32_t>(Get<std::uint64_t>(*v, "logical_block_size").value_or(0));
    r.target_info.remote = text("remote");
    if (auto list = Get<std::vector<std::string>>(*v, "devices")) r.target_info.devices = *list;
    if (auto list = Get<std::vector<std::string>>(*v, "members")) r.target_info.members = *list;
  }
  if (auto v = Get<std::string>(d, "mode")) r.mode = *v;
  if (auto v = Get<std::string>(d, "residency_witness")) r.residency_witness = *v;
  r.uptime_seconds = Get<double>(d, "uptime_seconds");
  CopyMap(d, "dentry_state", r.dentry_state);
  CopyMap(d, "pressure_delta_us", r.pressure_delta_us);
  r.fragmentation_index = Get<double>(d, "fragmentation_index");
  r.spec_size = Get<std::uint64_t>(d, "spec_size");
  CopyMap(d, "member_figures", r.member_figures);
  CopyMap(d, "member_ratios", r.member_ratios);
  if (auto v = Get<Dict>(d, "member_errors")) {
    for (const auto& [member, value] : *v) {
      if (auto text = Get<std::string>(*v, member)) r.member_errors[member] = *text;
    }
  }
  if (auto v = Get<Dict>(d, "time_seconds")) {
    probes::TimeParts tp;
    for (const probes::TimePartField& f : probes::TimePartFields())
      f.Set(tp, Get<double>(*v, std::string(f.name)));
    r.time_seconds = tp;
  }
  if (auto v = Get<Dict>(d, "readers")) {
    std::map<std::string, double> rate, lo, hi, efficiency, seconds;
    std::map<std::string, std::uint64_t> bytes;
    CopyMap(*v, "rate", rate);
    CopyMap(*v, "per_reader_min", lo);
    CopyMap(*v, "per_reader_max", hi);
    CopyMap(*v, "scaling_efficiency", efficiency);
    CopyMap(*v, "seconds", seconds);
    CopyMap(*v, "bytes", bytes);
    for (const auto& [count, value] : rate) {
      probes::ReaderStep step;
      try {
        step.readers = static_cast<std::uint32_t>(std::stoul(count));
      } catch (const std::exception&) {
        continue;
      }
      step.rate = value;
      if (auto it = lo.find(count); it != lo.end()) step.per_reader_min = it->second;
      if (auto it = hi.find(count); it != hi.end()) step.per_reader_max = it->second;
      if (auto it = efficiency.find(count); it != efficiency.end())
        step.scaling_efficiency = it->second;
      if (auto it = seconds.find(count); it != seconds.end()) step.seconds = it->second;
      if (auto it = bytes.find(count); it != bytes.end()) step.bytes = it->second;
      r.readers.push_back(step);
    }
    // The map is ordered as text ("16" < "2"); the curve reads in reader order.
    std::sort(r.readers.begin(), r.readers.end(),
              [](const auto& a, const auto& b) { return a.readers < b.readers; });
  }
  return r;
}

}  // namespace iodrift::daemon::dbus
