// The byte budget of a sequential probe (buffered, direct) with `size: 0`: calibrated on the
// first run and then kept, so months of results read the same region and stay comparable.
//
// The first run reads for the probe's time budget (at most kMaxCalibrationBytes); the budget is
// 80 % of what it read (all of it when the read was not cut by the time budget), rounded down to
// whole 2 MiB steps and clamped to 16–128 MiB, so later runs at the same speed finish inside the
// time budget. It is stored in <state_dir>/calibration/<probe name> as a small text file keyed by
// kind and target:
//
//   version 1
//   kind buffered
//   target /dev/sda
//   bytes 67108864
//
// A file whose kind or target differs from the probe's (the probe was re-pointed) is ignored
// and replaced at the next calibration. Writes are atomic (temporary file + rename).
//
// A budget that cannot be saved (a read-only or full state dir) is kept in memory for the life
// of the process, so later runs read the same region and a baseline still forms; the failure
// is warned once per probe, reported to StateHealth::Process() ("calibration/<probe>", which
// makes iodrift_state_writable 0) and the save retried after every run
// (RetryUnsavedCalibrations) until it succeeds.
//
// Thread-safety: reentrant; concurrent saves for the same probe name race benignly (last wins).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "collectors/common/error.h"
#include "collectors/probes/probe.h"
#include "collectors/probes/probe_spec.h"

namespace iodrift::probes {

inline constexpr std::uint64_t kMinCalibratedBytes = 16ull << 20;
inline constexpr std::uint64_t kMaxCalibratedBytes = 128ull << 20;
inline constexpr std::uint64_t kMaxCalibrationBytes = kMaxCalibratedBytes;

// 80 % of `bytes_read` when the calibration run was cut by its time budget (all of it when it
// read everything it was allowed to), whole 2 MiB steps, clamped to [kMinCalibratedBytes,
// kMaxCalibratedBytes].
std::uint64_t CalibratedBudget(std::uint64_t bytes_read, bool stopped_by_time_budget);

// <state_dir>/calibration/<name>
std::filesystem::path CalibrationPath(const std::filesystem::path& state_dir,
                                      const std::string& name);

// The stored budget for this probe, or nullopt when none is stored, it is unreadable or
// malformed, or it was made for another kind or target.
std::optional<std::uint64_t> LoadCalibration(const std::filesystem::path& state_dir,
                                             const ProbeSpec& spec);

// Stores `bytes` for this probe (creating <state_dir>/calibration, mode 0700).
Expected<void> SaveCalibration(const std::filesystem::path& state_dir, const ProbeSpec& spec,
                               std::uint64_t bytes);

// The byte budget of one sequential run: spec.size when set, else the stored calibration, else
// the budget this process calibrated but could not save, else a calibration run (read up to
// kMaxCalibrationBytes within the time budget).
struct SequentialBudget {
  std::uint64_t read_limit = 0;  // bytes this run may read
  bool calibrating = false;
};
SequentialBudget ResolveBudget(const ProbeSpec& spec, const std::filesystem::path& state_dir);

// After a calibrating run that read `bytes_read`: stores CalibratedBudget(bytes_read) and notes
// it in result.extra (calibrated = 1, budget_bytes); a failed save keeps the budget in memory
// (see the top of this file) and leaves the result as it is.
void FinishCalibration(const ProbeSpec& spec, const std::filesystem::path& state_dir,
                       std::uint64_t bytes_read, bool stopped_by_time_budget, ProbeResult& result);

// Saves every budget kept in memory only; those saved are dropped from memory. Cheap when there
// are none (the daemon calls it after every recorded run).
void RetryUnsavedCalibrations();
// Drops every budget kept in memory only (tests).
void ForgetUnsavedCalibrations();

}  // namespace iodrift::probes
