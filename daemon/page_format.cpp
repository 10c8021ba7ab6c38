// Text helpers of the server-rendered pages: see page_format.h.
#include "daemon/page_format.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace iodrift::daemon {

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

namespace page {

std::string Utc(double seconds, UtcStyle style) {
  if (!std::isfinite(seconds)) return "-";
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  const int y = tm.tm_year + 1900, mo = tm.tm_mon + 1, d = tm.tm_mday, h = tm.tm_hour,
            mi = tm.tm_min, se = tm.tm_sec;
  char buf[64];
  switch (style) {
    case UtcStyle::kFull:
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d UTC", y, mo, d, h, mi, se);
      break;
    case UtcStyle::kDateTime:
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d", y, mo, d, h, mi, se);
      break;
    case UtcStyle::kDateMinute:
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d UTC", y, mo, d, h, mi);
      break;
    case UtcStyle::kMonthDayMinute:
      std::snprintf(buf, sizeof buf, "%02d-%02d %02d:%02d", mo, d, h, mi);
      break;
    case UtcStyle::kTime:
      std::snprintf(buf, sizeof buf, "%02d:%02d:%02d", h, mi, se);
      break;
    case UtcStyle::kTimeUtc:
      std::snprintf(buf, sizeof buf, "%02d:%02d:%02d UTC", h, mi, se);
      break;
    case UtcStyle::kMinute:
      std::snprintf(buf, sizeof buf, "%02d:%02d", h, mi);
      break;
  }
  return buf;
}

std::string Uptime(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  auto s = static_cast<long long>(seconds);
  char buf[48];
  if (s >= 86400) {
    std::snprintf(buf, sizeof buf, "%lldd %lldh", s / 86400, s % 86400 / 3600);
  } else if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh %lldm", s / 3600, s % 3600 / 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%lldm %llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%llds", s);
  }
  return buf;
}

}  // namespace page
}  // namespace iodrift::daemon
