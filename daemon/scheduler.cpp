#include "daemon/scheduler.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <optional>

#include "collectors/probes/io_util.h"
#include "collectors/probes/netfs.h"
#include "collectors/probes/runner.h"
#include "collectors/probes/target.h"

namespace iodrift::daemon {
namespace {

using Clock = std::chrono::steady_clock;
using probes::Outcome;
using probes::ProbeResult;

// One run of one probe, shared by the dispatcher, the lane's worker and RunNow callers.
// Every field is guarded by Core::mu except `cancel` (atomic) and `spec`/`env` (immutable once
// the job is handed to a worker).
struct Job {
  probes::ProbeSpec spec;
  std::string device;
  std::uint64_t generation = 0;  // of the probe entry that made it
  probes::ProbeEnv env;          // env.cancel points at `cancel`
  std::atomic<bool> cancel{false};
  Clock::time_point started;
  double started_wall = 0;
  std::optional<Clock::time_point> deadline;
  bool abandoned = false;             // timed out or stopped: a late result is dropped
  bool delivered = false;             // the promise is set
  std::optional<ProbeResult> result;  // set by the worker when it finished in time
  bool experiment = false;            // RunExperiment: to its future only, never to listeners
  ExperimentPrelude prelude;          // RunExperiment: run on the lane just before the probe
  std::promise<ProbeResult> promise;
  std::shared_future<ProbeResult> future = promise.get_future().share();
};

struct Lane {
  std::string key;
  std::thread thread;
  std::shared_ptr<Job> pending;  // handed to the worker, not yet picked up
  std::shared_ptr<Job> running;  // inside run_probe; abandoned → the lane is stuck
  bool exit = false;
  bool exited = false;
  std::condition_variable cv;

