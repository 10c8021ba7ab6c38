// Parser and reader for /proc/pressure/<resource> (see pressure.h for the format and the
// tolerance policy).
#include "collectors/proc/pressure.h"

#include <cerrno>
#include <string>

#include "collectors/common/text.h"

namespace iodrift::proc {

namespace {

// True for a line this parser does not know but a newer kernel might print:
// "word key=value key=value". Anything else (binary garbage, a bare number) is malformed.
bool LooksLikeUnknownLine(const std::vector<std::string_view>& fields) {
  for (char c : fields[0]) {
    if (c < 'a' || c > 'z') return false;
  }
  for (std::size_t i = 1; i < fields.size(); ++i) {
    if (fields[i].find('=') == std::string_view::npos) return false;
  }
  return true;
}

// Parses the key=value fields after "some"/"full"; false when total= is missing or a known
// key has a value that is not a number (a percentage must also be non-negative).
bool ParseKeyValues(const std::vector<std::string_view>& fields, PressureLine& out) {
  bool have_total = false;
  for (std::size_t i = 1; i < fields.size(); ++i) {
    std::string_view field = fields[i];
    std::size_t eq = field.find('=');
    if (eq == std::string_view::npos) return false;
    std::string_view key = field.substr(0, eq);
    std::string_view value = field.substr(eq + 1);
    if (key == "total") {
      std::optional<std::uint64_t> total = text::ParseU64(value);
      if (!total) return false;
      out.total_us = *total;
      have_total = true;
      continue;
    }
    double* avg = key == "avg10"    ? &out.avg10
                  : key == "avg60"  ? &out.avg60
                  : key == "avg300" ? &out.avg300
                                    : nullptr;
    if (avg == nullptr) continue;  // a key added by a newer kernel
    std::optional<double> parsed = text::ParseDouble(value);
    if (!parsed || *parsed < 0) return false;
    *avg = *parsed;
  }
  return have_total;
}

}  // namespace

Pressure ParsePressure(std::string_view text) {
  Pressure out;
  for (std::string_view line : text::Lines(text)) {
    std::vector<std::string_view> fields = text::Fields(text::Trim(line));
    if (fields.empty()) continue;
    std::optional<PressureLine>* slot = fields[0] == "some"   ? &out.some
                                        : fields[0] == "full" ? &out.full
                                                              : nullptr;
    if (slot == nullptr) {
      if (!LooksLikeUnknownLine(fields)) ++out.malformed_lines;
      continue;
    }
    PressureLine parsed;
    if (slot->has_value() || !ParseKeyValues(fields, parsed)) {
      ++out.malformed_lines;  // a repeated line is as suspect as a broken one; keep the first
      continue;
    }
    *slot = parsed;
  }
  return out;
}

Expected<Pressure> ReadPressure(const ProcRoot& root, std::string_view resource) {
  if (resource != "cpu" && resource != "io" && resource != "memory" && resource != "irq") {
    return Fail(EINVAL, "pressure: unknown resource \"" + std::string(resource) +
                            "\" (expected cpu, io, memory or irq)");
  }
  std::string relative = "pressure/" + std::string(resource);
  Expected<std::string> text = root.Read(relative);
  if (!text) {
    Error error = text.error();
    if (error.code == ENOENT) {
      // The kernel creates /proc/pressure only with CONFIG_PSI and psi enabled at boot;
      // pressure/irq needs 6.1+ and CONFIG_IRQ_TIME_ACCOUNTING.
      error.message +=
          " (no PSI: kernel built without CONFIG_PSI or booted with psi=0; irq "
          "needs 6.1+ with CONFIG_IRQ_TIME_ACCOUNTING)";
    }
    return tl::unexpected(std::move(error));
  }
  Pressure parsed = ParsePressure(*text);
  if (!parsed.some && !parsed.full) {
    return Fail(EINVAL, "parse " + root.Path(relative).string() +
                            ": no \"some\" or \"full\" line (" +
                            std::to_string(parsed.malformed_lines) + " malformed lines)");
  }
  return parsed;
}

}  // namespace iodrift::proc
