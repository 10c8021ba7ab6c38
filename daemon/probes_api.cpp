#include "daemon/probes_api.h"

#include <cerrno>
#include <charconv>
#include <cstddef>
#include <string>
#include <system_error>

#include "collectors/analysis/drift.h"
#include "collectors/analysis/explain.h"
#include "collectors/analysis/verdict.h"
#include "daemon/json_writer.h"
#include "daemon/probe_report.h"

namespace iodrift::daemon {
namespace {

// `a` and `b` are JSON objects with at least one member each: one object with a's members, then
// b's. Lets the API extend WriteProbeResultJson's object without repeating its fields.
std::string MergeObjects(const std::string& a, const std::string& b) {
  return a.substr(0, a.size() - 1) + "," + b.substr(1);
}

void WriteHistoryPoint(JsonWriter& w, const analysis::HistoryPoint& p) {
  w.BeginObject();
  w.Key("time_seconds").Number(p.time_seconds);
  w.Key("boot_id").OptionalString(p.boot_id.get());
  w.Key("uptime_seconds").OptionalNumber(p.uptime_seconds);
  w.Key("result").String(probes::OutcomeName(p.outcome));
  w.Key("figure").OptionalNumber(p.figure);
  w.Key("baseline").OptionalNumber(p.baseline);
  w.Key("ratio").OptionalNumber(p.ratio);
  w.Key("drift_window").Bool(p.drift_window);
  w.Key("features").BeginObject();
  for (std::size_t f = 0; f < analysis::kDriftFeatureCount; ++f) {
    w.Key(analysis::DriftFeatureName(f)).Number(p.features[f]);  // NaN (unknown) is written as null
  }
  w.EndObject();
  w.EndObject();
}

std::string ProbeJson(const analysis::ProbeState& rec, std::optional<std::size_t> last_points) {
  JsonWriter result;
  WriteProbeResultJson(result, rec.last);
  JsonWriter w;
  w.BeginObject();
  w.Key("figure").OptionalNumber(rec.last_figure);
  w.Key("figure_unit").String(analysis::DriftFigureUnit(rec.last.kind));
  w.Key("baseline").OptionalNumber(rec.baseline);
  w.Key("ratio").OptionalNumber(rec.baseline_ratio);
  w.Key("worst_ratio").OptionalNumber(rec.worst_ratio);
  w.Key("uptime_at_worst").OptionalNumber(rec.uptime_at_worst);
  w.Key("baseline_runs_needed").Unsigned(rec.baseline_runs_needed);
  w.Key("baseline_runs_counted").Unsigned(rec.baseline_runs_counted());
  const analysis::Verdict& verdict = rec.verdict;  // stored when the run was published
  w.Key("cause").String(analysis::CauseName(verdict.cause));
  w.Key("verdict").String(analysis::CauseName(verdict.cause));  // the cause's first name
  w.Key("verdict_text").String(verdict.line);
  w.Key("explain").String(analysis::ExplainProbe(rec, rec.window));
  w.Key("runs").BeginObject();
  for (auto outcome : probes::kAllOutcomes) {
    auto it = rec.runs.find(outcome);
    w.Key(probes::OutcomeName(outcome)).Unsigned(it == rec.runs.end() ? 0 : it->second);
  }
  w.EndObject();
  w.Key("history").BeginArray();
  const auto& ring = rec.history;
  const std::size_t skip =
      last_points && *last_points < ring.size() ? ring.size() - *last_points : 0;
  for (std::size_t i = skip; i < ring.size(); ++i) WriteHistoryPoint(w, ring[i]);
  w.EndArray();
  w.EndObject();
  return MergeObjects(result.str(), w.str());
}

}  // namespace

std::string ProbesApiJson(const std::optional<std::string>& boot_id,
                          const std::optional<double>& uptime_seconds, std::size_t history_runs,
                          const analysis::ProbeSnapshot& states,
                          std::optional<std::size_t> last_points) {
  JsonWriter head;
  head.BeginObject();
  head.Key("boot_id").OptionalString(boot_id ? &*boot_id : nullptr);
  head.Key("uptime_seconds").OptionalNumber(uptime_seconds);
  head.Key("history_runs").Unsigned(history_runs);
  head.EndObject();
  std::string out = head.str();
  out.pop_back();  // '}'
  out += ",\"probes\":[";
  bool first = true;
  for (const auto& state : states) {
    if (!state->ran()) continue;
    if (!first) out += ",";
    first = false;
    out += ProbeJson(*state, last_points);
  }
  out += "]}\n";
  return out;
}

Expected<std::size_t> ParseRunsArgument(const std::string& text) {
  constexpr std::size_t kMax = 1000000;
  std::size_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value > kMax) {
    return Fail(EINVAL, "runs: expected a whole number from 0 to " + std::to_string(kMax) +
                            ", got \"" + text.substr(0, 32) + "\"");
  }
  return value;
}

}  // namespace iodrift::daemon
