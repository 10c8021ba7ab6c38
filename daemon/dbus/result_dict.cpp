#include "daemon/dbus/result_dict.h"

#include <cstdint>
#include <vector>

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

}  // namespace

Dict ToDict(const probes::ProbeResult& r) {
  Dict d;
  d["name"] = sdbus::Variant(r.name);
  d["kind"] = sdbus::Variant(std::string(config::ProbeKindName(r.kind)));
  d["target"] = sdbus::Variant(r.target);
  d["success"] = sdbus::Variant(r.success());
  d["result"] = sdbus::Variant(std::string(probes::OutcomeName(r.outcome)));
  d["supported"] = sdbus::Variant(r.supported);
  d["error"] = sdbus::Variant(r.error);
  d["start_time_seconds"] = sdbus::Variant(r.start_time_seconds);
  d["duration_seconds"] = sdbus::Variant(r.duration_seconds);
  d["bytes"] = sdbus::Variant(static_cast<std::uint64_t>(r.bytes));
  if (r.throughput_bytes_per_second) {
    d["throughput_bytes_per_second"] = sdbus::Variant(*r.throughput_bytes_per_second);
  }
  if (!r.ops_per_second.empty()) d["ops_per_second"] = sdbus::Variant(r.ops_per_second);
  if (r.latency) {
    Dict latency;
    if (r.latency->p50_seconds) latency["p50"] = sdbus::Variant(*r.latency->p50_seconds);
    if (r.latency->p99_seconds) latency["p99"] = sdbus::Variant(*r.latency->p99_seconds);
    latency["count"] = sdbus::Variant(static_cast<std::uint64_t>(r.latency->count));
    d["latency_seconds"] = sdbus::Variant(latency);
  }
  d["cpu_seconds"] = sdbus::Variant(std::map<std::string, double>{
      {"user", r.cpu_user_seconds}, {"system", r.cpu_system_seconds}});
  d["suspect"] = sdbus::Variant(r.suspect);
  std::map<std::string, std::uint64_t> context(r.context.begin(), r.context.end());
  d["context"] = sdbus::Variant(context);
  std::map<std::string, std::int64_t> vmstat(r.vmstat_delta.begin(), r.vmstat_delta.end());
  d["vmstat_delta"] = sdbus::Variant(vmstat);
  d["extra"] = sdbus::Variant(r.extra);
  d["target_info"] = sdbus::Variant(
      std::map<std::string, std::string>{{"device", r.target_info.device},
                                         {"fstype", r.target_info.fstype},
                                         {"scheduler", r.target_info.scheduler},
                                         {"read_ahead_kb", r.target_info.read_ahead_kb},
                                         {"rotational", r.target_info.rotational}});
  if (r.uptime_seconds) d["uptime_seconds"] = sdbus::Variant(*r.uptime_seconds);
  if (!r.mode.empty()) d["mode"] = sdbus::Variant(r.mode);
  return d;
}

probes::ProbeResult FromDict(const Dict& d) {
  probes::ProbeResult r;
  if (auto v = Get<std::string>(d, "name")) r.name = *v;
  if (auto v = Get<std::string>(d, "kind")) {
    if (auto kind = config::ParseProbeKind(*v)) r.kind = *kind;
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
  if (auto v = Get<std::map<std::string, double>>(d, "ops_per_second")) r.ops_per_second = *v;
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
  if (auto v = Get<std::map<std::string, std::uint64_t>>(d, "context")) {
    r.context.insert(v->begin(), v->end());
  }
  if (auto v = Get<std::map<std::string, std::int64_t>>(d, "vmstat_delta")) {
    r.vmstat_delta.insert(v->begin(), v->end());
  }
  if (auto v = Get<std::map<std::string, double>>(d, "extra")) r.extra = *v;
  if (auto v = Get<std::map<std::string, std::string>>(d, "target_info")) {
    auto field = [&](const char* key) {
      auto it = v->find(key);
      return it == v->end() ? std::string() : it->second;
    };
    r.target_info.device = field("device");
    r.target_info.fstype = field("fstype");
    r.target_info.scheduler = field("scheduler");
    r.target_info.read_ahead_kb = field("read_ahead_kb");
    r.target_info.rotational = field("rotational");
  }
  r.uptime_seconds = Get<double>(d, "uptime_seconds");
  if (auto v = Get<std::string>(d, "mode")) r.mode = *v;
  return r;
}

}  // namespace iodrift::daemon::dbus
