#include "daemon/diagnose.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include <spdlog/spdlog.h>

#include "collectors/analysis/drift.h"
#include "collectors/common/file_util.h"
#include "collectors/proc/meminfo.h"
#include "collectors/proc/pressure.h"
#include "daemon/scheduler.h"

namespace iodrift::daemon {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Writes `value` to <vm_dir>/<file> (O_WRONLY | O_NOFOLLOW): "" on success, else why not.
std::string WriteVm(const std::filesystem::path& vm_dir, const char* file, const char* value) {
  const std::string path = (vm_dir / file).string();
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) return "cannot open " + path + ": " + std::strerror(errno);
  const std::size_t len = std::strlen(value);
  if (write(fd.get(), value, len) != static_cast<ssize_t>(len)) {
    return "cannot write " + path + ": " + std::strerror(errno);
  }
  return "";
}

// Touches `bytes` of fresh anonymous memory and releases it: returns the bytes touched.
std::uint64_t WarmFreeMemory(std::uint64_t bytes, std::string& error) {
  const long page = sysconf(_SC_PAGESIZE);
  bytes = bytes / static_cast<std::uint64_t>(page) * static_cast<std::uint64_t>(page);
  if (bytes == 0) {
    error = "no memory to warm (MemAvailable too low)";
    return 0;
  }
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) {
    error = std::string("mmap: ") + std::strerror(errno);
    return 0;
  }
  auto* p = static_cast<volatile unsigned char*>(mem);
  for (std::uint64_t off = 0; off < bytes; off += static_cast<std::uint64_t>(page)) p[off] = 1;
  munmap(mem, bytes);
  return bytes;
}

}  // namespace

Diagnoser::Diagnoser(DiagnoseOptions options, Scheduler& scheduler, probes::ProbeStates& states)
    : scheduler_(scheduler), states_(states), options_(std::move(options)) {}

Diagnoser::~Diagnoser() {
  cancel_ = true;
  if (worker_.joinable()) worker_.join();
}

void Diagnoser::SetOptions(DiagnoseOptions options) {
  std::lock_guard lock(mu_);
  options_ = std::move(options);
}

Expected<std::shared_future<probes::DiagnoseReport>> Diagnoser::Start(const std::string& name) {
  std::lock_guard lock(mu_);
  if (!options_.enabled) {
    return Fail(EPERM, "diagnose is off; set `diagnose.enabled: true` in the config to allow it");
  }
  auto state = states_.Get(name);
  if (!state) return Fail(ENOENT, "no probe named " + name);
  if (running_) return Fail(EBUSY, "a diagnose experiment is already running; try again later");
  if (!state->baseline) {
    return Fail(ENODATA, "probe " + name + " has no baseline yet (" +
                             std::to_string(state->baseline_runs_counted()) + " of " +
                             std::to_string(state->baseline_runs_needed) + " clean runs)");
  }
  std::optional<std::uint64_t> available;
  if (auto m = proc::ReadMeminfo(options_.proc_root)) available = m->Get("MemAvailable");
  std::optional<double> psi;
  if (auto p = proc::ReadPressure(options_.proc_root, "memory"); p && p->some) {
    psi = p->some->avg10;
  }
  if (auto refuse = probes::RefuseReason(available, psi, options_.min_available_bytes,
                                         options_.max_memory_some_avg10)) {
    return Fail(EAGAIN, "refused: " + *refuse);
  }
  std::string twin;
  if (state->spec.kind != probes::ProbeKind::kDirect) {
    for (const auto& other : *states_.Snapshot()) {
      if (other->spec.kind == probes::ProbeKind::kDirect && other->spec.name != name &&
          other->spec.target == state->spec.target) {
        twin = other->spec.name;
        break;
      }
    }
  }
  if (worker_.joinable()) worker_.join();  // the previous one has finished (running_ is false)
  running_ = true;
  cancel_ = false;
  auto promise = std::make_shared<std::promise<probes::DiagnoseReport>>();
  std::shared_future<probes::DiagnoseReport> future = promise->get_future().share();
  worker_ =
      std::thread([this, promise, name, twin, baseline = state->baseline, options = options_] {
        probes::DiagnoseReport report;
        try {
          report = Run(name, twin, baseline, options);
        } catch (const std::exception& e) {
          report.probe = name;
          report.outcome = "failed";
          report.text = std::string("diagnose failed: ") + e.what();
        }
        states_.RecordDiagnosis(name, report);
        spdlog::info("diagnose: probe={} {}", name, report.text);
        {
          std::lock_guard done(mu_);
          running_ = false;
        }
        promise->set_value(std::move(report));
      });
  spdlog::info("diagnose: probe={} started (twin {})", name, twin.empty() ? "none" : twin);
  return future;
}

