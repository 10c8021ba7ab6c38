// The D-Bus Snapshot method's reads, off the bus thread: a /proc file that blocks (a stuck lxcfs
// or FUSE --proc-root) must never hold the bus thread, or every caller's ListProbes waits behind
// one local user's Snapshot.
//
// SnapshotReader reads meminfo and the boot state through a CollectorRunner (the collectors'
// bounded, timed path: a read slower than the hedge has the reads behind it moved to a fresh
// worker, a read still running at the deadline is given up on and not started again until it
// returns). SnapshotAnswerer keeps the callers' replies in a queue served by its own thread:
// the bus thread only queues (Busy beyond `max_waiting`), one read answers every caller
// waiting for it, and an answer is sent with the service's bus lock held (`locked`).
//
// Answers: the fields as before; meminfo not read within the deadline (or still blocked from an
// earlier call) → org.iodrift.Error.Failed naming the file and why; the boot state not read →
// the meminfo fields without uptime_seconds/boot_time_seconds.
//
// Thread-safety: Submit/FailAll from any thread; Stop from the service's owner thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sdbus-c++/sdbus-c++.h>

#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"
#include "daemon/collector_runner.h"

namespace iodrift::daemon::dbus {

using SnapshotState = std::map<std::string, std::uint64_t>;

class SnapshotReader {
 public:
  explicit SnapshotReader(ProcRoot root,
                          std::chrono::milliseconds timeout = kDefaultCollectorTimeout);
  // Reads now, waiting `timeout` at most.
  Expected<SnapshotState> Read();

 private:
  CollectorRunner runner_;
  std::chrono::milliseconds timeout_;
};

class SnapshotAnswerer {
 public:
  using Reply = sdbus::Result<SnapshotState>;
  // Runs its argument with the service's bus lock held.
  using Locked = std::function<void(const std::function<void()>&)>;

  SnapshotAnswerer(ProcRoot root, Locked locked, std::size_t max_waiting = 64,
                   std::chrono::milliseconds timeout = kDefaultCollectorTimeout);
  ~SnapshotAnswerer();  // Stop()
  SnapshotAnswerer(const SnapshotAnswerer&) = delete;
  SnapshotAnswerer& operator=(const SnapshotAnswerer&) = delete;

  // Bus thread: queues the reply (answered Busy when `max_waiting` already wait).
  void Submit(Reply&& reply);
  // With the bus lock held (the connection goes away): answers every waiting reply Failed.
  void FailAll(const std::string& why);
  // Ends the thread (waits for a read in flight: the deadline bounds it). Idempotent.
  void Stop();

 private:
  void Loop();

  SnapshotReader reader_;
  Locked locked_;
  const std::size_t max_waiting_;
  std::mutex mu_;  // after the bus lock
  std::condition_variable cv_;
  std::vector<Reply> queued_;   // not read for yet
  std::vector<Reply> in_hand_;  // waiting for the read in flight
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace iodrift::daemon::dbus
