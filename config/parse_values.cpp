// Durations and sizes as the config writes them ("1m30s", "1.5GiB"), and the text helpers of the
// loader's messages (a value shown safely, "did you mean").
#include <algorithm>
#include <array>
#include <vector>

#include "config/loader.h"

namespace iodrift::config {
namespace detail {

// `text` made safe to show inside a message: control and non-ASCII bytes escaped, long values cut.
std::string Shown(std::string_view text) {
  constexpr std::size_t kMaxShown = 60;
  std::string out = "`";
  for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMaxShown) out += "…";
  out += "`";
  return out;
}

std::string JoinChoices(std::span<const std::string_view> choices, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += separator;
    out += choices[i];
  }
  return out;
}

// Edit distance (insert, delete, substitute, adjacent swap), for "did you mean" suggestions.
std::size_t EditDistance(std::string_view a, std::string_view b) {
  if (a.size() > 64 || b.size() > 64) return 64;  // suggestions are for short keys only
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The closest of `choices` to `word` when it is close enough to be a plausible typo.
std::optional<std::string_view> Closest(std::string_view word,
                                        std::span<const std::string_view> choices) {
  std::optional<std::string_view> best;
  std::size_t best_distance = 0;
  for (std::string_view choice : choices) {
    const std::size_t distance = EditDistance(word, choice);
    const std::size_t limit = std::max<std::size_t>(1, std::min<std::size_t>(3, choice.size() / 3));
    // "listen_address" -> listen, "state" -> state_dir: one is a long enough prefix of the other.
    const bool prefix = std::min(word.size(), choice.size()) >= 4 &&
                        (word.starts_with(choice) || choice.starts_with(word));
    if ((distance <= limit || prefix) && (!best || distance < best_distance)) {
      best = choice;
      best_distance = distance;
    }
  }
  return best;
}

// Parses a run of decimal digits at the front of `*text` (consumed). nullopt when there is no
// digit or the value exceeds `limit`; in the overflow case `*overflow` is set.
std::optional<std::uint64_t> TakeDigits(std::string_view* text, std::uint64_t limit,
                                        bool* overflow) {
  std::size_t n = 0;
  std::uint64_t value = 0;
  while (n < text->size() && (*text)[n] >= '0' && (*text)[n] <= '9') {
    const std::uint64_t digit = static_cast<std::uint64_t>((*text)[n] - '0');
    if (value > (limit - digit) / 10) {
      *overflow = true;
      return std::nullopt;
    }
    value = value * 10 + digit;
    ++n;
  }
  if (n == 0) return std::nullopt;
  text->remove_prefix(n);
  return value;
}

// A decimal number "123" or "1.25" at the front of `*text`: whole part, and the fraction as
// (digits, scale) with at most 6 fractional digits.
struct Decimal {
  std::uint64_t whole = 0;
  std::uint64_t fraction = 0;
  std::uint64_t scale = 1;  // fraction / scale is the fractional part
};

enum class NumberError { kJunk, kTooLarge };

tl::expected<Decimal, NumberError> TakeDecimal(std::string_view* text, std::uint64_t limit) {
  bool overflow = false;
  Decimal out;
  auto whole = TakeDigits(text, limit, &overflow);
  if (!whole) return tl::unexpected(overflow ? NumberError::kTooLarge : NumberError::kJunk);
  out.whole = *whole;
  if (!text->empty() && text->front() == '.') {
    text->remove_prefix(1);
    std::size_t digits = 0;
    while (!text->empty() && text->front() >= '0' && text->front() <= '9') {
      if (++digits > 6) return tl::unexpected(NumberError::kJunk);
      out.fraction = out.fraction * 10 + static_cast<std::uint64_t>(text->front() - '0');
      out.scale *= 10;
      text->remove_prefix(1);
    }
    if (digits == 0) return tl::unexpected(NumberError::kJunk);
  }
  return out;
}

// whole * unit + fraction * unit / scale, rounded down; nullopt on overflow.
std::optional<std::uint64_t> Scale(const Decimal& number, std::uint64_t unit) {
  std::uint64_t whole = 0;
  if (__builtin_mul_overflow(number.whole, unit, &whole)) return std::nullopt;
  // fraction < 10^6 and unit <= 2^40 keep this product below 2^64.
  const std::uint64_t part = number.fraction * unit / number.scale;
  std::uint64_t total = 0;
  if (__builtin_add_overflow(whole, part, &total)) return std::nullopt;
  return total;
}

// The detailed forms behind ParseDuration / ParseSize: the value, or what is wrong with it.
tl::expected<Duration, std::string> ParseDurationDetailed(std::string_view text) {
  if (text.empty()) return tl::unexpected(std::string(kDurationHint));
  if (text.front() == '-') return tl::unexpected(std::string("must be greater than zero"));
  struct Unit {
    std::string_view suffix;
    std::uint64_t ms;
  };
  // Longest suffix first so "ms" is not read as "m" + junk. Ranks order the components of a
  // combined duration: "1h30m" is accepted, "30m1h" and "5s5s" are not.
  static constexpr std::array<Unit, 5> kUnits = {
      {{"ms", 1}, {"d", 86'400'000}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}}};
  static constexpr std::array<int, 5> kRank = {4, 0, 1, 2, 3};
  const std::uint64_t max_ms = static_cast<std::uint64_t>(kMaxDuration.count());
  std::uint64_t total = 0;
  int last_rank = -1;
  std::string_view rest = text;
  while (!rest.empty()) {
    auto number = TakeDecimal(&rest, max_ms * 1000);
    if (!number) {
      if (number.error() == NumberError::kTooLarge) {
        return tl::unexpected(std::string("must be at most 30d"));
      }
      return tl::unexpected(std::string(kDurationHint));
    }
    std::optional<std::size_t> unit_index;
    for (std::size_t i = 0; i < kUnits.size(); ++i) {
      if (rest.starts_with(kUnits[i].suffix)) {
        unit_index = i;
        break;
      }
    }
    if (!unit_index) {
      if (rest.empty() && last_rank < 0) {
        return tl::unexpected("needs a unit (ms, s, m, h or d), e.g. " + std::string(text) + "s");
      }
      return tl::unexpected(std::string(kDurationHint));
    }
    if (kRank[*unit_index] <= last_rank) return tl::unexpected(std::string(kDurationHint));
    last_rank = kRank[*unit_index];
    rest.remove_prefix(kUnits[*unit_index].suffix.size());
    auto ms = Scale(*number, kUnits[*unit_index].ms);
    if (!ms || *ms > max_ms || total + *ms > max_ms) {
      return tl::unexpected(std::string("must be at most 30d"));
    }
    total += *ms;
  }
  if (total == 0) return tl::unexpected(std::string("must be greater than zero"));
  return Duration(static_cast<Duration::rep>(total));
}