probes::DiagnoseReport Diagnoser::Run(const std::string& name, const std::string& twin,
                                      std::optional<double> baseline,
                                      const DiagnoseOptions& options) {
  probes::DiagnoseReport report;
  report.probe = name;
  report.direct_twin = twin;
  report.baseline = baseline;
  report.start_time_seconds = Now();
  const auto deadline = std::chrono::steady_clock::now() + options.max_duration;

  // Runs probe `probe` through the scheduler; nullopt (with `error`) when it did not finish.
  auto measure = [&](const std::string& probe,
                     std::string& error) -> std::optional<probes::ProbeResult> {
    auto future = scheduler_.RunNow(probe);
    if (!future) {
      error = future.error().message;
      return std::nullopt;
    }
    while (future->wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) {
      if (cancel_) {
        error = "cancelled (the daemon is stopping)";
        return std::nullopt;
      }
      if (std::chrono::steady_clock::now() > deadline + std::chrono::seconds(60)) {
        error = "the run did not finish within diagnose.timeout";
        return std::nullopt;
      }
    }
    return future->get();
  };
  // A run that started before `since` (a scheduled run RunNow joined) did not see the step: run
  // again, once.
  auto measure_after = [&](const std::string& probe, double since,
                           std::string& error) -> std::optional<probes::ProbeResult> {
    auto run = measure(probe, error);
    if (run && run->start_time_seconds < since) run = measure(probe, error);
    return run;
  };

  std::optional<probes::ProbeResult> first;
  std::optional<double> first_direct;
  for (const char* step_name : probes::kDiagnoseSteps) {
    probes::DiagnoseStep step;
    step.step = step_name;
    const bool is_first = step.step == "measure";
    if (!is_first && std::chrono::steady_clock::now() > deadline) {
      step.status = "skipped";
      step.reason = "diagnose.timeout reached";
      report.steps.push_back(std::move(step));
      continue;
    }
    if (cancel_) {
      step.status = "skipped";
      step.reason = "cancelled (the daemon is stopping)";
      report.steps.push_back(std::move(step));
      continue;
    }
    std::string error;
    const double step_start = Now();
    if (step.step == "drop_caches") {
      error = WriteVm(options.vm_dir, "drop_caches", "1");
    } else if (step.step == "drop_slab") {
      error = WriteVm(options.vm_dir, "drop_caches", "2");
    } else if (step.step == "compact") {
      error = WriteVm(options.vm_dir, "compact_memory", "1");
    } else if (step.step == "warm_free_memory") {
      std::uint64_t available = 0;
      if (auto m = proc::ReadMeminfo(options.proc_root)) {
        available = m->Get("MemAvailable").value_or(0);
      }
      step.warmed_bytes = WarmFreeMemory(std::min(options.warm_bytes, available / 4), error);
    }
    if (!error.empty()) {
      step.status = "skipped";
      step.reason = error;
      report.steps.push_back(std::move(step));
      continue;
    }
    auto run = measure_after(name, step_start, error);
    if (!run) {
      step.status = "failed";
      step.reason = error;
      report.steps.push_back(std::move(step));
      if (is_first) break;
      continue;
    }
    if (is_first) first = *run;
    probes::FillStep(step, *run, *first, baseline);
    if (!twin.empty()) {
      std::string twin_error;
      if (auto direct = measure_after(twin, step_start, twin_error); direct && direct->success()) {
        step.direct_figure = probes::DriftFigure(*direct);
        if (is_first) first_direct = step.direct_figure;
        if (first_direct && step.direct_figure && *first_direct > 0) {
          step.direct_moved =
              std::abs(*step.direct_figure / *first_direct - 1) > probes::kDirectMovedShare;
        }
      }
    }
    const bool stop = step.status != "ok" || probes::Restored(step.ratio);
    report.steps.push_back(std::move(step));
    if (stop && (is_first || probes::Restored(report.steps.back().ratio))) break;
  }
  report.finish_time_seconds = Now();
  probes::Conclude(report);
  return report;
}

}  // namespace iodrift::daemon
