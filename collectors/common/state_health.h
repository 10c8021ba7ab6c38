// StateHealth: whether the daemon's state dir takes writes. Every writer of persistent state
// (the baselines file, the probes' calibration files) reports each save's outcome here under
// its own name ("baselines", "calibration/<probe>"); the state is writable while no writer's
// last save failed. The exporter (iodrift_state_writable, iodrift_state_save_errors_total), the
// status page (a banner) and the systemd STATUS= line read it, so a read-only or full state dir
// is a signal that repeats for as long as it lasts and clears once the next save succeeds.
//
// One per process (StateHealth::Process()): the writers run on probe threads that know only
// the state dir's path. Tests construct their own.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

namespace iodrift {

struct StateHealthView {
  bool writable = true;
  std::uint64_t save_errors_total = 0;  // failed saves since start, every writer
  std::string failing_writer;           // the first failing writer ("baselines"), empty if none
  std::string last_error;               // its last error message
};

class StateHealth {
 public:
  static StateHealth& Process();

  void SaveFailed(std::string_view writer, std::string_view message);
  void Saved(std::string_view writer);
  StateHealthView View() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string, std::less<>> failing_;  // writer → its last error
  std::uint64_t errors_ = 0;
};

// "state dir not writable (baselines: Read-only file system)", empty when writable: the text of
// the status page's banner and of the systemd status line.
std::string StateProblemText(const StateHealthView& view);

// iodrift_state_writable and iodrift_state_save_errors_total.
void AppendStateHealthFamilies(const StateHealthView& view,
                               std::vector<prometheus::MetricFamily>& out);

}  // namespace iodrift
