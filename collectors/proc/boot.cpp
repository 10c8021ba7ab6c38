// Parsers and reader for the boot identity: /proc/stat "btime", /proc/uptime and
// /proc/sys/kernel/random/boot_id (see boot.h).
#include "collectors/proc/boot.h"

#include <cerrno>
#include <vector>

#include "collectors/common/text.h"

namespace iodrift::proc {

std::optional<std::uint64_t> ParseStatBootTime(std::string_view stat_text) {
  // Walk the lines without splitting them into fields: the "intr" line can hold 65k counters
  // (130k characters) and only "btime" matters.
  constexpr std::string_view kKey = "btime";
  std::size_t start = 0;
  while (start < stat_text.size()) {
    std::size_t nl = stat_text.find('\n', start);
    std::size_t end = nl == std::string_view::npos ? stat_text.size() : nl;
    std::string_view line = stat_text.substr(start, end - start);
    if (line.substr(0, kKey.size()) == kKey) {
      std::vector<std::string_view> f = text::Fields(line);
      if (f.size() == 2 && f[0] == kKey) return text::ParseU64(f[1]);
    }
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return std::nullopt;
}

std::optional<double> ParseUptime(std::string_view uptime_text) {
  // "4011.52 7890.12\n": uptime, then the summed idle time of all CPUs.
  std::string_view first_line = uptime_text.substr(0, uptime_text.find('\n'));
  std::vector<std::string_view> f = text::Fields(text::Trim(first_line));
  if (f.empty() || f.size() > 2) return std::nullopt;
  std::optional<double> uptime = text::ParseDouble(f[0]);
  if (!uptime || *uptime < 0) return std::nullopt;
  return uptime;
}

std::optional<std::string> ParseBootId(std::string_view boot_id_text) {
  // The kernel prints a random (version 4) UUID in the 8-4-4-4-12 form, lowercase.
  std::string_view id = text::Trim(boot_id_text);
  if (id.size() != 36) return std::nullopt;
  for (std::size_t i = 0; i < id.size(); ++i) {
    char c = id[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return std::nullopt;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return std::nullopt;
    }
  }
  return std::string(id);
}

Expected<BootState> ReadBootState(const ProcRoot& root) {
  BootState out;
  int readable = 0;
  std::string errors;
  auto note = [&errors](const Error& error) {
    if (!errors.empty()) errors += "; ";
    errors += error.message;
  };
  int last_code = 0;
  if (Expected<std::string> stat = root.Read("stat")) {
    ++readable;
    out.boot_time_seconds = ParseStatBootTime(*stat);
  } else {
    note(stat.error());
    last_code = stat.error().code;
  }
  if (Expected<std::string> uptime = root.Read("uptime")) {
    ++readable;
    out.uptime_seconds = ParseUptime(*uptime);
  } else {
    note(uptime.error());
    last_code = uptime.error().code;
  }
  if (Expected<std::string> boot_id = root.Read("sys/kernel/random/boot_id")) {
    ++readable;
    out.boot_id = ParseBootId(*boot_id);
  } else {
    note(boot_id.error());
    last_code = boot_id.error().code;
  }
  if (readable == 0) return Fail(last_code, errors);
  return out;
}

}  // namespace iodrift::proc
