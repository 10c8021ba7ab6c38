#include "daemon/diagnose.h"

#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <spdlog/spdlog.h>

#include "collectors/analysis/verdict.h"
#include "collectors/probes/kinds.h"
#include "collectors/proc/meminfo.h"
#include "collectors/proc/pressure.h"
#include "daemon/scheduler.h"

namespace iodrift::daemon {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kEndedKept = 8;  // reports of ended sessions End can still answer

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Touches `bytes` of fresh anonymous memory and releases it: returns the bytes touched.
std::uint64_t WarmFreeMemory(std::uint64_t bytes, std::string& error) {
  const long page = sysconf(_SC_PAGESIZE);
  bytes = bytes / static_cast<std::uint64_t>(page) * static_cast<std::uint64_t>(page);
  if (bytes == 0) {
    error = "no memory to warm";
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

analysis::DiagnoseGates ReadGates(const ProcRoot& proc_root) {
  analysis::DiagnoseGates gates;
  if (auto m = proc::ReadMeminfo(proc_root)) gates.mem_available_bytes = m->Get("MemAvailable");
  if (auto p = proc::ReadPressure(proc_root, "memory"); p && p->some) {
    gates.memory_some_avg10 = p->some->avg10;
  }
  if (auto p = proc::ReadPressure(proc_root, "io"); p && p->some) {
    gates.io_some_avg10 = p->some->avg10;
  }
  return gates;
}

std::string NewSessionId() {
  unsigned char bytes[16] = {};
  if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    const auto t = static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
    std::memcpy(bytes, &t, sizeof t);
  }
  std::string id;
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    id += hex;
  }
  return id;
}

std::string Seconds(Clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " s";
}

}  // namespace

struct Diagnoser::Session {
  std::string id;
  DiagnoseCaller caller;
  DiagnoseOptions options;
  std::string name;
  std::uint64_t generation = 0;
  std::string twin;
  std::uint64_t twin_generation = 0;
  std::uint64_t run_bytes = 0;  // what one run allocates (its size)
  Clock::time_point deadline;
  Clock::time_point last_activity;
  analysis::DiagnoseReport report;
  std::string next;                          // the step the last reply named
  std::vector<probes::ProbeResult> runs;     // repeats of `next` so far
  std::vector<double> direct;                // the twin's figures for them
  std::uint64_t warmed = 0;                  // the last warm step's bytes
  std::optional<probes::ProbeResult> first;  // the control's first run
  bool measuring = false;
};

std::optional<std::uint64_t> CgroupHeadroom(const ProcRoot& proc_root,
                                            const std::filesystem::path& cgroup_root) {
  auto room = proc::ReadCgroupMemoryRoom(proc_root, cgroup_root);
  if (!room) return std::nullopt;
  return room->left;
}

Diagnoser::Diagnoser(DiagnoseOptions options, Scheduler& scheduler, analysis::ProbeStates& states)
    : scheduler_(scheduler), states_(states), options_(std::move(options)) {}

Diagnoser::~Diagnoser() {
  cancel_ = true;
  if (worker_.joinable()) worker_.join();
  std::lock_guard lock(mu_);
  if (open_) FinishLocked("the daemon is stopping");
}

void Diagnoser::SetOptions(DiagnoseOptions options) {
  std::lock_guard lock(mu_);
  options_ = std::move(options);
}

void Diagnoser::ExpireLocked(Clock::time_point now) {
  if (!open_ || open_->measuring) return;
  if (now > open_->deadline) {
    FinishLocked("diagnose.timeout (" + Seconds(open_->options.max_duration) + ") reached");
  } else if (now - open_->last_activity > open_->options.idle_timeout) {
    FinishLocked("the caller stopped calling (nothing for " + Seconds(open_->options.idle_timeout) +
                 ")");
  }
}

void Diagnoser::FinishLocked(const std::string& aborted) {
  if (!open_) return;
  Session& s = *open_;
  if (!aborted.empty()) s.report.aborted = aborted;
  s.report.finish_time_seconds = Now();
  analysis::Conclude(s.report);
  states_.RecordDiagnosis(s.name, s.generation, s.report);
  spdlog::info("diagnose: probe={} uid={} runs={} {}", s.name, s.caller.uid, s.report.runs,
               s.report.text);
  if (ended_.size() >= kEndedKept) ended_.erase(ended_.begin());
  ended_.emplace_back(s.id, s.report);
  last_end_ = Clock::now();
  open_.reset();
}

