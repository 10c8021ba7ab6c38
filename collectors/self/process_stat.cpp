#include "collectors/self/process_stat.h"

#include <cerrno>

#include "collectors/common/text.h"

namespace iodrift::self {

Expected<ProcessStat> ParseProcessStat(std::string_view text) {
  auto close = text.rfind(')');
  if (close == std::string_view::npos) return Fail(EINVAL, "stat: no ')' after comm");
  // After ") " come fields 3.. (state is field 3).
  auto fields = text::Fields(text::Trim(text.substr(close + 1)));
  // Index i here is field number i + 3.
  auto field = [&](int number) -> std::optional<std::uint64_t> {
    std::size_t i = static_cast<std::size_t>(number - 3);
    if (i >= fields.size()) return std::nullopt;
    return text::ParseU64(fields[i]);
  };
  auto utime = field(14), stime = field(15), start = field(22), vsize = field(23), rss = field(24);
  if (!utime || !stime || !start || !vsize || !rss) {
    return Fail(EINVAL, "stat: expected at least 24 numeric fields");
  }
  return ProcessStat{*utime, *stime, *start, *vsize, *rss};
}

}  // namespace iodrift::self