  bool Busy() const { return pending != nullptr || running != nullptr; }
  bool Stuck() const { return running != nullptr && running->abandoned; }
};

struct Entry {
  probes::ProbeSpec spec;
  std::string device;
  std::uint64_t generation = 0;
  std::optional<Clock::time_point> next_due;  // unset until the dispatcher schedules it
  std::shared_ptr<Job> running;               // started, not yet delivered
  std::shared_ptr<Job> requested;             // RunNow waiting for its lane
  std::shared_ptr<Job> experiment;            // RunExperiment waiting for its lane
};

ProbeResult BareResult(const probes::ProbeSpec& spec, Outcome outcome, std::string error) {
  ProbeResult r;
  r.name = spec.name;
  r.kind = spec.kind;
  r.target = spec.target;
  r.outcome = outcome;
  r.error = std::move(error);
  r.start_time_seconds = probes::WallSeconds();
  return r;
}

std::string SecondsText(double s) {
  std::string text = std::to_string(s);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text + " s";
}

}  // namespace

struct Scheduler::Core {
  std::mutex mu;
  std::condition_variable cv;  // dispatcher wake-ups, worker completions, lane exits
  SchedulerOptions options;
  probes::ProbeEnv env;
  std::mt19937_64 rng;
  bool started = false;
  bool stopping = false;
  std::vector<std::string> order;  // probe names in Apply order
  std::map<std::string, Entry> entries;
  std::map<std::string, std::shared_ptr<Lane>> lanes;
  std::vector<std::shared_ptr<Job>> completed;  // finished in time, to deliver
  std::vector<ProbeListener> listeners;
  std::size_t running_count = 0;  // started, not finished, not abandoned
};

namespace {

// A lane's worker: runs the jobs handed to it, one at a time. It holds only shared state, so it
// may outlive the Scheduler when Stop() detaches it.
void WorkerLoop(std::shared_ptr<Scheduler::Core> core, std::shared_ptr<Lane> lane) {
  std::unique_lock<std::mutex> lock(core->mu);
  for (;;) {
    lane->cv.wait(lock, [&] { return lane->exit || lane->pending != nullptr; });
    if (lane->pending == nullptr) break;  // exit requested, nothing left
    std::shared_ptr<Job> job = std::move(lane->pending);
    lane->pending = nullptr;
    lane->running = job;
    const ProbeFn run = core->options.run_probe;
    lock.unlock();
    ProbeResult result;
    try {
      std::string refused;
      if (job->prelude) refused = job->prelude();  // on this lane, right before the run
      if (refused.empty()) {
        result = run(job->spec, job->env);  // may block in the kernel for ever
      } else {
        result = BareResult(job->spec, Outcome::kSkipped, refused);
      }
    } catch (const std::exception& e) {
      result = BareResult(job->spec, Outcome::kError, std::string("probe failed: ") + e.what());
    } catch (...) {
      result = BareResult(job->spec, Outcome::kError, "probe failed: unknown exception");
    }
    lock.lock();
    lane->running = nullptr;
    if (!job->abandoned) {
      --core->running_count;
      job->result = std::move(result);
      core->completed.push_back(job);
    }  // else: the timeout was already recorded; the late result is dropped
    core->cv.notify_all();
  }
  lane->exited = true;
  core->cv.notify_all();
}

// A delivery prepared under the lock and carried out without it.
struct Delivery {
  std::shared_ptr<Job> job;
  ProbeResult result;
  bool record = true;  // to the listeners (false: the probe was removed or changed)
};

}  // namespace

std::chrono::milliseconds JitteredInterval(config::Duration interval, double jitter,
                                           std::mt19937_64& rng) {
  jitter = std::clamp(jitter, 0.0, 1.0);
  std::uniform_real_distribution<double> factor(1.0 - jitter, 1.0 + jitter);
  const auto ms = static_cast<std::int64_t>(static_cast<double>(interval.count()) * factor(rng));
  return std::chrono::milliseconds(std::max<std::int64_t>(1, ms));
}

Scheduler::Scheduler(probes::ProbeEnv env, SchedulerOptions options)
    : core_(std::make_shared<Core>()) {
  if (!options.run_probe) options.run_probe = probes::RunProbe;
  if (!options.device_key) {
    const auto sys_root = env.sys_root;
    options.device_key = [sys_root](const probes::ProbeSpec& spec) {
      return probes::DeviceKey(spec, sys_root);
    };
  }
  core_->rng.seed(options.seed != 0 ? options.seed : std::random_device{}());
  if (options.max_concurrent == 0) options.max_concurrent = 1;
  core_->options = std::move(options);
  core_->env = std::move(env);
}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Apply(std::vector<analysis::DefinedProbe> probes) {
  // Device keys read mountinfo/sysfs: do it before taking the lock.
  std::vector<std::string> keys;
  keys.reserve(probes.size());
  std::function<std::string(const probes::ProbeSpec&)> key_fn;
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    key_fn = core_->options.device_key;
  }
  for (const auto& probe : probes) keys.push_back(key_fn(probe.spec));

  {
    std::lock_guard<std::mutex> lock(core_->mu);
    std::map<std::string, Entry> next;
    std::vector<std::string> order;
    for (std::size_t i = 0; i < probes.size(); ++i) {
      const probes::ProbeSpec& spec = probes[i].spec;
      const std::string& name = spec.name;
      if (next.count(name)) continue;  // duplicate names are a config error; keep the first
      auto old = core_->entries.find(name);
      if (old != core_->entries.end() && old->second.generation == probes[i].generation &&
          old->second.spec == spec && old->second.device == keys[i]) {
        next[name] = std::move(old->second);
      } else {
        Entry e;
        e.spec = spec;
        e.device = keys[i];
        e.generation = probes[i].generation;
        if (old != core_->entries.end() && old->second.requested) {
          e.requested = old->second.requested;  // a RunNow waiting keeps waiting, on the new spec
          e.requested->spec = spec;
          e.requested->device = keys[i];
          e.requested->generation = e.generation;
        }
        next[name] = std::move(e);
      }
      order.push_back(name);
    }
    // RunNow requests of removed probes resolve as skipped at the next dispatch, and so do
    // experiment runs of removed or changed ones (an experiment is bound to one generation).
    for (auto& [name, entry] : core_->entries) {
      if (!next.count(name) && entry.requested) {
        entry.requested->abandoned = true;
        core_->completed.push_back(entry.requested);
        entry.requested->result =
            BareResult(entry.spec, Outcome::kSkipped, "probe removed by a reload");
      }
      const auto kept = next.find(name);
      if (entry.experiment && (kept == next.end() || kept->second.generation != entry.generation)) {
        entry.experiment->abandoned = true;
        core_->completed.push_back(entry.experiment);
        entry.experiment->result = BareResult(
            entry.spec, Outcome::kSkipped,
            kept == next.end() ? "probe removed by a reload" : "probe changed by a reload");
        entry.experiment = nullptr;
      }
    }
    core_->entries = std::move(next);
    core_->order = std::move(order);
    core_->cv.notify_all();
  }
}

