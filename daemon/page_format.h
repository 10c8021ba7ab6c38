// Text helpers of the server-rendered pages (the status page and its SVG charts): HTML escaping
// and the UTC time, uptime and printf-style number formats they show.
//
// Pure functions, no locale, no clock: the same input always gives the same text.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "collectors/common/text.h"

namespace iodrift::daemon {

// &, <, >, " and ' as entities; everything else (UTF-8 included) unchanged.
std::string HtmlEscape(std::string_view text);

namespace page {

enum class UtcStyle { kFull, kDateTime, kDateMinute, kMonthDayMinute, kTime, kTimeUtc, kMinute };

// `seconds` since the epoch in UTC, by style: 2026-12-02 23:10:05 UTC (kFull),
// 2026-12-02 23:10:05, 2026-12-02 23:10 UTC, 12-02 23:10, 23:10:05, 23:10:05 UTC, 23:10 (kMinute).
// "-" when `seconds` is not finite.
std::string Utc(double seconds, UtcStyle style = UtcStyle::kFull);

// A duration in its two largest units: "40d 3h", "3h 12m", "5m 3s", "42s"; "-" when negative or
// not finite.
std::string Uptime(double seconds);

// snprintf into a string (collectors/common/text.h).
using text::Printf;

}  // namespace page
}  // namespace iodrift::daemon
