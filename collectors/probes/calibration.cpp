#include "collectors/probes/calibration.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <mutex>
#include <utility>

#include <spdlog/spdlog.h>

#include "collectors/common/file_util.h"
#include "collectors/common/state_health.h"
#include "collectors/common/text.h"

namespace iodrift::probes {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

std::string Serialize(const ProbeSpec& spec, std::uint64_t bytes) {
  return "version 1\nkind " + std::string(ProbeKindName(spec.kind)) + "\ntarget " + spec.target +
         "\nbytes " + std::to_string(bytes) + "\n";
}

// Budgets calibrated by this process that could not be saved, by (state dir, probe name).
struct Unsaved {
  ProbeSpec spec;  // name, kind and target are what the file is keyed by
  std::uint64_t bytes = 0;
};
std::mutex unsaved_mu;
std::map<std::pair<std::string, std::string>, Unsaved>& UnsavedBudgets() {
  static std::map<std::pair<std::string, std::string>, Unsaved> budgets;
  return budgets;
}

std::string Writer(const ProbeSpec& spec) { return "calibration/" + spec.name; }

std::optional<std::uint64_t> UnsavedBudget(const std::filesystem::path& state_dir,
                                           const ProbeSpec& spec) {
  std::lock_guard<std::mutex> lock(unsaved_mu);
  const auto& budgets = UnsavedBudgets();
  auto it = budgets.find({state_dir.string(), spec.name});
  if (it == budgets.end() || it->second.spec.kind != spec.kind ||
      it->second.spec.target != spec.target) {
    return std::nullopt;
  }
  return it->second.bytes;
}

}  // namespace

std::uint64_t CalibratedBudget(std::uint64_t bytes_read, bool stopped_by_time_budget) {
  const std::uint64_t kept = stopped_by_time_budget ? bytes_read / 10 * 8 : bytes_read;
  // Whole 2 MiB steps (docs/probes.md, "Budgets"): the region then ends on a large-folio boundary.
  const std::uint64_t b = kept / (2 * kMiB) * (2 * kMiB);
  return std::clamp(b, kMinCalibratedBytes, kMaxCalibratedBytes);
}

std::filesystem::path CalibrationPath(const std::filesystem::path& state_dir,
                                      const std::string& name) {
  return state_dir / "calibration" / name;
}

std::optional<std::uint64_t> LoadCalibration(const std::filesystem::path& state_dir,
                                             const ProbeSpec& spec) {
  if (state_dir.empty()) return std::nullopt;
  auto dir = OpenDirectory(AT_FDCWD, state_dir.string(), false);
  if (!dir) return std::nullopt;
  auto cal = OpenDirectory(dir->get(), "calibration", true);
  if (!cal) return std::nullopt;
  auto content = ReadRegularFile(cal->get(), spec.name, 64 * 1024,
                                 CalibrationPath(state_dir, spec.name).string());
  if (!content) return std::nullopt;
  std::optional<std::uint64_t> bytes;
  bool version_ok = false, kind_ok = false, target_ok = false;
  for (auto line : text::Lines(*content)) {
    const auto space = line.find(' ');
    if (space == std::string_view::npos) continue;
    const auto key = line.substr(0, space);
    const auto value = line.substr(space + 1);  // target paths may contain spaces
    if (key == "version") version_ok = value == "1";
    if (key == "kind") kind_ok = value == ProbeKindName(spec.kind);
    if (key == "target") target_ok = value == spec.target;
    if (key == "bytes") bytes = text::ParseU64(value);
  }
  if (!version_ok || !kind_ok || !target_ok || !bytes || *bytes == 0) return std::nullopt;
  return bytes;
}