void Scheduler::Start() {
  std::lock_guard<std::mutex> lock(core_->mu);
  if (core_->started || core_->stopping) return;
  core_->started = true;
  dispatcher_ = std::thread([this] { DispatchLoop(); });
}

void Scheduler::AddListener(ProbeListener listener) {
  std::lock_guard<std::mutex> lock(core_->mu);
  core_->listeners.push_back(std::move(listener));
}

std::vector<probes::ProbeSpec> Scheduler::Probes() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  std::vector<probes::ProbeSpec> out;
  for (const auto& name : core_->order) out.push_back(core_->entries.at(name).spec);
  return out;
}

Expected<std::shared_future<ProbeResult>> Scheduler::RunNow(const std::string& name) {
  std::lock_guard<std::mutex> lock(core_->mu);
  auto it = core_->entries.find(name);
  if (it == core_->entries.end()) return Fail(ENOENT, "unknown probe " + name);
  if (!core_->started || core_->stopping) return Fail(ESHUTDOWN, "scheduler is not running");
  Entry& e = it->second;
  if (e.running && !e.running->experiment) return e.running->future;
  if (e.requested) return e.requested->future;
  auto job = std::make_shared<Job>();
  job->spec = e.spec;
  job->device = e.device;
  job->generation = e.generation;
  e.requested = job;
  core_->cv.notify_all();
  return job->future;
}

Expected<std::shared_future<ProbeResult>> Scheduler::RunExperiment(const std::string& name,
                                                                   std::uint64_t generation,
                                                                   ExperimentPrelude prelude) {
  std::lock_guard<std::mutex> lock(core_->mu);
  auto it = core_->entries.find(name);
  if (it == core_->entries.end()) return Fail(ENOENT, "probe " + name + " was removed");
  if (!core_->started || core_->stopping) return Fail(ESHUTDOWN, "scheduler is not running");
  Entry& e = it->second;
  if (e.generation != generation) {
    return Fail(ESTALE, "probe " + name + " was changed by a reload");
  }
  if (e.experiment) return Fail(EBUSY, "an experiment run of " + name + " is already waiting");
  auto job = std::make_shared<Job>();
  job->spec = e.spec;
  job->device = e.device;
  job->generation = e.generation;
  job->experiment = true;
  job->prelude = std::move(prelude);
  e.experiment = job;
  core_->cv.notify_all();
  return job->future;
}