const analysis::DiagnoseReport* Diagnoser::EndedLocked(const std::string& session) const {
  for (const auto& [id, report] : ended_) {
    if (id == session) return &report;
  }
  return nullptr;
}

std::string Diagnoser::CheckLocked(const Session& s) {
  if (cancel_) return "the daemon is stopping";
  if (Clock::now() > s.deadline) {
    return "diagnose.timeout (" + Seconds(s.options.max_duration) + ") reached";
  }
  for (const auto& [name, generation] :
       {std::pair{s.name, s.generation}, std::pair{s.twin, s.twin_generation}}) {
    if (name.empty()) continue;
    auto state = states_.Get(name);
    if (!state) return "probe " + name + " was removed by a reload";
    if (state->generation != generation) return "probe " + name + " was changed by a reload";
  }
  if (auto refuse = analysis::RefuseReason(ReadGates(s.options.proc_root), s.options.limits)) {
    return *refuse;
  }
  return "";
}

void Diagnoser::AdvanceLocked(DiagnoseReply& reply) {
  Session& s = *open_;
  reply.session = s.id;
  std::string next = s.runs.empty() ? analysis::NextStep(s.report) : s.next;
  while (!next.empty() && analysis::StepNeedsRoot(next) && !s.report.root) {
    analysis::DiagnoseStep skipped;
    skipped.step = next;
    skipped.status = "skipped";
    skipped.reason = "needs root: run iodriftctl diagnose as root";
    s.report.steps.push_back(std::move(skipped));
    next = analysis::NextStep(s.report);
  }
  std::string stop = next.empty() ? "" : CheckLocked(s);
  if (next.empty() || !stop.empty()) {
    FinishLocked(stop);
    const auto& report = *EndedLocked(reply.session);
    reply.next.clear();
    reply.text = analysis::DiagnoseDetails(report);
    reply.figures = analysis::DiagnoseFigures(report);
    return;
  }
  s.next = next;
  reply.next = next;
  reply.text = next + " " + std::to_string(s.runs.size() + 1) + "/" +
               std::to_string(analysis::kDiagnoseRepeats);
}

Expected<DiagnoseReply> Diagnoser::Begin(const std::string& name, const DiagnoseCaller& caller,
                                         const std::function<std::string()>& admit) {
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  ExpireLocked(now);
  if (!options_.enabled) {
    return Fail(EPERM, "diagnose is off; set `diagnose.enabled: true` in the config to allow it");
  }
  auto state = states_.Get(name);
  if (!state) return Fail(ENOENT, "no probe named " + name);
  if (open_) {
    return Fail(EBUSY, "refused: another diagnose experiment is running (probe " + open_->name +
                           ", " + Seconds(now - open_->last_activity) +
                           " since its last step); one at a time on this machine");
  }
  if (last_end_ && now - *last_end_ < options_.cooldown) {
    return Fail(EAGAIN, "refused: cooldown: the last diagnose experiment ended " +
                            Seconds(now - *last_end_) + " ago; the next may start in " +
                            Seconds(options_.cooldown - (now - *last_end_)) +
                            " (diagnose.cooldown " + Seconds(options_.cooldown) + ")");
  }
  if (!state->baseline) {
    return Fail(ENODATA, "probe " + name + " has no baseline yet (" +
                             std::to_string(state->baseline_runs_counted()) + " of " +
                             std::to_string(state->baseline_runs_needed) + " clean runs)");
  }
  if (auto refuse = analysis::RefuseReason(ReadGates(options_.proc_root), options_.limits)) {
    return Fail(EAGAIN, "refused: " + *refuse);
  }
  if (admit) {
    if (std::string refused = admit(); !refused.empty()) return Fail(EAGAIN, refused);
  }
  auto s = std::make_unique<Session>();
  s->id = NewSessionId();
  s->caller = caller;
  s->options = options_;
  s->name = name;
  s->generation = state->generation;
  s->deadline = now + options_.max_duration;
  s->last_activity = now;
  s->run_bytes = state->spec.size != 0 ? state->spec.size : state->last.bytes;
  auto snapshot = states_.Snapshot();
  // The direct twin (the one the stored verdict was decided with) runs beside the probe.
  if (const analysis::ProbeState* twin = analysis::StoredTwin(*snapshot, *state);
      twin != nullptr && probes::Traits(twin->spec.kind).bypasses_page_cache) {
    s->twin = twin->spec.name;
    s->twin_generation = twin->generation;
  }
  s->report.probe = name;
  s->report.direct_twin = s->twin;
  s->report.root = caller.uid == 0;
  s->report.baseline = state->baseline;
  s->report.start_time_seconds = Now();
  if (state->ran()) {
    s->report.verdict = analysis::CauseName(state->verdict.cause);
  }
  open_ = std::move(s);
  spdlog::info("diagnose: probe={} begun by uid={} (twin {}, {} steps)", name, caller.uid,
               open_->twin.empty() ? "none" : open_->twin,
               open_->report.root ? "all" : "the unprivileged");
  DiagnoseReply reply;
  AdvanceLocked(reply);
  return reply;
}

