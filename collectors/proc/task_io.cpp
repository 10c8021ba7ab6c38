// Parser and reader for /proc/<pid>/task/<tid>/io (see task_io.h for the format and the
// tolerance policy).
#include "collectors/proc/task_io.h"

#include <cerrno>
#include <string>
#include <utility>

#include "collectors/common/proc_root.h"
#include "collectors/common/text.h"

namespace iodrift::proc {

Expected<TaskIo> ParseTaskIo(std::string_view text) {
  TaskIo out;
  const std::pair<std::string_view, std::optional<std::uint64_t> TaskIo::*> fields[] = {
      {"rchar", &TaskIo::rchar},
      {"wchar", &TaskIo::wchar},
      {"syscr", &TaskIo::syscr},
      {"syscw", &TaskIo::syscw},
      {"read_bytes", &TaskIo::read_bytes},
      {"write_bytes", &TaskIo::write_bytes},
      {"cancelled_write_bytes", &TaskIo::cancelled_write_bytes},
  };
  for (std::string_view line : text::Lines(text)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = text::Trim(line.substr(0, colon));
    for (const auto& [name, member] : fields) {
      if (key != name) continue;
      const std::string_view value = text::Trim(line.substr(colon + 1));
      std::optional<std::uint64_t> parsed = text::ParseU64(value);
      if (!parsed) {
        return Fail(EINVAL, "io: " + std::string(name) + " is not a non-negative integer: '" +
                                std::string(value) + "'");
      }
      out.*member = parsed;
    }
  }
  return out;
}

Expected<TaskIo> ReadThreadIo() {
  static constexpr const char* kPath = "/proc/thread-self/io";
  Expected<std::string> text = ReadWholeFile(kPath);
  if (!text) return tl::unexpected(text.error());
  Expected<TaskIo> parsed = ParseTaskIo(*text);
  if (!parsed)
    parsed.error().message = std::string("parse ") + kPath + ": " + parsed.error().message;
  return parsed;
}

}  // namespace iodrift::proc