void Scheduler::DispatchLoop() {
  std::shared_ptr<Core> core = core_;
  std::unique_lock<std::mutex> lock(core->mu);
  while (!core->stopping) {
    const auto now = Clock::now();
    std::size_t first_runs = 0;  // staggers the first runs of the probes added together
    std::vector<Delivery> deliveries;

    auto deliver = [&](std::shared_ptr<Job> job, ProbeResult result) {  // by value: see below
      auto it = core->entries.find(job->spec.name);
      const bool current =
          it != core->entries.end() && it->second.generation == job->generation && !job->experiment;
      if (it != core->entries.end() && it->second.running == job) it->second.running = nullptr;
      // `job` is a copy, so resetting entry.running above cannot null it.
      result.generation = job->generation;
      deliveries.push_back(Delivery{std::move(job), std::move(result), current});
    };

    // 1. Runs that finished in time (and requests resolved without running).
    for (auto& job : core->completed) deliver(job, std::move(*job->result));
    core->completed.clear();

    // 2. Timeouts: record them now, never wait for the stuck call.
    for (auto& [name, entry] : core->entries) {
      const std::shared_ptr<Job> job = entry.running;  // a copy: deliver() resets entry.running
      if (!job || job->abandoned || !job->deadline || now < *job->deadline) continue;
      job->abandoned = true;
      job->cancel = true;
      --core->running_count;
      ProbeResult r =
          BareResult(job->spec, Outcome::kTimeout,
                     "no result after " +
                         SecondsText(std::chrono::duration<double>(job->spec.timeout).count()) +
                         " (blocked in the kernel?); " + job->device +
                         " is not probed again until the call returns");
      r.start_time_seconds = job->started_wall;
      r.duration_seconds = std::chrono::duration<double>(now - job->started).count();
      deliver(job, std::move(r));
    }

    // 3. Start what is due: requested runs first, then periodic ones in order of due time.
    std::vector<std::pair<Clock::time_point, std::string>> due;
    for (const auto& name : core->order) {
      Entry& e = core->entries.at(name);
      if (!e.next_due && core->options.periodic) {
        e.next_due = now + core->options.first_run_delay + core->options.stagger * first_runs++;
      }
      if (e.running) continue;
      if (e.requested || e.experiment) {
        due.emplace_back(Clock::time_point::min(), name);
      } else if (core->options.periodic && e.next_due && *e.next_due <= now) {
        due.emplace_back(*e.next_due, name);
      }
    }
    std::stable_sort(due.begin(), due.end());
    for (const auto& [when, name] : due) {
      Entry& e = core->entries.at(name);
      auto lane_it = core->lanes.find(e.device);
      // A RunNow request first, then an experiment run, else the periodic run.
      std::shared_ptr<Job>* slot = e.requested    ? &e.requested
                                   : e.experiment ? &e.experiment
                                                  : nullptr;
      const bool requested = slot != nullptr;
      if (lane_it != core->lanes.end() && lane_it->second->Stuck()) {
        // Never pile another thread onto a device whose last call is still in the kernel.
        std::shared_ptr<Job> job = requested ? *slot : std::make_shared<Job>();
        if (!requested) {
          job->spec = e.spec;
          job->device = e.device;
          job->generation = e.generation;
        }
        if (slot) *slot = nullptr;
        deliver(job, BareResult(e.spec, Outcome::kSkipped,
                                "not run: a previous probe on " + e.device +
                                    " is still blocked in the kernel"));
        if (core->options.periodic) {
          e.next_due = now + JitteredInterval(e.spec.interval, core->options.jitter, core->rng);
        }
        continue;
      }
      if (lane_it != core->lanes.end() && lane_it->second->Busy()) continue;  // wait for it
      if (core->running_count >= core->options.max_concurrent) continue;
      std::shared_ptr<Lane> lane;
      if (lane_it == core->lanes.end()) {
        lane = std::make_shared<Lane>();
        lane->key = e.device;
        try {
          lane->thread = std::thread(WorkerLoop, core, lane);
        } catch (const std::system_error& err) {
          std::shared_ptr<Job> job = requested ? *slot : std::make_shared<Job>();
          job->spec = e.spec;
          job->generation = e.generation;
          if (slot) *slot = nullptr;
          deliver(job, BareResult(e.spec, Outcome::kError,
                                  std::string("cannot start a probe thread: ") + err.what()));
          if (core->options.periodic) {
            e.next_due = now + JitteredInterval(e.spec.interval, core->options.jitter, core->rng);
          }
          continue;
        }
        core->lanes[e.device] = lane;
      } else {
        lane = lane_it->second;
      }
      std::shared_ptr<Job> job = requested ? *slot : std::make_shared<Job>();
      if (slot) *slot = nullptr;
      // Remote or local is decided now, not at config load: a share mounted after start gets
      // the remote defaults (timeout included) on its next run.
      job->spec = probes::WithRemoteDefaults(e.spec);
      job->device = e.device;
      job->generation = e.generation;
      job->env = core->env;
      job->env.cancel = &job->cancel;
      job->started = now;
      job->started_wall = probes::WallSeconds();
      if (job->spec.timeout.count() > 0) job->deadline = now + job->spec.timeout;
      e.running = job;
      if (core->options.periodic) {
        e.next_due = now + JitteredInterval(e.spec.interval, core->options.jitter, core->rng);
      }
      ++core->running_count;
      lane->pending = job;
      lane->cv.notify_all();
    }

    // 4. Deliver without the lock: listeners may take their own locks or call RunNow.
    if (!deliveries.empty()) {
      std::vector<ProbeListener> listeners = core->listeners;
      lock.unlock();
      for (auto& d : deliveries) {
        if (d.record) {
          for (const auto& listener : listeners) {
            try {
              listener(d.result);
            } catch (...) {  // a listener's failure must not stop the scheduler
            }
          }
        }
      }
      lock.lock();
      for (auto& d : deliveries) {
        if (!d.job->delivered) {
          d.job->delivered = true;
          d.job->promise.set_value(std::move(d.result));
        }
      }
      continue;  // re-evaluate: time passed and state may have changed
    }

    // 5. Sleep until the next due run or deadline, or until something changes. Due probes
    //    waiting for a busy lane are woken by the lane's completion, not by polling.
    std::optional<Clock::time_point> wake;
    auto consider = [&](Clock::time_point t) {
      if (!wake || t < *wake) wake = t;
    };
    for (const auto& [name, e] : core->entries) {
      if (e.running && !e.running->abandoned && e.running->deadline) consider(*e.running->deadline);
      if (core->options.periodic && !e.running && e.next_due && *e.next_due > now) {
        consider(*e.next_due);
      }
    }
    if (wake) {
      core->cv.wait_until(lock, *wake);
    } else {
      core->cv.wait(lock);
    }
  }
}