Expected<std::shared_future<DiagnoseReply>> Diagnoser::Measure(const std::string& session,
                                                               const std::string& step,
                                                               const std::string& skipped,
                                                               const DiagnoseCaller& caller) {
  std::lock_guard lock(mu_);
  ExpireLocked(Clock::now());
  if (!open_ || open_->id != session) {
    if (const auto* report = EndedLocked(session)) {
      return Fail(ENOENT, "this diagnose session has ended: " + report->text);
    }
    return Fail(ENOENT, "no diagnose session " + session.substr(0, 40));
  }
  Session& s = *open_;
  if (s.caller.bus_name != caller.bus_name) {
    return Fail(EPERM, "this diagnose session belongs to another caller");
  }
  if (s.measuring) return Fail(EBUSY, "a measurement of this session is still running");
  if (step != s.next) return Fail(EINVAL, "the next step is " + s.next + ", not " + step);
  s.last_activity = Clock::now();
  std::promise<DiagnoseReply> promise;
  auto future = promise.get_future().share();
  if (!skipped.empty()) {
    if (!analysis::StepNeedsRoot(step) || !s.runs.empty()) {
      return Fail(EINVAL, "only a root step can be reported skipped, before its first repeat");
    }
    analysis::DiagnoseStep record;
    record.step = step;
    record.status = "skipped";
    record.reason = skipped.substr(0, 200);
    s.report.steps.push_back(std::move(record));
    DiagnoseReply reply;
    AdvanceLocked(reply);
    promise.set_value(std::move(reply));
    return future;
  }
  s.measuring = true;
  if (worker_.joinable()) worker_.join();  // the last measurement's thread has left the lock
  worker_ = std::thread([this, step, promise = std::move(promise)]() mutable {
    DiagnoseReply reply;
    try {
      reply = RunRepeat(step);
    } catch (const std::exception& e) {
      std::lock_guard done(mu_);
      reply.next.clear();
      reply.text = std::string("diagnose failed: ") + e.what();
      if (open_) {
        reply.session = open_->id;
        open_->measuring = false;
        FinishLocked(reply.text);
      }
    }
    promise.set_value(std::move(reply));
  });
  return future;
}

