#include "collectors/common/state_health.h"

#include "collectors/common/families.h"

namespace iodrift {

StateHealth& StateHealth::Process() {
  static StateHealth health;
  return health;
}

void StateHealth::SaveFailed(std::string_view writer, std::string_view message) {
  std::lock_guard<std::mutex> lock(mu_);
  ++errors_;
  failing_[std::string(writer)] = std::string(message);
}

void StateHealth::Saved(std::string_view writer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = failing_.find(writer); it != failing_.end()) failing_.erase(it);
}

StateHealthView StateHealth::View() const {
  std::lock_guard<std::mutex> lock(mu_);
  StateHealthView view;
  view.writable = failing_.empty();
  view.save_errors_total = errors_;
  if (!failing_.empty()) {
    view.failing_writer = failing_.begin()->first;
    view.last_error = failing_.begin()->second;
  }
  return view;
}

std::string StateProblemText(const StateHealthView& view) {
  if (view.writable) return {};
  return "state dir not writable (" + view.failing_writer + ": " + view.last_error +
         "); baselines and calibration kept in memory only";
}

void AppendStateHealthFamilies(const StateHealthView& view,
                               std::vector<prometheus::MetricFamily>& out) {
  using prometheus::MetricType;
  auto writable = MakeFamily("iodrift_state_writable",
                             "1 while the last save of every piece of state (baselines, "
                             "calibration) in the state dir succeeded, 0 while one fails (a "
                             "read-only or full state dir: that state is kept in memory only).",
                             MetricType::Gauge);
  AddSample(writable, view.writable ? 1 : 0);
  out.push_back(std::move(writable));
  auto errors = MakeFamily("iodrift_state_save_errors_total",
                           "Saves of state (baselines, calibration) to the state dir that failed.",
                           MetricType::Counter);
  AddSample(errors, static_cast<double>(view.save_errors_total));
  out.push_back(std::move(errors));
}

}  // namespace iodrift
