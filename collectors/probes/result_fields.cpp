#include "collectors/probes/result_fields.h"

#include <algorithm>

#include "collectors/probes/kinds.h"

namespace iodrift::probes {
namespace {

template <typename Map, typename Emit>
void Group(ResultFieldVisitor& v, std::string_view key, const Map& map, Emit emit,
           bool present = true) {
  v.BeginGroup(key, GroupShape::kMap, present);
  if (present) {
    for (const auto& [name, value] : map) emit(name, value);
  }
  v.EndGroup();
}

}  // namespace

void VisitProbeResult(const ProbeResult& r, ResultFieldVisitor& v) {
  v.Text("name", r.name);
  v.Text("kind", std::string(ProbeKindName(r.kind)));
  v.Text("target", r.target);
  v.Flag("success", r.success());
  v.Text("result", OutcomeName(r.outcome));
  v.Flag("supported", r.supported);
  v.Text("error", r.error);
  v.Real("start_time_seconds", r.start_time_seconds);
  v.Real("duration_seconds", r.duration_seconds);
  v.Count("bytes", r.bytes);
  v.Real("throughput_bytes_per_second", r.throughput_bytes_per_second);
  Group(
      v, "ops_per_second", r.ops_per_second,
      [&](const std::string& op, double rate) { v.Real(op, rate); }, !r.ops_per_second.empty());
  v.BeginGroup("latency_seconds", GroupShape::kRecord, true);
  v.Real("p50", r.latency ? r.latency->p50_seconds : std::nullopt);
  v.Real("p99", r.latency ? r.latency->p99_seconds : std::nullopt);
  v.Count("count", r.latency ? std::optional<std::uint64_t>(r.latency->count) : std::nullopt);
  v.EndGroup();
  v.BeginGroup("cpu_seconds", GroupShape::kMap, true);
  v.Real("user", r.cpu_user_seconds);
  v.Real("system", r.cpu_system_seconds);
  v.EndGroup();
  v.TextList("suspect", r.suspect);
  Group(v, "context", r.context,
        [&](const std::string& field, std::uint64_t value) { v.Count(field, value); });
  Group(v, "vmstat_delta", r.vmstat_delta,
        [&](const std::string& field, std::int64_t value) { v.Signed(field, value); });
  Group(v, "extra", r.extra, [&](const std::string& field, double value) { v.Real(field, value); });
  const TargetInfo& t = r.target_info;
  v.BeginGroup("target_info", GroupShape::kRecord, true);
  v.Text("device", t.device);
  v.Text("fstype", t.fstype);
  v.Text("scheduler", t.scheduler);
  v.Text("read_ahead_kb", t.read_ahead_kb);
  v.Text("rotational", t.rotational);
  v.Text("loop_dio", t.loop_dio);
  v.Count("logical_block_size", t.logical_block_size);
  v.Text("remote", t.remote);
  v.TextList("devices", t.devices);
  v.TextList("members", t.members);
  v.EndGroup();
  v.Text("mode", r.mode);
  v.Text("residency_witness", r.residency_witness);
  v.Real("uptime_seconds", r.uptime_seconds);
  Group(v, "dentry_state", r.dentry_state,
        [&](const std::string& field, std::uint64_t value) { v.Count(field, value); });
  Group(v, "pressure_delta_us", r.pressure_delta_us,
        [&](const std::string& field, std::uint64_t value) { v.Count(field, value); });
  v.Real("fragmentation_index", r.fragmentation_index);
  v.Count("spec_size", r.spec_size);
  Group(
      v, "member_figures", r.member_figures,
      [&](const std::string& member, double figure) { v.Real(member, figure); },
      !r.member_figures.empty());
  Group(
      v, "member_ratios", r.member_ratios,
      [&](const std::string& member, double ratio) { v.Real(member, ratio); },
      !r.member_ratios.empty());
  // Text values: a record (D-Bus a{sv}), keyed by member.
  v.BeginGroup("member_errors", GroupShape::kRecord, !r.member_errors.empty());
  for (const auto& [member, error] : r.member_errors) v.Text(member, error);
  v.EndGroup();
  // time_parts.h: user_cpu … other add up to wall; the other fields overlap them.
  const auto& tp = r.time_seconds;
  v.BeginGroup("time_seconds", GroupShape::kRecord, tp.has_value());
  if (tp) {
    for (const TimePartField& f : TimePartFields()) v.Real(f.name, f.Get(*tp));
  }
  v.EndGroup();
  // The readers curve (readers.h): per figure a map from the reader count ("1", "2", ...).
  v.BeginGroup("readers", GroupShape::kRecord, !r.readers.empty());
  if (!r.readers.empty()) {
    v.Text("unit", Traits(r.kind).ops_figure ? "ops_per_second" : "bytes_per_second");
    auto per_step = [&](std::string_view key, auto figure) {
      v.BeginGroup(key, GroupShape::kMap, true);
      for (const ReaderStep& step : r.readers) figure(std::to_string(step.readers), step);
      v.EndGroup();
    };
    per_step("rate", [&](const std::string& n, const ReaderStep& s) { v.Real(n, s.rate); });
    per_step("per_reader_min",
             [&](const std::string& n, const ReaderStep& s) { v.Real(n, s.per_reader_min); });
    per_step("per_reader_max",
             [&](const std::string& n, const ReaderStep& s) { v.Real(n, s.per_reader_max); });
    per_step("scaling_efficiency", [&](const std::string& n, const ReaderStep& s) {
      if (s.scaling_efficiency) v.Real(n, s.scaling_efficiency);
    });
    per_step("bytes", [&](const std::string& n, const ReaderStep& s) { v.Count(n, s.bytes); });
    per_step("seconds", [&](const std::string& n, const ReaderStep& s) { v.Real(n, s.seconds); });
    // Each step's time parts (time_parts.h), one map per field ("time_kernel_cpu": {"1": …}),
    // for the fields some step knows.
    for (const TimePartField& f : TimePartFields()) {
      auto value = [&](const ReaderStep& s) -> std::optional<double> {
        return s.time_seconds ? f.Get(*s.time_seconds) : std::nullopt;
      };
      if (std::none_of(r.readers.begin(), r.readers.end(),
                       [&](const ReaderStep& s) { return value(s).has_value(); }))
        continue;
      per_step("time_" + std::string(f.name), [&](const std::string& n, const ReaderStep& s) {
        if (auto x = value(s)) v.Real(n, x);
      });
    }
  }
  v.EndGroup();
}

const std::vector<std::string_view>& ProbeResultFieldNames() {
  // Collected once from the walk itself, so the list cannot differ from it.
  static const std::vector<std::string_view> kNames = [] {
    struct Names : ResultFieldVisitor {
      std::vector<std::string_view> names;
      int depth = 0;
      void Add(std::string_view key) {
        if (depth == 0) names.push_back(key);
      }
      void Text(std::string_view key, const std::string&) override { Add(key); }
      void Flag(std::string_view key, bool) override { Add(key); }
      void Real(std::string_view key, const std::optional<double>&) override { Add(key); }
      void Count(std::string_view key, const std::optional<std::uint64_t>&) override { Add(key); }
      void Signed(std::string_view key, std::int64_t) override { Add(key); }
      void TextList(std::string_view key, const std::vector<std::string>&) override { Add(key); }
      void BeginGroup(std::string_view key, GroupShape, bool) override {
        Add(key);
        ++depth;
      }
      void EndGroup() override { --depth; }
    } walk;
    VisitProbeResult(ProbeResult{}, walk);
    return walk.names;
  }();
  return kNames;
}

}  // namespace iodrift::probes
