// Small text helpers shared by the /proc parsers: line splitting, field splitting and strict
// number parsing. All functions are pure and never throw; they work on string_views that point
// into the caller's buffer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace iodrift::text {

// Splits on '\n'. A final line without a newline is returned too; empty lines are kept (callers
// skip them), so a truncated file yields its complete lines plus the partial last one.
std::vector<std::string_view> Lines(std::string_view s);

// Splits on runs of spaces and tabs; no empty fields.
std::vector<std::string_view> Fields(std::string_view s);
// The same into `out` (cleared first), so that a parser's loop reuses one vector.
void Fields(std::string_view s, std::vector<std::string_view>& out);

// Removes leading and trailing whitespace (space, tab, newline, carriage return).
std::string_view Trim(std::string_view s);

// Parses a whole field as an unsigned decimal integer; nullopt on empty input, sign, junk or
// overflow.
std::optional<std::uint64_t> ParseU64(std::string_view s);

// Parses a whole field as a signed decimal integer; nullopt on junk or overflow.
std::optional<std::int64_t> ParseI64(std::string_view s);

// Parses a whole field as a finite double ("123.45"); nullopt on junk, inf or nan.
std::optional<double> ParseDouble(std::string_view s);

// True when `s` is non-empty and every byte is printable ASCII other than space (0x21..0x7e).
// Parsers use it to refuse names made of binary garbage before they become metric labels.
bool IsPrintableWord(std::string_view s);

// True when `s` holds a C0 control character (0x00..0x1f, NUL included) or DEL (0x7f).
bool HasControlCharacter(std::string_view s);

// `s` made safe for a terminal: C0 controls other than newline and tab, DEL and bytes that are
// not UTF-8 become "\xNN"; the C1 controls U+0080..U+009F (in UTF-8, 0xC2 0x80..0x9F) become
// "\u00NN"; a backslash stays a backslash (the output is for reading, not for parsing back).
// Valid UTF-8 above U+009F is kept as it is.
std::string TerminalSafe(std::string_view s);

// snprintf into a string of at most 127 characters (longer output is cut).
__attribute__((format(printf, 1, 2))) std::string Printf(const char* format, ...);

// a * b and a + b, or nullopt when the result does not fit in 64 bits.
std::optional<std::uint64_t> CheckedMul(std::uint64_t a, std::uint64_t b);
std::optional<std::uint64_t> CheckedAdd(std::uint64_t a, std::uint64_t b);

}  // namespace iodrift::text