void Scheduler::Stop() {
  std::shared_ptr<Core> core = core_;
  {
    std::lock_guard<std::mutex> lock(core->mu);
    if (core->stopping) return;
    core->stopping = true;
    core->cv.notify_all();
  }
  if (dispatcher_.joinable()) dispatcher_.join();

  std::unique_lock<std::mutex> lock(core->mu);
  for (auto& [key, lane] : core->lanes) {
    lane->exit = true;
    lane->pending = nullptr;  // not started: resolved below
    if (lane->running) lane->running->cancel = true;
    lane->cv.notify_all();
  }
  const auto grace_end = Clock::now() + core->options.shutdown_grace;
  core->cv.wait_until(lock, grace_end, [&] {
    for (const auto& [key, lane] : core->lanes) {
      if (!lane->exited) return false;
    }
    return true;
  });
  std::vector<std::thread> to_join;
  for (auto& [key, lane] : core->lanes) {
    if (!lane->thread.joinable()) continue;
    if (lane->exited) {
      to_join.push_back(std::move(lane->thread));
    } else {
      lane->thread.detach();  // stuck in the kernel: it owns only shared state
    }
  }
  // Resolve every future still open: finished runs with their result, the rest as skipped.
  std::vector<std::pair<std::shared_ptr<Job>, ProbeResult>> resolve;
  for (auto& job : core->completed) {
    if (!job->delivered && job->result) resolve.emplace_back(job, std::move(*job->result));
  }
  core->completed.clear();
  for (auto& [name, e] : core->entries) {
    for (const auto& job : {e.running, e.requested, e.experiment}) {
      if (job && !job->delivered) {
        job->abandoned = true;
        resolve.emplace_back(job, BareResult(job->spec, Outcome::kSkipped, "scheduler stopped"));
      }
    }
    e.running = nullptr;
    e.requested = nullptr;
    e.experiment = nullptr;
  }
  for (auto& [job, result] : resolve) {
    if (job->delivered) continue;
    job->delivered = true;
    job->promise.set_value(std::move(result));
  }
  lock.unlock();
  for (auto& t : to_join) t.join();
}

}  // namespace iodrift::daemon