Expected<void> SaveCalibration(const std::filesystem::path& state_dir, const ProbeSpec& spec,
                               std::uint64_t bytes) {
  if (state_dir.empty()) return Fail(EINVAL, "no state directory to keep the calibration in");
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);  // the configured dir (may be a symlink)
  auto state = OpenDirectory(AT_FDCWD, state_dir.string(), false);
  if (!state) return tl::unexpected(state.error());
  const auto dir = state_dir / "calibration";
  if (mkdirat(state->get(), "calibration", 0700) != 0 && errno != EEXIST) {
    return Fail(errno, SystemErrorMessage("create " + dir.string(), errno));
  }
  // O_NOFOLLOW: a symlink planted as <state_dir>/calibration is refused, never followed.
  auto cal = OpenDirectory(state->get(), "calibration", true);
  if (!cal)
    return Fail(cal.error().code, SystemErrorMessage("open " + dir.string(), cal.error().code));
  struct stat st {};
  if (fstat(cal->get(), &st) != 0)
    return Fail(errno, SystemErrorMessage("fstat " + dir.string(), errno));
  if (st.st_uid != geteuid()) {
    return Fail(EPERM, dir.string() + " is owned by uid " + std::to_string(st.st_uid) +
                           ", not by iodriftd's uid " + std::to_string(geteuid()) +
                           "; not writing calibration there");
  }
  fchmod(cal->get(), 0700);
  return ::iodrift::WriteFileAtomically(cal->get(), spec.name, Serialize(spec, bytes), 0600,
                                        dir.string());
}

SequentialBudget ResolveBudget(const ProbeSpec& spec, const std::filesystem::path& state_dir) {
  SequentialBudget b;
  if (spec.size > 0) {
    b.read_limit = spec.size;
  } else if (auto stored = LoadCalibration(state_dir, spec)) {
    b.read_limit = *stored;
  } else if (auto unsaved = UnsavedBudget(state_dir, spec)) {
    b.read_limit = *unsaved;
  } else {
    b.read_limit = kMaxCalibrationBytes;
    b.calibrating = true;
  }
  return b;
}

void FinishCalibration(const ProbeSpec& spec, const std::filesystem::path& state_dir,
                       std::uint64_t bytes_read, bool stopped_by_time_budget, ProbeResult& result) {
  const std::uint64_t budget = CalibratedBudget(bytes_read, stopped_by_time_budget);
  result.extra["calibrated"] = 1;
  result.extra["budget_bytes"] = static_cast<double>(budget);
  auto saved = SaveCalibration(state_dir, spec, budget);
  std::lock_guard<std::mutex> lock(unsaved_mu);
  auto& budgets = UnsavedBudgets();
  const std::pair<std::string, std::string> key{state_dir.string(), spec.name};
  if (saved) {
    budgets.erase(key);
    StateHealth::Process().Saved(Writer(spec));
    return;
  }
  StateHealth::Process().SaveFailed(Writer(spec), saved.error().message);
  const bool first = budgets.count(key) == 0;
  budgets[key] = Unsaved{spec, budget};
  if (first) {
    spdlog::warn(
        "probe={} calibration: cannot save {} bytes: {}; keeping the budget in memory for this "
        "process (the state dir signals it: iodrift_state_writable 0; retried after every run)",
        spec.name, budget, saved.error().message);
  }
}

void RetryUnsavedCalibrations() {
  std::lock_guard<std::mutex> lock(unsaved_mu);
  auto& budgets = UnsavedBudgets();
  for (auto it = budgets.begin(); it != budgets.end();) {
    const auto& [dir, name] = it->first;
    if (auto saved = SaveCalibration(dir, it->second.spec, it->second.bytes); !saved) {
      StateHealth::Process().SaveFailed(Writer(it->second.spec), saved.error().message);
      ++it;
      continue;
    }
    spdlog::info("probe={} calibration: saved again to {}", name,
                 CalibrationPath(dir, name).string());
    StateHealth::Process().Saved(Writer(it->second.spec));
    it = budgets.erase(it);
  }
}

void ForgetUnsavedCalibrations() {
  std::lock_guard<std::mutex> lock(unsaved_mu);
  UnsavedBudgets().clear();
}

}  // namespace iodrift::probes
