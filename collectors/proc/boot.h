// Boot identity and age: /proc/stat "btime", /proc/uptime and /proc/sys/kernel/random/boot_id.
//
//   /proc/stat:    btime 1764685000          (seconds since the epoch)
//   /proc/uptime:  4011.52 7890.12           (uptime, idle seconds)
//   boot_id:       0b6c2e2a-...-...          (random UUID, new each boot)
//
// Tolerance: /proc/stat may have very long lines (intr with 65k counters); only "btime" is used.
// Each part is optional: a fixture or kernel lacking one file still yields the others.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"

namespace iodrift::proc {

// All three are pure and return nullopt on anything unexpected.
// The value of the first line "btime N"; nullopt when absent or not a u64.
std::optional<std::uint64_t> ParseStatBootTime(std::string_view stat_text);
// The first number of the first line (1 or 2 fields), a finite non-negative double.
std::optional<double> ParseUptime(std::string_view uptime_text);
// Returns the trimmed UUID when it looks like one: 8-4-4-4-12 hex digits (either case), dashes.
std::optional<std::string> ParseBootId(std::string_view boot_id_text);

struct BootState {
  std::optional<std::uint64_t> boot_time_seconds;
  std::optional<double> uptime_seconds;
  std::optional<std::string> boot_id;
};

// Reads all three; fails only when none of them could be read (with the last errno and every
// message). A file that was read but did not parse leaves its field nullopt.
Expected<BootState> ReadBootState(const ProcRoot& root);

}  // namespace iodrift::proc
