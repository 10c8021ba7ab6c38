#include "collectors/analysis/diagnose.h"

#include <cmath>
#include <cstdio>

#include "collectors/analysis/drift.h"

namespace iodrift::probes {
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
    out["time_user_cpu"] = tp->user_cpu;
    out["time_kernel_cpu"] = tp->kernel_cpu;
    out["time_other"] = tp->other;
    if (tp->runqueue_wait) out["time_runqueue_wait"] = *tp->runqueue_wait;
    if (tp->device_wait) out["time_device_wait"] = *tp->device_wait;
    if (tp->device_busy) out["time_device_busy"] = *tp->device_busy;
    if (tp->psi_io_stall) out["time_psi_io_stall"] = *tp->psi_io_stall;
    if (tp->psi_memory_stall) out["time_psi_memory_stall"] = *tp->psi_memory_stall;
  }
  return out;
}

void FillStep(DiagnoseStep& step, const ProbeResult& run, const ProbeResult& first,
              std::optional<double> baseline) {
  if (!run.success()) {
    step.status = "failed";
    step.reason = run.error.empty() ? std::string("run ") + OutcomeName(run.outcome) : run.error;
    return;
  }
  step.figure = DriftFigure(run);
  if (step.figure && baseline && *baseline > 0) step.ratio = *step.figure / *baseline;
  step.memory_delta = MemoryDelta(first, run);
  step.time_parts = StepTimeParts(run);
}

std::optional<std::string> RefuseReason(std::optional<std::uint64_t> mem_available_bytes,
                                        std::optional<double> memory_some_avg10,
                                        std::uint64_t min_available_bytes,
                                        double max_memory_some_avg10) {
  if (memory_some_avg10 && *memory_some_avg10 > max_memory_some_avg10) {
    return "memory pressure: PSI memory some avg10 " + Fixed(*memory_some_avg10, 2) +
           " % is above " + Fixed(max_memory_some_avg10, 2) +
           " %; dropping caches now would make it worse";
  }
  if (!mem_available_bytes) return std::string("MemAvailable is unknown (/proc/meminfo)");
  if (*mem_available_bytes < min_available_bytes) {
    return "memory pressure: MemAvailable " + Fixed(*mem_available_bytes / 1048576.0, 0) +
           " MiB is below " + Fixed(min_available_bytes / 1048576.0, 0) + " MiB";
  }
  return std::nullopt;
}

void Conclude(DiagnoseReport& report) {
  report.recovered_by.clear();
  if (report.steps.empty() || !report.steps.front().figure) {
    report.outcome = "failed";
    const std::string why =
        report.steps.empty() ? std::string("no measurement") : report.steps.front().reason;
    report.text = "diagnose failed: the first measurement did not succeed" +
                  (why.empty() ? std::string() : ": " + why);
    return;
  }
  const DiagnoseStep& first = report.steps.front();
  if (!report.baseline) {
    report.outcome = "failed";
    report.text = "diagnose failed: no baseline yet (figure " + Sig(*first.figure) + ")";
    return;
  }
  if (Restored(first.ratio)) {
    report.outcome = "not_slow";
    report.text = "nothing to recover: ratio " + RatioText(first.ratio) +
                  " is within 10 % of the "
                  "baseline";
    return;
  }
  std::vector<std::string> no_help, skipped;
  const DiagnoseStep* last_measured = &first;
  for (std::size_t i = 1; i < report.steps.size(); ++i) {
    const DiagnoseStep& s = report.steps[i];
    if (s.status == "skipped" || s.status == "failed") {
      skipped.push_back(StepPhrase(s.step) + " (" + s.status + ": " + s.reason + ")");
      continue;
    }
    last_measured = &s;
    if (Restored(s.ratio)) {
      report.recovered_by = s.step;
      break;
    }
    no_help.push_back(StepPhrase(s.step));
  }
  std::string text;
  if (!report.recovered_by.empty()) {
    report.outcome = "recovered";
    text = "recovered by " + StepPhrase(report.recovered_by) + ": ratio " + RatioText(first.ratio) +
           " → " + RatioText(last_measured->ratio);
  } else {
    report.outcome = "not_recovered";
    text = "not recovered: ratio " + RatioText(first.ratio) + " → " +
           RatioText(last_measured->ratio) +
           " after every step (the cause is not memory state this experiment can reset; see "
           "the direct twin and the device)";
  }
  if (!no_help.empty()) text += "; " + Join(no_help) + " did not help";
  if (!skipped.empty()) text += "; " + Join(skipped);
  if (!report.direct_twin.empty()) {
    text += last_measured->direct_moved ? "; direct moved too" : "; direct unchanged";
  }
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
    out += "figure " + (s.figure ? Sig(*s.figure) : std::string("n/a")) + ", ratio " +
           RatioText(s.ratio);
    if (auto it = s.time_parts.find("cpu_system_per_gib"); it != s.time_parts.end()) {
      out += ", kernel CPU " + Fixed(it->second, 2) + " s/GiB";
    }
    if (auto it = s.memory_delta.find("MemFree");
        it != s.memory_delta.end() && s.step != "measure") {
      out += ", MemFree " + Signed(it->second / 1048576.0) + " MiB";
    }
    if (auto it = s.memory_delta.find("Cached");
        it != s.memory_delta.end() && s.step != "measure") {
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
  out["start_time"] = report.start_time_seconds;
  out["finish_time"] = report.finish_time_seconds;
  for (const auto& s : report.steps) {
    if (s.ratio) out["ratio." + s.step] = *s.ratio;
    if (s.figure) out["figure." + s.step] = *s.figure;
    if (s.direct_figure) {
      out["direct." + s.step] = *s.direct_figure;
      out["direct_moved." + s.step] = s.direct_moved ? 1 : 0;
    }
    if (auto it = s.time_parts.find("cpu_system_per_gib"); it != s.time_parts.end()) {
      out["cpu_system_per_gib." + s.step] = it->second;
    }
  }
  return out;
}

}  // namespace iodrift::probes
