#include "collectors/analysis/diagnose.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "collectors/analysis/drift.h"

namespace iodrift::analysis {

using namespace probes;  // NOLINT: reads what the probes measured
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string Signed(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.0f", v);
  return buf;
}

std::string Sig(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string RatioText(std::optional<double> ratio) {
  return ratio ? Fixed(*ratio, 2) : std::string("n/a");
}

// "warming free memory" for "warm_free_memory" etc.: the step as a phrase.
std::string StepPhrase(const std::string& step) {
  if (step == "drop_caches") return "dropping caches";
  if (step == "drop_slab") return "dropping slab";
  if (step == "compact") return "compaction";
  if (step == "warm_free_memory") return "warming free memory";
  return step;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Mib(double bytes) { return Fixed(bytes / 1048576.0, 0) + " MiB"; }

// "0.29–0.33": the control's ratio range.
std::string RangeText(const DiagnoseStep& control, std::optional<double> baseline) {
  if (control.figures.empty() || !baseline || *baseline <= 0) return "n/a";
  const auto [lo, hi] = std::minmax_element(control.figures.begin(), control.figures.end());
  return Fixed(*lo / *baseline, 2) + "–" + Fixed(*hi / *baseline, 2);
}

// "a, b and c"
std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

}  // namespace

bool StepNeedsRoot(const std::string& step) {
  return step == "drop_caches" || step == "drop_slab" || step == "compact";
}

bool Restored(std::optional<double> ratio) { return ratio && *ratio >= kRecoveredRatio; }

std::map<std::string, std::int64_t> MemoryDelta(const ProbeResult& first, const ProbeResult& now) {
  std::map<std::string, std::int64_t> out;
  for (const char* field : {"MemFree", "MemAvailable", "Cached", "SReclaimable", "AnonPages"}) {
    auto a = first.context.find(field);
    auto b = now.context.find(field);
    if (a == first.context.end() || b == now.context.end()) continue;
    out[field] = static_cast<std::int64_t>(b->second) - static_cast<std::int64_t>(a->second);
  }
  return out;
}

std::map<std::string, double> StepTimeParts(const ProbeResult& run) {
  std::map<std::string, double> out;
  out["wall"] = run.duration_seconds;
  out["cpu_system"] = run.cpu_system_seconds;
  out["cpu_user"] = run.cpu_user_seconds;
  if (run.throughput_bytes_per_second && run.bytes > 0) {
    out["cpu_system_per_gib"] = run.cpu_system_seconds / (static_cast<double>(run.bytes) / kGiB);
  }
  if (const auto& tp = run.time_seconds) {  // the run's time parts (time_parts.h)
    for (const auto& f : probes::TimePartFields()) {
      if (f.role == probes::TimePartRole::kWall) continue;
      if (auto v = f.Get(*tp)) out["time_" + std::string(f.name)] = *v;
    }
  }
  return out;
}

void FillStep(DiagnoseStep& step, const std::vector<ProbeResult>& runs, const ProbeResult& first,
              std::optional<double> baseline, const DiagnoseStep* control) {
  step.figures.clear();
  const ProbeResult* median_run = nullptr;
  for (const auto& run : runs) {
    std::optional<double> figure = run.success() ? DriftFigure(run) : std::nullopt;
    if (!figure) {
      step.status = "failed";
      step.reason = run.error.empty() ? std::string("run ") + OutcomeName(run.outcome) : run.error;
      step.figures.clear();
      return;
    }
    step.figures.push_back(*figure);
  }
  if (step.figures.empty()) return;
  step.figure = Median(step.figures);
  const auto [lo, hi] = std::minmax_element(step.figures.begin(), step.figures.end());
  step.spread = *hi - *lo;
  if (baseline && *baseline > 0) step.ratio = *step.figure / *baseline;
  for (std::size_t i = 0; i < runs.size(); ++i) {  // the run whose figure is nearest the median
    if (!median_run || std::abs(step.figures[i] - *step.figure) <
                           std::abs(*DriftFigure(*median_run) - *step.figure)) {
      median_run = &runs[i];
    }
  }
  step.memory_delta = MemoryDelta(first, *median_run);
  step.time_parts = StepTimeParts(*median_run);
  step.cleared = false;
  if (control && control != &step && !control->figures.empty()) {
    const double control_high = *std::max_element(control->figures.begin(), control->figures.end());
    step.cleared = *lo > control_high;
  }
}

void FillDirect(DiagnoseStep& step, const DiagnoseStep* control) {
  step.direct_figure.reset();
  step.direct_moved = false;
  if (step.direct_figures.empty()) return;
  step.direct_figure = Median(step.direct_figures);
  if (control && control->direct_figure && *control->direct_figure > 0) {
    step.direct_moved =
        std::abs(*step.direct_figure / *control->direct_figure - 1) > kDirectMovedShare;
  }
}

bool ClosesPartOfTheGap(const DiagnoseStep& step, const DiagnoseStep& control, double baseline) {
  if (step.status != "ok" || !step.cleared || !step.figure || !control.figure) return false;
  const double gap = baseline - *control.figure;
  return gap > 0 && *step.figure - *control.figure >= kPartlyShare * gap;
}

bool Recovering(const DiagnoseStep& step) {
  return step.status == "ok" && step.cleared && Restored(step.ratio);
}

std::string NextStep(const DiagnoseReport& report) {
  if (!report.aborted.empty()) return "";
  if (report.steps.empty()) return "control";
  const DiagnoseStep& control = report.steps.front();
  if (control.status != "ok") return "";
  if (!control.figure) return "control";   // still collecting its repeats
  if (Restored(control.ratio)) return "";  // not slow: nothing to recover
  for (const auto& s : report.steps) {
    if (Recovering(s)) return "";
  }
  for (const char* step : kDiagnoseSteps) {
    bool done = false;
    for (const auto& s : report.steps) done = done || s.step == step;
    if (!done) return step;
  }
  return "";
}

std::optional<std::string> RefuseReason(const DiagnoseGates& now, const DiagnoseLimits& limits) {
  if (now.memory_some_avg10 && *now.memory_some_avg10 > limits.max_memory_some_avg10) {
    return "memory pressure: PSI memory some avg10 " + Fixed(*now.memory_some_avg10, 2) +
           " % is above " + Fixed(limits.max_memory_some_avg10, 2) +
           " % (diagnose.max_memory_pressure); dropping caches now would make it worse";
  }
  if (now.io_some_avg10 && *now.io_some_avg10 > limits.max_io_some_avg10) {
    return "I/O pressure: PSI io some avg10 " + Fixed(*now.io_some_avg10, 2) + " % is above " +
           Fixed(limits.max_io_some_avg10, 2) +
           " % (diagnose.max_io_pressure); re-reading dropped caches now would add to it";
  }
  if (!now.mem_available_bytes) return std::string("MemAvailable is unknown (/proc/meminfo)");
  if (*now.mem_available_bytes < limits.min_available_bytes) {
    return "memory pressure: MemAvailable " + Mib(static_cast<double>(*now.mem_available_bytes)) +
           " is below " + Mib(static_cast<double>(limits.min_available_bytes)) +
           " (diagnose.min_available)";
  }
  return std::nullopt;
}

std::optional<std::uint64_t> WarmBytes(std::uint64_t run_bytes, std::uint64_t cap,
                                       std::uint64_t mem_available, std::uint64_t min_available,
                                       std::optional<std::uint64_t> cgroup_headroom,
                                       std::string& why) {
  const std::uint64_t want = std::max(run_bytes, std::min(cap, mem_available / 4));
  std::uint64_t allowed = std::min(cap, mem_available / 2);
  std::string limit = allowed == cap ? "diagnose.warm_size" : "half of MemAvailable";
  const std::uint64_t host = mem_available > min_available ? mem_available - min_available : 0;
  if (host < allowed) {
    allowed = host;
    limit = "MemAvailable minus diagnose.min_available";
  }
  if (cgroup_headroom && *cgroup_headroom / 2 < allowed) {
    allowed = *cgroup_headroom / 2;
    limit = "half of what the daemon's cgroup allows (memory.high/memory.max)";
  }
  const std::uint64_t warm = std::min(want, allowed);
  if (warm == 0 || warm < run_bytes) {
    why = "cannot warm the " + Mib(static_cast<double>(run_bytes)) +
          " the run allocates: at most " + Mib(static_cast<double>(allowed)) + " (" + limit + ")";
    return std::nullopt;
  }
  return warm;
}

namespace {

// What the answer says about the verdict it was started under.
std::string VerdictNote(const DiagnoseReport& report,
                        const std::vector<std::string>& root_skipped) {
  const std::string& v = report.verdict;
  if (v.empty()) return "";
  const bool helped = report.outcome == "recovered" || report.outcome == "improved";
  // The memory causes (verdict.h), and the coarse one older daemons recorded.
  const bool memory = v == "memory_reclaim" || v == "memory_compaction" || v == "page_allocation" ||
                      v == "hypervisor_reclaim" || v == "memory_management";
  if (memory) {
    if (helped) return "agrees with the verdict (" + v + ")";
    if (!root_skipped.empty()) {
      return "differs from the verdict (" + v + "): the steps that need root (" +
             Join(root_skipped) + ") were not run; run iodriftctl diagnose as root";
    }
    return "differs from the verdict (" + v +
           "): the verdict read the last scheduled run's time parts; no step here reset what "
           "made the kernel busy (or the state changed since that run: see the control)";
  }
  if (v == "device" || v == "device_busy") {
    if (!helped) return "agrees with the verdict (" + v + ")";
    return "differs from the verdict (" + v +
           "): a memory step restored the figure, so the time the verdict counted as device wait "
           "depended on memory state";
  }
  return "verdict: " + v;
}

}  // namespace

void Conclude(DiagnoseReport& report) {
  report.recovered_by.clear();
  const std::string abort_note =
      report.aborted.empty() ? "" : "; aborted: " + report.aborted + " (nothing further applied)";
  if (report.steps.empty() || !report.steps.front().figure) {
    report.outcome = report.aborted.empty() ? "failed" : "aborted";
    std::string why =
        report.steps.empty() ? std::string("no measurement") : report.steps.front().reason;
    if (why.empty()) why = report.aborted;
    report.text = "diagnose " + std::string(report.aborted.empty() ? "failed" : "aborted") +
                  ": the control measurement did not complete" + (why.empty() ? "" : ": " + why);
    return;
  }
  const DiagnoseStep& control = report.steps.front();
  if (!report.baseline) {
    report.outcome = "failed";
    report.text = "diagnose failed: no baseline yet (figure " + Sig(*control.figure) + ")";
    return;
  }
  const std::string control_text =
      RatioText(control.ratio) + " (control " + RangeText(control, report.baseline) + ")";
  if (Restored(control.ratio)) {
    report.outcome = "not_slow";
    report.text = "nothing to recover: ratio " + control_text + " is within 10 % of the baseline" +
                  abort_note;
    return;
  }
  std::vector<std::string> no_help, skipped, root_skipped;
  const DiagnoseStep* recovered = nullptr;
  const DiagnoseStep* improved = nullptr;  // cleared the control, not within 10 %
  const DiagnoseStep* best = nullptr;
  for (std::size_t i = 1; i < report.steps.size(); ++i) {
    const DiagnoseStep& s = report.steps[i];
    if (s.status != "ok") {
      skipped.push_back(StepPhrase(s.step) + " (" + s.status + ": " + s.reason + ")");
      if (StepNeedsRoot(s.step) && !report.root) root_skipped.push_back(StepPhrase(s.step));
      continue;
    }
    if (!s.figure) continue;
    if (!best || (s.ratio && best->ratio && *s.ratio > *best->ratio)) best = &s;
    if (Recovering(s)) {
      recovered = &s;
      break;
    }
    const bool partly = ClosesPartOfTheGap(s, control, *report.baseline);
    if (partly && !improved) improved = &s;
    no_help.push_back(StepPhrase(s.step) + (partly ? " helped partly" : " did not help"));
  }
  std::string text;
  if (recovered) {
    report.outcome = "recovered";
    report.recovered_by = recovered->step;
    text = "recovered by " + StepPhrase(recovered->step) + ": ratio " + control_text + " → " +
           RatioText(recovered->ratio);
  } else if (improved) {
    report.outcome = "improved";
    report.recovered_by = improved->step;
    text = "partly recovered by " + StepPhrase(improved->step) + ": ratio " + control_text + " → " +
           RatioText(improved->ratio) + ", still below 0.90 of the baseline";
  } else {
    report.outcome = report.aborted.empty() ? "not_recovered" : "aborted";
    text = (report.aborted.empty() ? "not recovered: ratio " : "no recovery seen: ratio ") +
           control_text + "; no step cleared the control's spread";
    if (best) text += " (best: " + StepPhrase(best->step) + " " + RatioText(best->ratio) + ")";
  }
  if (!no_help.empty()) text += "; " + Join(no_help);
  if (!skipped.empty()) text += "; " + Join(skipped);
  const DiagnoseStep* last = recovered ? recovered : (best ? best : &control);
  if (!report.direct_twin.empty() && last != &control) {
    text += last->direct_moved ? "; direct moved too" : "; direct unchanged";
  }
  text += abort_note;
  if (auto note = VerdictNote(report, root_skipped); !note.empty()) text += "; " + note;
  report.text = text;
}

std::string DiagnoseDetails(const DiagnoseReport& report) {
  std::string out = "probe " + report.probe + ": " + report.text + "\n";
  if (report.baseline) out += "  baseline " + Sig(*report.baseline) + "\n";
  for (const auto& s : report.steps) {
    out += "  " + s.step + ": ";
    if (s.status != "ok") {
      out += s.status + " (" + s.reason + ")\n";
      continue;
    }
    out += "median " + (s.figure ? Sig(*s.figure) : std::string("n/a")) + " of " +
           std::to_string(s.figures.size()) + ", spread " +
           (s.spread ? Sig(*s.spread) : std::string("n/a")) + ", ratio " + RatioText(s.ratio);
    if (s.step != "control") out += s.cleared ? " (clears the control)" : " (within the control)";
    if (auto it = s.time_parts.find("cpu_system_per_gib"); it != s.time_parts.end()) {
      out += ", kernel CPU " + Fixed(it->second, 2) + " s/GiB";
    }
    if (auto it = s.memory_delta.find("MemFree");
        it != s.memory_delta.end() && s.step != "control") {
      out += ", MemFree " + Signed(it->second / 1048576.0) + " MiB";
    }
    if (auto it = s.memory_delta.find("Cached");
        it != s.memory_delta.end() && s.step != "control") {
      out += ", Cached " + Signed(it->second / 1048576.0) + " MiB";
    }
    if (s.warmed_bytes > 0) out += ", warmed " + Fixed(s.warmed_bytes / 1048576.0, 0) + " MiB";
    if (s.direct_figure) {
      out += ", direct " + Sig(*s.direct_figure) + (s.direct_moved ? " (moved)" : "");
    }
    out += "\n";
  }
  return out;
}

std::map<std::string, double> DiagnoseFigures(const DiagnoseReport& report) {
  std::map<std::string, double> out;
  if (report.baseline) out["baseline"] = *report.baseline;
  out["recovered"] = report.outcome == "recovered" ? 1 : 0;
  out["runs"] = static_cast<double>(report.runs);
  out["start_time"] = report.start_time_seconds;
  out["finish_time"] = report.finish_time_seconds;
  for (const auto& s : report.steps) {
    if (s.ratio) out["ratio." + s.step] = *s.ratio;
    if (s.figure) out["figure." + s.step] = *s.figure;
    if (s.spread) out["spread." + s.step] = *s.spread;
    if (s.figure && s.step != "control") out["cleared." + s.step] = s.cleared ? 1 : 0;
    if (s.direct_figure) {
      out["direct." + s.step] = *s.direct_figure;
      out["direct_moved." + s.step] = s.direct_moved ? 1 : 0;
    }
    for (const auto& [part, value] : s.time_parts) {
      if (part == "cpu_system_per_gib") {
        out["cpu_system_per_gib." + s.step] = value;
      } else {
        out["time." + part + "." + s.step] = value;
      }
    }
  }
  return out;
}

}  // namespace iodrift::analysis
