#include "daemon/boots_report.h"

#include "daemon/page_format.h"

namespace iodrift::daemon {

namespace {

std::string Ratio(const std::optional<double>& r) { return r ? page::Printf("%.2f", *r) : "-"; }

}  // namespace

void WriteBootJson(JsonWriter& w, const analysis::BootRow& row) {
  w.BeginObject();
  w.Key("boot_id").String(row.boot_id);
  w.Key("boot_time_seconds").Unsigned(row.boot_time_seconds);
  w.Key("current").Bool(row.current);
  w.Key("kind").String(probes::ProbeKindName(row.key.kind));
  w.Key("target").String(row.key.target);
  w.Key("baseline").OptionalNumber(row.baseline);
  w.Key("figure_unit").String(analysis::DriftFigureUnit(row.key.kind));
  w.Key("worst_ratio").OptionalNumber(row.worst_ratio);
  w.Key("uptime_at_worst").OptionalNumber(row.uptime_at_worst);
  const std::string& verdict = row.record.worst_verdict;
  w.Key("worst_verdict").OptionalString(verdict.empty() ? nullptr : &verdict);
  for (std::size_t i = 0; i < analysis::kBootMarks.size(); ++i) {
    w.Key(std::string("ratio_") + analysis::kBootMarkNames[i]).OptionalNumber(row.record.at[i]);
  }
  w.Key("last_ratio").OptionalNumber(row.record.last_ratio);
  w.Key("last_uptime_seconds").OptionalNumber(row.record.last_uptime);
  w.EndObject();
}

std::string ProbeBootsJson(const std::string& name, const std::vector<analysis::BootRow>& rows) {
  JsonWriter w;
  w.BeginObject();
  w.Key("name").String(name);
  w.Key("boots").BeginArray();
  for (const auto& row : rows) WriteBootJson(w, row);
  w.EndArray();
  w.EndObject();
  return w.str() + "\n";
}

std::string BootsApiJson(const std::optional<std::string>& boot_id,
                         const analysis::BaselineState& state) {
  JsonWriter w;
  w.BeginObject();
  w.Key("boot_id").OptionalString(boot_id ? &*boot_id : nullptr);
  w.Key("max_boots").Unsigned(analysis::kMaxBootRecords);
  w.Key("marks").BeginArray();
  for (const char* mark : analysis::kBootMarkNames) w.String(mark);
  w.EndArray();
  w.Key("probes").BeginArray();
  for (const auto& name : analysis::BootProbeNames(state)) {
    w.BeginObject();
    w.Key("name").String(name);
    w.Key("boots").BeginArray();
    for (const auto& row : analysis::BootsOf(state, name)) WriteBootJson(w, row);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str() + "\n";
}

std::string BootsText(const std::string& name, const std::vector<analysis::BootRow>& rows) {
  std::string out = "probe " + name + ": ratio to each boot's own baseline, newest boot first\n";
  if (rows.empty()) return out + "  no boots recorded yet\n";
  // The heading in two pieces, each well within what page::Printf holds.
  out += page::Printf("  %-9s %-16s %6s %6s %6s %6s", "boot", "boot time", "1h", "1d", "7d", "30d");
  out += page::Printf(" %6s %6s %-9s %s\n", "last", "worst", "at", "verdict");
  for (const auto& row : rows) {
    std::string line =
        "  " + page::Printf("%-9s", row.boot_id.substr(0, 8).c_str()) + " " +
        page::Printf("%-16s", row.boot_time_seconds
                                  ? page::Utc(static_cast<double>(row.boot_time_seconds),
                                              page::UtcStyle::kDateTime)
                                        .substr(0, 16)
                                        .c_str()
                                  : "-");
    for (const auto& at : row.record.at) line += page::Printf(" %6s", Ratio(at).c_str());
    line += page::Printf(" %6s", Ratio(row.record.last_ratio).c_str());
    line += page::Printf(" %6s", Ratio(row.worst_ratio).c_str());
    line += page::Printf(" %-9s",
                         row.uptime_at_worst ? page::Uptime(*row.uptime_at_worst).c_str() : "-");
    line += " " + (row.record.worst_verdict.empty() ? "-" : row.record.worst_verdict);
    if (row.current) line += "  (this boot)";
    out += line + "\n";
  }
  return out;
}

}  // namespace iodrift::daemon