DiagnoseReply Diagnoser::RunRepeat(const std::string& step) {
  std::string name, twin;
  std::uint64_t generation = 0, twin_generation = 0, run_bytes = 0;
  DiagnoseOptions options;
  DiagnoseReply reply;
  {
    std::lock_guard lock(mu_);
    Session& s = *open_;
    reply.session = s.id;
    if (std::string stop = CheckLocked(s); !stop.empty()) {
      s.measuring = false;
      FinishLocked(stop);
      const auto& report = *EndedLocked(reply.session);
      reply.text = analysis::DiagnoseDetails(report);
      reply.figures = analysis::DiagnoseFigures(report);
      return reply;
    }
    name = s.name;
    twin = s.twin;
    generation = s.generation;
    twin_generation = s.twin_generation;
    run_bytes = s.run_bytes;
    options = s.options;
  }
  // warm_free_memory: on the probe's lane, right before the run, so nothing runs in between.
  auto warmed = std::make_shared<std::uint64_t>(0);
  auto warm_error = std::make_shared<std::string>();   // the step cannot be made: skipped
  auto stop_reason = std::make_shared<std::string>();  // the experiment must stop: aborted
  ExperimentPrelude prelude;
  if (step == "warm_free_memory") {
    prelude = [states = &states_, name, generation, run_bytes, options, warmed, warm_error,
               stop_reason]() -> std::string {
      auto state = states->Get(name);
      if (!state || state->generation != generation) {
        *stop_reason = "probe " + name + " was changed by a reload";
        return *stop_reason;
      }
      const auto gates = ReadGates(options.proc_root);
      if (auto refuse = analysis::RefuseReason(gates, options.limits)) {
        *stop_reason = *refuse;
        return *refuse;
      }
      std::string why;
      auto bytes =
          analysis::WarmBytes(run_bytes, options.warm_bytes, gates.mem_available_bytes.value_or(0),
                              options.limits.min_available_bytes,
                              CgroupHeadroom(options.proc_root, options.cgroup_root), why);
      if (!bytes) {
        *warm_error = why;
        return why;
      }
      *warmed = WarmFreeMemory(*bytes, why);
      if (*warmed == 0) {
        *warm_error = why;
        return why;
      }
      return "";
    };
  }
  // One experiment run; nullopt (with `error`) when it did not finish.
  auto measure = [&](const std::string& probe, std::uint64_t gen, ExperimentPrelude pre,
                     std::string& error) -> std::optional<probes::ProbeResult> {
    auto future = scheduler_.RunExperiment(probe, gen, std::move(pre));
    if (!future) {
      error = future.error().message;
      return std::nullopt;
    }
    while (future->wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      if (cancel_) {
        error = "the daemon is stopping";
        return std::nullopt;
      }
    }
    return future->get();
  };
  std::string error, twin_error;
  std::uint64_t runs = 0;
  auto run = measure(name, generation, std::move(prelude), error);
  if (run && warm_error->empty() && stop_reason->empty()) {
    states_.RecordExperimentRun(name, generation);
    ++runs;
  }
  std::optional<probes::ProbeResult> direct;
  if (run && run->success() && !twin.empty()) {
    direct = measure(twin, twin_generation, {}, twin_error);
    if (direct) {
      states_.RecordExperimentRun(twin, twin_generation);
      ++runs;
    }
  }

  std::lock_guard lock(mu_);
  reply.runs = runs;
  if (!open_ || open_->id != reply.session) {  // cannot happen: only this thread ends it now
    reply.text = "diagnose session ended";
    return reply;
  }
  Session& s = *open_;
  s.measuring = false;
  s.last_activity = Clock::now();
  s.report.runs += runs;
  std::string stop = CheckLocked(s);
  if (stop.empty()) stop = *stop_reason;
  if (!stop.empty() || !run) {
    FinishLocked(stop.empty() ? error : stop);
    const auto& report = *EndedLocked(reply.session);
    reply.text = analysis::DiagnoseDetails(report);
    reply.figures = analysis::DiagnoseFigures(report);
    return reply;
  }
  if (!warm_error->empty()) {  // the step cannot be made safely: skipped, the ladder goes on
    analysis::DiagnoseStep record;
    record.step = step;
    record.status = "skipped";
    record.reason = *warm_error;
    s.report.steps.push_back(std::move(record));
    s.runs.clear();
    s.direct.clear();
    AdvanceLocked(reply);
    return reply;
  }
  if (step == "control" && !s.first) s.first = *run;
  s.runs.push_back(*run);
  if (direct && direct->success()) {
    if (auto f = analysis::DriftFigure(*direct)) s.direct.push_back(*f);
  }
  if (*warmed > 0) s.warmed = *warmed;
  if (s.runs.size() >= analysis::kDiagnoseRepeats || !run->success()) {
    analysis::DiagnoseStep record;
    record.step = step;
    const analysis::DiagnoseStep* control =
        s.report.steps.empty() ? nullptr : &s.report.steps.front();
    analysis::FillStep(record, s.runs, *s.first, s.report.baseline, control);
    record.direct_figures = s.direct;
    analysis::FillDirect(record, control);
    if (step == "warm_free_memory") record.warmed_bytes = s.warmed;
    s.report.steps.push_back(std::move(record));
    s.runs.clear();
    s.direct.clear();
  }
  AdvanceLocked(reply);
  reply.runs = runs;
  return reply;
}

Expected<DiagnoseReply> Diagnoser::End(const std::string& session, const DiagnoseCaller& caller) {
  std::lock_guard lock(mu_);
  ExpireLocked(Clock::now());
  if (!open_ || open_->id != session) {
    const auto* report = EndedLocked(session);
    if (!report) return Fail(ENOENT, "no diagnose session " + session.substr(0, 40));
    DiagnoseReply reply;
    reply.session = session;
    reply.text = analysis::DiagnoseDetails(*report);
    reply.figures = analysis::DiagnoseFigures(*report);
    return reply;
  }
  if (open_->caller.bus_name != caller.bus_name) {
    return Fail(EPERM, "this diagnose session belongs to another caller");
  }
  if (open_->measuring) return Fail(EBUSY, "a measurement of this session is still running");
  FinishLocked("ended by the caller");
  DiagnoseReply reply;
  reply.session = session;
  reply.text = analysis::DiagnoseDetails(*EndedLocked(session));
  reply.figures = analysis::DiagnoseFigures(*EndedLocked(session));
  return reply;
}

}  // namespace iodrift::daemon
