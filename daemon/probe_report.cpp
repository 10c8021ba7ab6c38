#include "daemon/probe_report.h"

#include <algorithm>
#include <cstdio>

#include "collectors/probes/kinds.h"
#include "collectors/probes/result_fields.h"

namespace iodrift::daemon {
namespace {

// "VALUE UNIT" with `decimals` digits after the point.
std::string WithUnit(double value, int decimals, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f %s", decimals, value, unit);
  return buf;
}

std::string ScaleBinary(double value, const char* const units[], int count) {
  int i = 0;
  while (i + 1 < count && value >= 1024) {
    value /= 1024;
    ++i;
  }
  return WithUnit(value, value >= 100 || i == 0 ? 0 : 2, units[i]);
}

// The headline figure of one result: throughput, or ops/s with latency percentiles and the
// sample count behind them.
std::string Figure(const probes::ProbeResult& r) {
  if (!r.success()) return "-";
  std::string out;
  if (r.throughput_bytes_per_second) out = FormatRate(*r.throughput_bytes_per_second);
  for (const auto& [op, rate] : r.ops_per_second) {
    if (!out.empty()) out += ", ";
    out += WithUnit(rate, 0, (op + "/s").c_str());
  }
  if (r.latency && r.latency->count > 0) {
    // Only the percentiles the sample count supports (HonestPercentile), then the count.
    std::string parts;
    if (r.latency->p50_seconds) parts += "p50 " + FormatSeconds(*r.latency->p50_seconds) + ", ";
    if (r.latency->p99_seconds) parts += "p99 " + FormatSeconds(*r.latency->p99_seconds) + ", ";
    out += " (" + parts + "n=" + std::to_string(r.latency->count) + ")";
  }
  return out.empty() ? "-" : out;
}

// Terminal columns of a UTF-8 string (continuation bytes take none; "µ" is one column).
std::size_t DisplayWidth(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// The memory state that explains a figure, in the order an operator reads it.
std::string ContextLine(const std::map<std::string, std::uint64_t>& context) {
  std::string out;
  for (const char* field : {"MemFree", "MemAvailable", "Cached", "Buffers", "Dirty", "Writeback",
                            "SReclaimable", "SUnreclaim"}) {
    auto it = context.find(field);
    if (it == context.end()) continue;
    if (!out.empty()) out += ", ";
    out += std::string(field) + " " + FormatBytes(static_cast<double>(it->second));
  }
  return out;
}

}  // namespace

std::string FormatRate(double bytes_per_second) {
  static const char* const kUnits[] = {"B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"};
  return ScaleBinary(bytes_per_second, kUnits, 5);
}

std::string FormatBytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  return ScaleBinary(bytes, kUnits, 5);
}

std::string FormatSeconds(double seconds) {
  if (seconds < 1e-3) return WithUnit(seconds * 1e6, 0, "µs");
  if (seconds < 1) return WithUnit(seconds * 1e3, 2, "ms");
  return WithUnit(seconds, 2, "s");
}

void WriteProbeResultJson(JsonWriter& w, const probes::ProbeResult& r) {
  // The one description of a result (result_fields.h), written as JSON.
  struct Json : probes::ResultFieldVisitor {
    explicit Json(JsonWriter& writer) : w(writer) {}
    JsonWriter& w;
    std::vector<bool> absent;  // per open group: written as null, members skipped
    void Text(std::string_view key, const std::string& value,
              const probes::MetricExport&) override {
      w.Key(key).String(value);
    }
    void Flag(std::string_view key, bool value, const probes::MetricExport&) override {
      w.Key(key).Bool(value);
    }
    void Real(std::string_view key, const std::optional<double>& value,
              const probes::MetricExport&) override {
      w.Key(key).OptionalNumber(value);
    }
    void Count(std::string_view key, const std::optional<std::uint64_t>& value,
               const probes::MetricExport&) override {
      if (value) {
        w.Key(key).Unsigned(*value);
      } else {
        w.Key(key).Null();
      }
    }
    void Signed(std::string_view key, std::int64_t value, const probes::MetricExport&) override {
      w.Key(key).Integer(value);
    }
    void TextList(std::string_view key, const std::vector<std::string>& values,
                  const probes::MetricExport&) override {
      w.Key(key).BeginArray();
      for (const auto& value : values) w.String(value);
      w.EndArray();
    }
    bool BeginGroup(std::string_view key, probes::GroupShape, bool present,
                    const probes::MetricExport&) override {
      absent.push_back(!present);
      if (present) {
        w.Key(key).BeginObject();
      } else {
        w.Key(key).Null();
      }
      return present;
    }
    void EndGroup() override {
      if (!absent.back()) w.EndObject();
      absent.pop_back();
    }
  } json(w);
  w.BeginObject();
  probes::VisitProbeResult(r, json);
  w.EndObject();
}

std::string ProbeResultsJson(const std::optional<std::string>& boot_id,
                             const std::optional<double>& uptime_seconds,
                             const std::vector<probes::ProbeResult>& results) {
  JsonWriter w;
  w.BeginObject();
  w.Key("boot_id").OptionalString(boot_id ? &*boot_id : nullptr);
  w.Key("uptime_seconds").OptionalNumber(uptime_seconds);
  w.Key("probes").BeginArray();
  for (const auto& r : results) WriteProbeResultJson(w, r);
  w.EndArray();
  w.EndObject();
  return w.str() + "\n";
}

std::string ProbeResultsTable(const std::vector<probes::ProbeResult>& results) {
  struct Row {
    std::string cells[6];
  };
  std::vector<Row> rows;
  rows.push_back({{"PROBE", "KIND", "TARGET", "RESULT", "FIGURE", "TIME (CPU usr/sys)"}});
  std::string notes;
  for (const auto& r : results) {
    std::string time = FormatSeconds(r.duration_seconds) + " (" +
                       FormatSeconds(r.cpu_user_seconds) + "/" +
                       FormatSeconds(r.cpu_system_seconds) + ")";
    std::string target = r.target.empty() ? "-" : r.target;
    rows.push_back({{r.name, std::string(probes::ProbeKindName(r.kind)), target,
                     probes::OutcomeName(r.outcome), Figure(r), time}});
    std::string detail;
    if (r.success() && r.throughput_bytes_per_second) {
      // hdparm's line: " Timing buffered disk reads: 64 MB in 0.41 seconds = 156.10 MB/sec".
      detail = std::string(probes::Traits(r.kind).reads_phrase) + ": ";
      if (r.bytes > 0) detail += FormatBytes(static_cast<double>(r.bytes)) + " = ";
      detail += FormatRate(*r.throughput_bytes_per_second);
    } else if (r.success()) {
      detail = Figure(r);
    }
    if (!detail.empty()) notes += "  " + r.name + ": " + detail + "\n";
    if (!r.context.empty()) notes += "    context: " + ContextLine(r.context) + "\n";
    if (!r.error.empty()) notes += "  " + r.name + ": " + r.error + "\n";
    if (!r.suspect.empty()) {
      std::string reasons;
      for (const auto& s : r.suspect) reasons += (reasons.empty() ? "" : ", ") + s;
      notes += "  " + r.name + ": figure doubtful: " + reasons + "\n";
    }
  }
  std::size_t width[6] = {};
  for (const auto& row : rows) {
    for (int i = 0; i < 6; ++i) width[i] = std::max(width[i], DisplayWidth(row.cells[i]));
  }
  std::string out;
  for (const auto& row : rows) {
    for (int i = 0; i < 6; ++i) {
      out += row.cells[i];
      if (i < 5) out.append(width[i] - DisplayWidth(row.cells[i]) + 2, ' ');
    }
    out += "\n";
  }
  if (!notes.empty()) out += "\n" + notes;
  return out;
}

}  // namespace iodrift::daemon