tl::expected<std::uint64_t, std::string> ParseSizeDetailed(std::string_view text) {
  if (text.empty()) return tl::unexpected(std::string(kSizeHint));
  if (text.front() == '-') return tl::unexpected(std::string("must be greater than zero"));
  struct Unit {
    std::string_view suffix;
    std::uint64_t bytes;
  };
  static constexpr std::array<Unit, 11> kUnits = {{{"KiB", 1ULL << 10},
                                                   {"MiB", 1ULL << 20},
                                                   {"GiB", 1ULL << 30},
                                                   {"TiB", 1ULL << 40},
                                                   {"kB", 1'000},
                                                   {"KB", 1'000},
                                                   {"MB", 1'000'000},
                                                   {"GB", 1'000'000'000},
                                                   {"TB", 1'000'000'000'000},
                                                   {"B", 1},
                                                   {"", 1}}};
  std::string_view rest = text;
  auto number = TakeDecimal(&rest, UINT64_MAX);
  if (!number) {
    if (number.error() == NumberError::kTooLarge) return tl::unexpected(std::string("too large"));
    return tl::unexpected(std::string(kSizeHint));
  }
  for (const Unit& unit : kUnits) {
    if (rest != unit.suffix) continue;
    if (unit.bytes == 1 && number->fraction != 0) {
      return tl::unexpected(std::string("a byte count must be a whole number"));
    }
    auto bytes = Scale(*number, unit.bytes);
    if (!bytes) return tl::unexpected(std::string("too large"));
    if (*bytes == 0) return tl::unexpected(std::string("must be greater than zero"));
    return *bytes;
  }
  return tl::unexpected(std::string(kSizeHint));
}

}  // namespace detail

std::optional<Duration> ParseDuration(std::string_view text) {
  auto parsed = detail::ParseDurationDetailed(text);
  if (!parsed) return std::nullopt;
  return *parsed;
}

std::optional<std::uint64_t> ParseSize(std::string_view text) {
  auto parsed = detail::ParseSizeDetailed(text);
  if (!parsed) return std::nullopt;
  return *parsed;
}

}  // namespace iodrift::config
