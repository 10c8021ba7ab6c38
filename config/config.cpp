// The YAML config loader: yaml-cpp parses, a schema walk below validates and fills the plain
// structs of config.h.
//
// yaml-cpp throws; every YAML::Exception is caught here and becomes a Problem (the one place for
// this library, ../shared/STYLE.md "Errors"). The walk never stops at the first problem: each key
// is checked on its own so `iodriftd --check-config` lists everything wrong in one pass. The
// input is bounded before yaml-cpp sees it (size cap, UTF-8 text check), and the walk only
// descends into the shapes the schema expects, so hostile files (binary data, deep nesting,
// alias cycles, huge files) end as a problem, never as a crash or a hang.
#include "config/config.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <span>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "collectors/probes/netfs.h"
#include "config/listen.h"

namespace iodrift::config {
namespace {

// The `time_budget:` a probe of `kind` gets when the config does not set one: 100 ms for cached
// and memory, whose timed windows copy for the whole budget (CPU-bound: a run costs about its
// budget of CPU on a free core, and 12 runs an hour must stay within 2 CPU-seconds), 250 ms for
// the others (a cap on reading; their CPU is the kernel's I/O path, far below the budget).
Duration DefaultTimeBudget(ProbeKind kind) {
  using std::chrono::milliseconds;
  return kind == ProbeKind::kCached || kind == ProbeKind::kMemory ? milliseconds(100)
                                                                  : milliseconds(250);
}

// After this many problems the rest are summarised in one line: a 1 MiB file of typos would
// otherwise print hundreds of thousands of lines.
constexpr std::size_t kMaxProblems = 100;
// std::regex compiles recursively; a bounded pattern keeps the stack bounded.
constexpr std::size_t kMaxRegexLength = 1024;
constexpr std::size_t kMaxProbeNameLength = 64;
constexpr std::size_t kMaxPathLength = 4095;
constexpr std::uint64_t kMaxCount = 100000;  // files, requests
constexpr Duration kMaxDuration = std::chrono::hours(24 * 30);

constexpr std::string_view kDurationHint = "expected a duration like 500ms, 30s, 10m, 1h or 1m30s";
constexpr std::string_view kSizeHint = "expected a size like 4096, 4KiB, 64MiB, 1.5GiB or 100MB";
constexpr std::string_view kKindChoices = "cached|buffered|direct|random|metadata|memory";

// ---- small text helpers -------------------------------------------------------------------------

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

// ---- input screening ----------------------------------------------------------------------------

struct Position {
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based; 0 = unknown
};

Position PositionOf(const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0 || mark.column < 0) return {};
  return {mark.line + 1, mark.column + 1};
}

Position PositionOf(const YAML::Node& node) {
  try {
    return PositionOf(node.Mark());
  } catch (const YAML::Exception&) {
    return {};
  }
}

// Byte offset -> 1-based line and column (columns count bytes).
Position PositionOfOffset(std::string_view text, std::size_t offset) {
  Position pos{1, 1};
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++pos.line;
      pos.column = 1;
    } else {
      ++pos.column;
    }
  }
  return pos;
}

// The text of 0-based line `line`, without its newline; empty past the end.
std::string_view LineText(std::string_view text, int line) {
  std::size_t start = 0;
  for (int i = 0; i < line; ++i) {
    start = text.find('\n', start);
    if (start == std::string_view::npos) return {};
    ++start;
  }
  const std::size_t end = text.find('\n', start);
  return text.substr(start, end == std::string_view::npos ? text.size() - start : end - start);
}

// yaml-cpp reports "not found" errors (an unclosed `[`, `{`) at the end of input, which is often
// the line after the last one. Pointing past the end helps nobody: use the end of the last line.
Position SyntaxErrorPosition(std::string_view text, const YAML::Mark& mark) {
  Position pos = PositionOf(mark);
  if (pos.line == 0) return pos;
  std::string_view content = text;
  while (!content.empty() && (content.back() == '\n' || content.back() == '\r' ||
                              content.back() == ' ' || content.back() == '\t')) {
    content.remove_suffix(1);
  }
  if (content.empty()) return pos;
  const int last_line = static_cast<int>(std::count(content.begin(), content.end(), '\n'));
  if (mark.line > last_line) {
    pos.line = last_line + 1;
    pos.column = static_cast<int>(LineText(content, last_line).size()) + 1;
  }
  return pos;
}

// A hint when the line of a syntax error is indented with a tab (YAML forbids tabs there and
// yaml-cpp's message does not say so).
std::string TabHint(std::string_view text, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return "";
  std::string_view line = LineText(text, mark.line);
  const std::size_t indent_end = line.find_first_not_of(" \t");
  if (line.substr(0, indent_end).find('\t') == std::string_view::npos) return "";
  return " (the line is indented with a tab; YAML allows only spaces)";
}

// Offset of the first byte that cannot be in a UTF-8 YAML text (C0 controls other than tab,
// newline and carriage return, DEL, or a malformed UTF-8 sequence), or npos.
std::size_t FirstNonTextByte(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) return i;
      ++i;
      continue;
    }
    std::size_t length = 0;
    std::uint32_t code = 0;
    if ((c & 0xe0) == 0xc0) {
      length = 2;
      code = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      length = 3;
      code = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      length = 4;
      code = c & 0x07;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (std::size_t k = 1; k < length; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xc0) != 0x80) return i;
      code = (code << 6) | (cc & 0x3f);
    }
    static constexpr std::array<std::uint32_t, 5> kMinCode = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kMinCode[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

// Discards parser events; used to ask yaml-cpp whether a second document follows the first.
class DocumentCounter : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (!started_) start_ = mark;
    started_ = true;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  const YAML::Mark& start() const { return start_; }

 private:
  bool started_ = false;
  YAML::Mark start_;
};

// Where a second YAML document (or stray content yaml-cpp reads as one) begins, if any.
// yaml-cpp 0.7's LoadAll can loop forever on some malformed input (upstream PR #1319), so this
// asks the parser for exactly two documents and no more.
std::optional<YAML::Mark> SecondDocument(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentCounter first;
  if (!parser.HandleNextDocument(first)) return std::nullopt;
  DocumentCounter second;
  if (!parser.HandleNextDocument(second)) return std::nullopt;
  return second.start();
}

// The contents of the regular file `path` (at most kMaxConfigBytes), or a message saying why not
// ("cannot read /x: permission denied"). Never opens a device or FIFO (stat first) and never
// blocks.
tl::expected<std::string, std::string> ReadSmallRegularFile(const std::string& path) {
  auto errno_text = [](int code) {
    std::string message = std::strerror(code);
    if (!message.empty() && message[0] >= 'A' && message[0] <= 'Z') {
      message[0] = static_cast<char>(message[0] - 'A' + 'a');
    }
    return message;
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return tl::unexpected("cannot read " + Shown(path) + ": " + errno_text(errno));
  }
  if (!S_ISREG(st.st_mode)) return tl::unexpected(Shown(path) + " is not a regular file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return tl::unexpected("cannot read " + Shown(path) + ": " + errno_text(errno));
  std::string text(kMaxConfigBytes + 1, '\0');
  std::size_t used = 0;
  while (used < text.size()) {
    const ssize_t n = ::read(fd, text.data() + used, text.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int code = errno;
      ::close(fd);
      return tl::unexpected("cannot read " + Shown(path) + ": " + errno_text(code));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (used > kMaxConfigBytes) return tl::unexpected(Shown(path) + " is larger than 1 MiB");
  text.resize(used);
  return text;
}

// ---- the schema walk ----------------------------------------------------------------------------

// One `key: value` pair of a YAML map, with the dotted path of the key.
struct Entry {
  std::string path;  // e.g. "probes[2].interval"
  std::string name;  // e.g. "interval"
  YAML::Node key;
  YAML::Node value;
};

std::string DescribeNode(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return Shown(node.Scalar());
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

// True for a scalar the author marked as a string: quoted, or tagged !!str. Booleans and
// integers must be plain so that `enabled: "false"` does not pass as a typo of `false`.
bool IsMarkedString(const YAML::Node& node) {
  const std::string& tag = node.Tag();
  return tag == "!" || tag == "tag:yaml.org,2002:str";
}

bool IsAbsolutePath(std::string_view path) { return !path.empty() && path.front() == '/'; }

class Loader;

// One key of a config section: its name, written once, and what reading it does. `apply` reads
// the entry's value with the loader (which reports any problem) and stores it in `target`, the
// section's struct (or a small struct that also remembers entries for cross-key checks). A
// section is a table of these; the loader takes the section's key list from the same table.
template <class Target>
struct KeyRule {
  std::string_view name;
  void (*apply)(Loader& loader, const Entry& entry, Target& target);
};

class Loader {
 public:
  explicit Loader(std::string file) : file_(std::move(file)) {}

  void Report(Position pos, std::string key, std::string message) {
    ++problem_count_;
    if (problems_.size() >= kMaxProblems) return;
    problems_.push_back(Problem{file_, pos.line, pos.column, std::move(key), std::move(message)});
  }
  void Report(const YAML::Node& at, std::string key, std::string message) {
    Report(PositionOf(at), std::move(key), std::move(message));
  }

  // Where to point for a problem with an entry's value: the value itself, or the key when the
  // value is empty (yaml-cpp marks an empty value at the *next* token, often the next line).
  static Position ValuePosition(const Entry& entry) {
    return entry.value.IsNull() ? PositionOf(entry.key) : PositionOf(entry.value);
  }
  void ReportValue(const Entry& entry, std::string message) {
    Report(ValuePosition(entry), entry.path, std::move(message));
  }

  // Problems sorted by position, with a closing note when some were dropped.
  std::vector<Problem> TakeProblems() {
    std::stable_sort(problems_.begin(), problems_.end(), [](const Problem& a, const Problem& b) {
      return std::pair(a.line, a.column) < std::pair(b.line, b.column);
    });
    if (problem_count_ > problems_.size()) {
      problems_.push_back(Problem{file_, 0, 0, "",
                                  std::to_string(problem_count_ - problems_.size()) +
                                      " more problems not shown; fix the ones above first"});
    }
    return std::move(problems_);
  }

  bool ok() const { return problem_count_ == 0; }

  // Walks a map against a section's key table: reports non-scalar keys, duplicates and unknown
  // keys (with a "did you mean" suggestion or the list of keys, both taken from `rules`), and
  // calls the matching rule's `apply` once per known key with `target`. A null map is an empty
  // one.
  template <class Target>
  void ForEachEntry(const YAML::Node& map, const std::string& prefix,
                    std::type_identity_t<std::span<const KeyRule<Target>>> rules, Target& target) {
    if (map.IsNull()) return;
    std::vector<std::string_view> known;
    known.reserve(rules.size());
    for (const KeyRule<Target>& rule : rules) known.push_back(rule.name);
    std::map<std::string, Position, std::less<>> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      if (!key.IsScalar()) {
        Report(key, prefix, "keys must be plain names, got " + DescribeNode(key));
        continue;
      }
      const std::string name = key.Scalar();
      const std::string path = prefix.empty() ? name : prefix + "." + name;
      const auto rule = std::find_if(rules.begin(), rules.end(),
                                     [&](const KeyRule<Target>& r) { return r.name == name; });
      if (rule == rules.end()) {
        std::string message = "unknown key";
        if (problems_.size() >= kMaxProblems) {
          // Counted only; skip the suggestion search (a 1 MiB file can hold 100k keys).
        } else if (name == "<<") {
          message += " (YAML merge keys are not supported; write the keys out)";
        } else if (auto close = Closest(name, known)) {
          message += " (did you mean `" + std::string(*close) + "`?)";
        } else {
          message += " (expected one of: " + JoinChoices(known, ", ") + ")";
        }
        Report(key, path, std::move(message));
        continue;
      }
      const Position pos = PositionOf(key);
      auto [first, inserted] = seen.emplace(name, pos);
      if (!inserted) {
        Report(pos, path,
               "duplicate key (first defined at line " + std::to_string(first->second.line) + ")");
        continue;
      }
      rule->apply(*this, Entry{path, name, key, value}, target);
    }
  }

  // A scalar value as text. `what` names the expected value for the message.
  std::optional<std::string> ReadScalar(const Entry& entry, std::string_view what) {
    if (entry.value.IsNull()) {
      ReportValue(entry, "has no value (expected " + std::string(what) + ")");
      return std::nullopt;
    }
    if (!entry.value.IsScalar()) {
      ReportValue(entry, "expected " + std::string(what) + ", got " + DescribeNode(entry.value));
      return std::nullopt;
    }
    return entry.value.Scalar();
  }

  std::optional<bool> ReadBool(const Entry& entry) {
    auto text = ReadScalar(entry, "true or false");
    if (!text) return std::nullopt;
    if (!IsMarkedString(entry.value)) {
      if (*text == "true" || *text == "True" || *text == "TRUE") return true;
      if (*text == "false" || *text == "False" || *text == "FALSE") return false;
      ReportValue(entry, "expected true or false, got " + Shown(*text));
    } else {
      ReportValue(entry, "expected true or false, got the quoted string " + Shown(*text) +
                             " (remove the quotes)");
    }
    return std::nullopt;
  }

  // A plain decimal integer in [min, max].
  std::optional<std::uint64_t> ReadCount(const Entry& entry, std::uint64_t min, std::uint64_t max) {
    const std::string what =
        "an integer from " + std::to_string(min) + " to " + std::to_string(max);
    auto text = ReadScalar(entry, what);
    if (!text) return std::nullopt;
    if (IsMarkedString(entry.value)) {
      ReportValue(entry, "expected " + what + ", got the quoted string " + Shown(*text) +
                             " (remove the quotes)");
      return std::nullopt;
    }
    std::string_view rest = *text;
    bool overflow = false;
    auto value = TakeDigits(&rest, UINT64_MAX, &overflow);
    if (overflow || (value && rest.empty() && (*value < min || *value > max))) {
      ReportValue(entry, "must be " + what + ", got " + Shown(*text));
      return std::nullopt;
    }
    if (!value || !rest.empty()) {
      ReportValue(entry, "expected " + what + ", got " + Shown(*text));
      return std::nullopt;
    }
    return value;
  }

  // `readers: N` or `readers: [1, 2, 4, 8]`: reader counts from 1 to kMaxReaders, a list
  // without repeats (at most 16 counts: each is a step of the run).
  std::optional<std::vector<std::uint32_t>> ReadReaders(const Entry& entry) {
    constexpr std::size_t kMaxSteps = 16;
    if (entry.value.IsScalar()) {
      auto v = ReadCount(entry, 1, probes::kMaxReaders);
      if (!v) return std::nullopt;
      return std::vector<std::uint32_t>{static_cast<std::uint32_t>(*v)};
    }
    if (!entry.value.IsSequence() || entry.value.size() == 0 || entry.value.size() > kMaxSteps) {
      ReportValue(entry, "expected a reader count from 1 to " +
                             std::to_string(probes::kMaxReaders) + " or a list of 1 to " +
                             std::to_string(kMaxSteps) + " of them like [1, 2, 4, 8], got " +
                             (entry.value.IsSequence() && entry.value.size() == 0
                                  ? std::string("an empty list")
                                  : DescribeNode(entry.value)));
      return std::nullopt;
    }
    std::vector<std::uint32_t> counts;
    bool ok = true;
    for (std::size_t i = 0; i < entry.value.size(); ++i) {
      const Entry item{entry.path + "[" + std::to_string(i) + "]", entry.name, entry.key,
                       entry.value[i]};
      auto v = ReadCount(item, 1, probes::kMaxReaders);
      if (!v) {
        ok = false;
        continue;
      }
      const auto count = static_cast<std::uint32_t>(*v);
      if (std::find(counts.begin(), counts.end(), count) != counts.end()) {
        ReportValue(item, "repeats reader count " + std::to_string(count));
        ok = false;
        continue;
      }
      counts.push_back(count);
    }
    if (!ok) return std::nullopt;
    return counts;
  }

  // `allow_zero`: "0" with or without a unit ("0s", "0m") reads as none (zero).
  std::optional<Duration> ReadDuration(const Entry& entry, bool allow_zero = false) {
    auto text = ReadScalar(entry, "a duration like 30s");
    if (!text) return std::nullopt;
    if (allow_zero && !text->empty() && (*text)[0] == '0') {
      const std::string_view t = *text;
      const auto end = t.find_first_not_of('0');
      const std::string_view unit = end == std::string_view::npos ? "" : t.substr(end);
      if (unit.empty() || unit == "ms" || unit == "s" || unit == "m" || unit == "h" ||
          unit == "d") {
        return Duration::zero();
      }
    }
    auto duration = ParseDurationDetailed(*text);
    if (!duration) {
      ReportValue(entry, duration.error() + ", got " + Shown(*text));
      return std::nullopt;
    }
    return *duration;
  }

  // A size in bytes; `auto` (for probe sizes) stands for 0 = calibrate.
  std::optional<std::uint64_t> ReadSize(const Entry& entry, bool allow_auto) {
    auto text = ReadScalar(entry, "a size like 64MiB");
    if (!text) return std::nullopt;
    if (allow_auto && *text == "auto") return 0;
    auto size = ParseSizeDetailed(*text);
    if (!size) {
      std::string message = size.error() + ", got " + Shown(*text);
      if (allow_auto) message += " (omit the key or write `auto` to calibrate)";
      ReportValue(entry, std::move(message));
      return std::nullopt;
    }
    return *size;
  }

  std::optional<std::string> ReadChoice(const Entry& entry,
                                        std::optional<std::string> (*check)(std::string_view)) {
    auto text = ReadScalar(entry, "a string");
    if (!text) return std::nullopt;
    if (auto problem = check(*text)) {
      ReportValue(entry, *problem + ", got " + Shown(*text));
      return std::nullopt;
    }
    return text;
  }

  std::optional<std::string> ReadAbsolutePath(const Entry& entry) {
    auto text = ReadScalar(entry, "an absolute path");
    if (!text) return std::nullopt;
    if (!IsAbsolutePath(*text)) {
      ReportValue(entry, "must be an absolute path (starting with /), got " + Shown(*text));
      return std::nullopt;
    }
    if (text->size() > kMaxPathLength) {
      ReportValue(entry, "path is longer than " + std::to_string(kMaxPathLength) + " bytes");
      return std::nullopt;
    }
    return text;
  }

  std::optional<std::string> ReadRegex(const Entry& entry) {
    auto text = ReadScalar(entry, "a regular expression");
    if (!text) return std::nullopt;
    if (text->size() > kMaxRegexLength) {
      ReportValue(entry, "regular expression is longer than " + std::to_string(kMaxRegexLength) +
                             " characters");
      return std::nullopt;
    }
    try {
      std::regex compiled(*text, std::regex::ECMAScript);
    } catch (const std::regex_error& error) {
      ReportValue(entry, std::string("invalid regular expression (ECMAScript): ") + error.what());
      return std::nullopt;
    }
    return text;
  }

  // ---- sections ---------------------------------------------------------------------------------
  //
  // Each section is a table of KeyRule rows: a key is named once, next to what reading it does.
  // ForEachEntry takes the key list (unknown keys, "did you mean") from the same table, so adding
  // a key or a collector is one row plus the field in config.h. Rows are in the order the keys
  // are listed in messages ("expected one of: ...").

  Config LoadRoot(const YAML::Node& root) {
    Config config;
    if (root.IsNull()) return config;
    if (!root.IsMap()) {
      Report(root, "",
             "the top level must be a map of settings (`listen: ...`, `probes: ...`), got " +
                 DescribeNode(root));
      return config;
    }
    static constexpr KeyRule<Config> kKeys[] = {
        {"listen",
         [](Loader& l, const Entry& e, Config& c) {
           if (auto v = l.ReadChoice(e, &CheckListen)) c.listen = *v;
         }},
        {"state_dir",
         [](Loader& l, const Entry& e, Config& c) {
           if (auto v = l.ReadAbsolutePath(e)) c.state_dir = *v;
         }},
        {"proc_root",
         [](Loader& l, const Entry& e, Config& c) {
           if (auto v = l.ReadAbsolutePath(e)) c.proc_root = *v;
         }},
        {"sys_root",
         [](Loader& l, const Entry& e, Config& c) {
           if (auto v = l.ReadAbsolutePath(e)) c.sys_root = *v;
         }},
        {"dbus",
         [](Loader& l, const Entry& e, Config& c) {
           if (auto v = l.ReadChoice(e, &CheckDbus)) c.dbus = *v;
         }},
        {"log_level",
         [](Loader& l, const Entry& e, Config& c) {
           if (auto v = l.ReadChoice(e, &CheckLogLevel)) c.log_level = *v;
         }},
        {"collectors",
         [](Loader& l, const Entry& e, Config& c) { l.LoadCollectors(e, c.collectors); }},
        {"http", [](Loader& l, const Entry& e, Config& c) { l.LoadHttp(e, c.http); }},
        {"scheduler",
         [](Loader& l, const Entry& e, Config& c) { l.LoadScheduler(e, c.scheduler); }},
        {"status", [](Loader& l, const Entry& e, Config& c) { l.LoadStatus(e, c.status); }},
        {"diagnose", [](Loader& l, const Entry& e, Config& c) { l.LoadDiagnose(e, c.diagnose); }},
        {"probes", [](Loader& l, const Entry& e, Config& c) { l.LoadProbes(e, &c.probes); }},
    };
    ForEachEntry<Config>(root, "", kKeys, config);
    return config;
  }

  // A map section: null is an empty map (all defaults), anything but a map is a problem.
  bool ExpectMap(const Entry& entry, std::string_view what) {
    if (entry.value.IsNull() || entry.value.IsMap()) return true;
    ReportValue(entry, "expected " + std::string(what) + ", got " + DescribeNode(entry.value));
    return false;
  }

  // `name: true|false`, or `name: {enabled: ..., <options>}` walked with the `options` table
  // (which holds `enabled` too) into `target`.
  template <class Options>
  void LoadCollector(const Entry& entry, bool& enabled,
                     std::type_identity_t<std::span<const KeyRule<Options>>> options,
                     Options& target) {
    if (entry.value.IsMap()) {
      ForEachEntry<Options>(entry.value, entry.path, options, target);
      return;
    }
    if (entry.value.IsScalar() || entry.value.IsNull()) {
      if (auto v = ReadBool(entry)) enabled = *v;
      return;
    }
    ReportValue(entry,
                "expected true, false or a map with `enabled`, got " + DescribeNode(entry.value));
  }

  static void ReadEnabled(Loader& loader, const Entry& entry, bool& enabled) {
    if (auto v = loader.ReadBool(entry)) enabled = *v;
  }

  // A collector without options: `name: true|false` or `name: {enabled: ...}`.
  template <bool CollectorsConfig::*kEnabled>
  static void LoadPlainCollector(Loader& loader, const Entry& entry, CollectorsConfig& out) {
    static constexpr KeyRule<bool> kOptions[] = {{"enabled", &ReadEnabled}};
    loader.LoadCollector<bool>(entry, out.*kEnabled, kOptions, out.*kEnabled);
  }

  static void LoadVmstat(Loader& loader, const Entry& entry, CollectorsConfig& out) {
    static constexpr KeyRule<VmstatOptions> kOptions[] = {
        {"enabled",
         [](Loader& l, const Entry& e, VmstatOptions& o) { ReadEnabled(l, e, o.enabled); }},
        {"fields",
         [](Loader& l, const Entry& e, VmstatOptions& o) {
           if (auto v = l.ReadRegex(e)) o.fields = *v;
         }},
    };
    loader.LoadCollector<VmstatOptions>(entry, out.vmstat.enabled, kOptions, out.vmstat);
  }

  static void LoadSlabinfo(Loader& loader, const Entry& entry, CollectorsConfig& out) {
    static constexpr KeyRule<SlabinfoOptions> kOptions[] = {
        {"enabled",
         [](Loader& l, const Entry& e, SlabinfoOptions& o) { ReadEnabled(l, e, o.enabled); }},
        {"include",
         [](Loader& l, const Entry& e, SlabinfoOptions& o) {
           if (auto v = l.ReadRegex(e)) o.include = *v;
         }},
        {"exclude",
         [](Loader& l, const Entry& e, SlabinfoOptions& o) {
           if (auto v = l.ReadRegex(e)) o.exclude = *v;
         }},
    };
    loader.LoadCollector<SlabinfoOptions>(entry, out.slabinfo.enabled, kOptions, out.slabinfo);
  }

  void LoadCollectors(const Entry& section, CollectorsConfig& out) {
    if (!ExpectMap(section, "a map of collectors (`meminfo: true`, ...)")) return;
    using C = CollectorsConfig;
    static constexpr KeyRule<C> kCollectors[] = {
        {"meminfo", &LoadPlainCollector<&C::meminfo>},
        {"vmstat", &LoadVmstat},
        {"slabinfo", &LoadSlabinfo},
        {"pressure", &LoadPlainCollector<&C::pressure>},
        {"buddyinfo", &LoadPlainCollector<&C::buddyinfo>},
        {"boot", &LoadPlainCollector<&C::boot>},
        {"dentries", &LoadPlainCollector<&C::dentries>},
        {"balloon", &LoadPlainCollector<&C::balloon>},
    };
    ForEachEntry<C>(section.value, section.path, kCollectors, out);
  }

  // The http section while it is read: the options, and the TLS entries for the pair check.
  struct HttpSection {
    HttpOptions& out;
    std::optional<Entry> cert;
    std::optional<Entry> key;
  };

  void LoadHttp(const Entry& section, HttpOptions& out) {
    if (!ExpectMap(section, "a map (`max_connections: 64`, ...)")) return;
    static constexpr KeyRule<HttpSection> kKeys[] = {
        {"max_connections",
         [](Loader& l, const Entry& e, HttpSection& h) {
           if (auto v = l.ReadCount(e, 1, 10000)) {
             h.out.max_connections = static_cast<std::uint32_t>(*v);
           }
         }},
        {"connection_timeout",
         [](Loader& l, const Entry& e, HttpSection& h) {
           if (auto v = l.ReadDuration(e)) h.out.connection_timeout = *v;
         }},
        {"tls_cert_file",
         [](Loader& l, const Entry& e, HttpSection& h) {
           h.cert = e;
           if (auto v = l.ReadPemFile(e, PemKind::kCertificate)) h.out.tls_cert_file = *v;
         }},
        {"tls_key_file",
         [](Loader& l, const Entry& e, HttpSection& h) {
           h.key = e;
           if (auto v = l.ReadPemFile(e, PemKind::kPrivateKey)) h.out.tls_key_file = *v;
         }},
        {"basic_auth_users",
         [](Loader& l, const Entry& e, HttpSection& h) {
           l.LoadBasicAuthUsers(e, &h.out.basic_auth_users);
         }},
    };
    HttpSection http{out, std::nullopt, std::nullopt};
    ForEachEntry<HttpSection>(section.value, section.path, kKeys, http);
    // Both or neither: a certificate without its key (or the reverse) cannot serve TLS, and
    // silently serving plain HTTP instead would be worse.
    if (http.cert && !http.key) {
      Report(PositionOf(http.cert->key), section.path + ".tls_key_file",
             "missing (tls_cert_file needs tls_key_file, the certificate's private key)");
    } else if (http.key && !http.cert) {
      Report(PositionOf(http.key->key), section.path + ".tls_cert_file",
             "missing (tls_key_file needs tls_cert_file, the certificate)");
    }
  }

  enum class PemKind { kCertificate, kPrivateKey };

  // An absolute path to a readable regular file holding a PEM certificate or private key. Only
  // the PEM markers are checked here; the daemon parses the contents at start.
  std::optional<std::string> ReadPemFile(const Entry& entry, PemKind kind) {
    auto path = ReadAbsolutePath(entry);
    if (!path) return std::nullopt;
    auto text = ReadSmallRegularFile(*path);
    if (!text) {
      ReportValue(entry, text.error());
      return std::nullopt;
    }
    if (kind == PemKind::kCertificate) {
      if (text->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
        ReportValue(entry, "not a PEM certificate (no `-----BEGIN CERTIFICATE-----` line) in " +
                               Shown(*path));
        return std::nullopt;
      }
    } else {
      const std::size_t begin = text->find("-----BEGIN ");
      const std::size_t end =
          text->find(" PRIVATE KEY-----", begin == std::string::npos ? 0 : begin);
      if (begin == std::string::npos || end == std::string::npos) {
        ReportValue(entry, "not a PEM private key (no `-----BEGIN ... PRIVATE KEY-----` line) in " +
                               Shown(*path));
        return std::nullopt;
      }
      if (text->find("-----BEGIN ENCRYPTED PRIVATE KEY-----") != std::string::npos ||
          text->find("Proc-Type: 4,ENCRYPTED") != std::string::npos) {
        ReportValue(entry, "the private key in " + Shown(*path) +
                               " is encrypted; iodriftd needs it unencrypted (readable by root "
                               "only)");
        return std::nullopt;
      }
    }
    return path;
  }

  // `basic_auth_users: {USER: BCRYPT_HASH, ...}`; null or empty = authentication off.
  void LoadBasicAuthUsers(const Entry& section, std::map<std::string, std::string>* out) {
    if (section.value.IsNull()) return;
    if (!section.value.IsMap()) {
      ReportValue(section,
                  "expected a map of user: bcrypt hash, got " + DescribeNode(section.value));
      return;
    }
    std::map<std::string, int, std::less<>> seen;
    for (auto it = section.value.begin(); it != section.value.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      if (!key.IsScalar()) {
        Report(key, section.path, "user names must be plain names, got " + DescribeNode(key));
        continue;
      }
      const std::string user = key.Scalar();
      const std::string path = section.path + "." + user;
      const bool bad_name =
          user.empty() || user.size() > 256 || std::any_of(user.begin(), user.end(), [](char c) {
            return c == ':' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
          });
      if (bad_name) {
        Report(key, section.path,
               "user name " + Shown(user) +
                   " must be 1-256 characters without `:` or control characters");
        continue;
      }
      auto [first, inserted] = seen.emplace(user, PositionOf(key).line);
      if (!inserted) {
        Report(key, path,
               "duplicate user (first defined at line " + std::to_string(first->second) + ")");
        continue;
      }
      const Entry entry{path, user, key, value};
      auto hash = ReadScalar(entry, "a bcrypt hash like $2y$10$...");
      if (!hash) continue;
      // The value is not shown: a plaintext password put here by mistake must not reach logs.
      if (auto problem = CheckBcryptHash(*hash)) {
        ReportValue(entry, *problem);
        continue;
      }
      (*out)[user] = *hash;
    }
  }

  void LoadScheduler(const Entry& section, SchedulerConfig& out) {
    if (!ExpectMap(section, "a map (`max_concurrent: 1`, `io_class: best-effort`, ...)")) return;
    static constexpr KeyRule<SchedulerConfig> kKeys[] = {
        {"max_concurrent",
         [](Loader& l, const Entry& e, SchedulerConfig& s) {
           if (auto v = l.ReadCount(e, 1, 64)) s.max_concurrent = static_cast<std::uint32_t>(*v);
         }},
        {"io_class",
         [](Loader& l, const Entry& e, SchedulerConfig& s) {
           if (auto v = l.ReadChoice(e, &CheckIoClass)) s.io_class = *v;
         }},
        {"io_level",
         [](Loader& l, const Entry& e, SchedulerConfig& s) {
           if (auto v = l.ReadCount(e, 0, 7)) s.io_level = static_cast<int>(*v);
         }},
        {"nice",
         [](Loader& l, const Entry& e, SchedulerConfig& s) {
           if (auto v = l.ReadCount(e, 0, 19)) s.nice = static_cast<int>(*v);
         }},
    };
    ForEachEntry<SchedulerConfig>(section.value, section.path, kKeys, out);
  }

  void LoadStatus(const Entry& section, StatusOptions& out) {
    if (!ExpectMap(section, "a map (`enabled: true`, `history_runs: 240`)")) return;
    static constexpr KeyRule<StatusOptions> kKeys[] = {
        {"enabled",
         [](Loader& l, const Entry& e, StatusOptions& s) { ReadEnabled(l, e, s.enabled); }},
        {"history_runs",
         [](Loader& l, const Entry& e, StatusOptions& s) {
           if (auto v = l.ReadCount(e, 2, 100000)) {
             s.history_runs = static_cast<std::uint32_t>(*v);
           }
         }},
    };
    ForEachEntry<StatusOptions>(section.value, section.path, kKeys, out);
  }

  void LoadDiagnose(const Entry& section, DiagnoseConfig& out) {
    if (!ExpectMap(section, "a map (`enabled: true`, `warm_size: 1GiB`)")) return;
    static constexpr KeyRule<DiagnoseConfig> kKeys[] = {
        {"enabled",
         [](Loader& l, const Entry& e, DiagnoseConfig& d) { ReadEnabled(l, e, d.enabled); }},
        {"warm_size",
         [](Loader& l, const Entry& e, DiagnoseConfig& d) {
           if (auto v = l.ReadSize(e, /*allow_auto=*/false)) d.warm_size = *v;
         }},
        {"min_available",
         [](Loader& l, const Entry& e, DiagnoseConfig& d) {
           if (auto v = l.ReadSize(e, /*allow_auto=*/false)) d.min_available = *v;
         }},
        {"max_memory_pressure",
         [](Loader& l, const Entry& e, DiagnoseConfig& d) {
           if (auto v = l.ReadCount(e, 0, 100)) {
             d.max_memory_pressure = static_cast<std::uint32_t>(*v);
           }
         }},
        {"max_io_pressure",
         [](Loader& l, const Entry& e, DiagnoseConfig& d) {
           if (auto v = l.ReadCount(e, 0, 100)) d.max_io_pressure = static_cast<std::uint32_t>(*v);
         }},
        {"timeout",
         [](Loader& l, const Entry& e, DiagnoseConfig& d) {
           if (auto v = l.ReadDuration(e)) d.timeout = *v;
         }},
        {"cooldown",
         [](Loader& l, const Entry& e, DiagnoseConfig& d) {
           if (auto v = l.ReadDuration(e, /*allow_zero=*/true)) d.cooldown = *v;
         }},
    };
    ForEachEntry<DiagnoseConfig>(section.value, section.path, kKeys, out);
  }

  void LoadProbes(const Entry& section, std::vector<ProbeSpec>* out) {
    if (section.value.IsNull()) return;  // `probes:` with every item commented out
    if (!section.value.IsSequence()) {
      ReportValue(section, "expected a list of probes (items starting with `- name: ...`), got " +
                               DescribeNode(section.value));
      return;
    }
    struct FirstUse {
      std::size_t index;
      int line;
    };
    std::map<std::string, FirstUse, std::less<>> names;
    std::size_t index = 0;
    for (auto it = section.value.begin(); it != section.value.end(); ++it, ++index) {
      const std::string path = section.path + "[" + std::to_string(index) + "]";
      const YAML::Node item = *it;
      if (!item.IsMap()) {
        Report(item, path,
               "expected a map with name, kind, target, ..., got " + DescribeNode(item));
        continue;
      }
      const std::size_t problems_before = problem_count_;
      YAML::Node name_node;
      ProbeSpec probe = LoadProbe(item, path, &name_node);
      // A probe with other problems still claims its name, so a later duplicate is reported.
      if (probe.name.empty()) continue;
      auto [first, inserted] =
          names.emplace(probe.name, FirstUse{index, PositionOf(name_node).line});
      if (!inserted) {
        Report(name_node, path + ".name",
               "duplicate probe name " + Shown(probe.name) + " (first defined at line " +
                   std::to_string(first->second.line) + ", probes[" +
                   std::to_string(first->second.index) + "])");
        continue;
      }
      if (problem_count_ == problems_before) out->push_back(std::move(probe));
    }
  }

  // One probe item while it is read: the spec, and what the cross-key checks need to know.
  struct ProbeItem {
    ProbeSpec probe;
    YAML::Node name_node;
    bool has_name = false;
    bool has_kind = false;    // a `kind` key is present
    bool kind_valid = false;  // ... and names a kind
    bool durations_valid = true;
    std::optional<Entry> target, files, requests, timeout, time_budget, size, members, readers,
        interval, remote;
  };

  // One probe item (a map), every problem reported. Returns what could be read: when the name
  // is valid it is set even if other keys are wrong. `*name_node` is set to the name's node.
  ProbeSpec LoadProbe(const YAML::Node& item, const std::string& path, YAML::Node* name_node) {
    static constexpr KeyRule<ProbeItem> kKeys[] = {
        {"name",
         [](Loader& l, const Entry& e, ProbeItem& p) {
           p.has_name = true;
           p.name_node = e.value;
           if (auto v = l.ReadScalar(e, "a probe name like sda-buffered")) {
             if (auto problem = CheckProbeName(*v)) {
               l.ReportValue(e, *problem + ", got " + Shown(*v));
             } else {
               p.probe.name = *v;
             }
           }
         }},
        {"kind",
         [](Loader& l, const Entry& e, ProbeItem& p) {
           p.has_kind = true;
           if (auto v = l.ReadScalar(e, "one of " + std::string(kKindChoices))) {
             if (auto kind = ParseProbeKind(*v)) {
               p.probe.kind = *kind;
               p.kind_valid = true;
             } else {
               l.ReportValue(e,
                             "must be one of " + std::string(kKindChoices) + ", got " + Shown(*v));
             }
           }
         }},
        {"target",
         [](Loader& l, const Entry& e, ProbeItem& p) {
           p.target = e;
           if (auto v = l.ReadAbsolutePath(e)) p.probe.target = *v;
         }},
        {"interval",
         [](Loader& l, const Entry& e, ProbeItem& p) {
           if (auto v = l.ReadDuration(e)) {
             p.probe.interval = *v;
             p.interval = e;
           }
         }},
        {"remote",
         [](Loader& l, const Entry& e, ProbeItem& p) {
           p.remote = e;
           if (auto v = l.ReadBool(e)) p.probe.remote = *v;
         }},
        {"size",
         [](Loader& l, const Entry& e, ProbeItem& p) {
           p.size = e;
           if (auto v = l.ReadSize(e, /*allow_auto=*/true)) p.probe.size = *v;
         }},
        {"members",
         [](Loader& l, const Entry& e, ProbeItem& p) {
           p.members = e;
           if (auto v = l.ReadBool(e)) p.probe.members = *v;
         }},
        {"files",
         [](Loader& l, const Entry& e, ProbeItem& p) {
           p.files = e;
           if (auto v = l.ReadCount(e, 1, kMaxCount)) {
             p.probe.files = static_cast<std::uint32_t>(*v);
           }
         }},
        {"requests",
         [](Loader& l, const Entry& e, ProbeItem& p) {
           p.requests = e;
           if (auto v = l.ReadCount(e, 1, kMaxCount)) {
             p.probe.requests = static_cast<std::uint32_t>(*v);
           }
         }},
        {"readers",
         [](Loader& l, const Entry& e, ProbeItem& p) {
           p.readers = e;
           if (auto v = l.ReadReaders(e)) p.probe.readers = std::move(*v);
         }},
        {"timeout",
         [](Loader& l, const Entry& e, ProbeItem& p) {
           p.timeout = e;
           if (auto v = l.ReadDuration(e)) {
             p.probe.timeout = *v;
           } else {
             p.durations_valid = false;
           }
         }},
        {"time_budget",
         [](Loader& l, const Entry& e, ProbeItem& p) {
           p.time_budget = e;
           if (auto v = l.ReadDuration(e)) {
             p.probe.time_budget = *v;
           } else {
             p.durations_valid = false;
           }
         }},
    };
    ProbeItem read;
    ForEachEntry<ProbeItem>(item, path, kKeys, read);
    *name_node = read.name_node;
    ProbeSpec& probe = read.probe;
    const Position item_pos = PositionOf(item);
    if (!read.has_name) {
      Report(item_pos, path + ".name",
             "missing (every probe needs a unique name like sda-buffered)");
    }
    if (!read.has_kind) {
      Report(item_pos, path + ".kind",
             "missing (must be one of " + std::string(kKindChoices) + ")");
    }
    // Checks that depend on the kind only make sense once the kind is known.
    if (read.kind_valid) {
      if (!read.time_budget) probe.time_budget = DefaultTimeBudget(probe.kind);
      if (probe.kind == ProbeKind::kMemory) {
        if (read.target) ReportValue(*read.target, "a memory probe reads no file; remove `target`");
      } else if (!read.target) {
        Report(item_pos, path + ".target",
               "missing (a " + std::string(ProbeKindName(probe.kind)) +
                   " probe needs a block device, regular file or directory)");
      }
      if (read.files && probe.kind != ProbeKind::kMetadata) {
        Report(PositionOf(read.files->key), read.files->path, "only applies to kind metadata");
      }
      if (read.requests && probe.kind != ProbeKind::kRandom) {
        Report(PositionOf(read.requests->key), read.requests->path, "only applies to kind random");
      }
      if (read.members &&
          (probe.kind == ProbeKind::kMetadata || probe.kind == ProbeKind::kMemory)) {
        Report(PositionOf(read.members->key), read.members->path,
               "only applies to kinds cached, buffered, direct and random (on an array device)");
      }
      if (read.interval && probe.interval < probes::MinInterval(probe.kind)) {
        ReportValue(*read.interval, FormatDuration(probe.interval) +
                                        " is shorter than the minimum of " +
                                        FormatDuration(probes::MinInterval(probe.kind)) +
                                        " for kind " + std::string(ProbeKindName(probe.kind)) +
                                        " (a shorter interval runs the probe back to back)");
      }
      if (read.remote && probe.kind == ProbeKind::kMemory) {
        Report(PositionOf(read.remote->key), read.remote->path,
               "only applies to kinds with a target (a memory probe reads no file)");
      }
      // A target on a remote filesystem: longer timeout, smaller runs (netfs.h). `remote:`
      // decides; otherwise judged from /proc/self/mountinfo without touching the target.
      if (read.target && probe.kind != ProbeKind::kMemory && !probe.target.empty() &&
          (probe.remote ? *probe.remote : probes::TargetLooksRemote(probe.target))) {
        probes::ApplyRemoteDefaults(probe, {.size = read.size.has_value(),
                                            .timeout = read.timeout.has_value(),
                                            .files = read.files.has_value(),
                                            .requests = read.requests.has_value()});
      }
      if (read.readers && !probes::KindTakesReaders(probe.kind)) {
        Report(PositionOf(read.readers->key), read.readers->path,
               "only applies to kinds buffered, direct and random");
      }
    }
    if (read.durations_valid && (read.timeout || read.time_budget) &&
        probe.timeout <= probe.time_budget) {
      const Entry& at = read.timeout ? *read.timeout : *read.time_budget;
      ReportValue(at, "timeout (" + FormatDuration(probe.timeout) +
                          ") must be greater than time_budget (" +
                          FormatDuration(probe.time_budget) + ")");
    }
    return std::move(read.probe);
  }

  static std::string FormatDuration(Duration d) {
    const auto ms = d.count();
    if (ms % 1000 != 0) return std::to_string(ms) + "ms";
    return std::to_string(ms / 1000) + "s";
  }

  static std::optional<std::string> CheckProbeName(std::string_view name) {
    if (name.empty()) return "must not be empty";
    if (name.size() > kMaxProbeNameLength) {
      return "must be at most " + std::to_string(kMaxProbeNameLength) + " characters";
    }
    for (char c : name) {
      const bool ok =
          (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
      if (!ok) return std::string("must match [a-z0-9_.-]+ (lowercase letters, digits, _ . -)");
    }
    return std::nullopt;
  }

 private:
  std::string file_;
  std::vector<Problem> problems_;
  std::size_t problem_count_ = 0;
};

std::vector<Problem> OneProblem(const std::string& file, Position pos, std::string message) {
  return {Problem{file, pos.line, pos.column, "", std::move(message)}};
}

std::string LowercaseErrno(int code) {
  std::string message = std::strerror(code);
  if (!message.empty() && message[0] >= 'A' && message[0] <= 'Z') {
    message[0] = static_cast<char>(message[0] - 'A' + 'a');
  }
  return message;
}

}  // namespace

// ---- public API ---------------------------------------------------------------------------------

std::string Problem::ToString() const {
  std::string text = file;
  if (line > 0) {
    text += ":" + std::to_string(line) + ":" + std::to_string(column);
  }
  text += ": ";
  if (!key.empty()) text += key + ": ";
  text += message;
  // Control bytes (a CR from a CRLF file in a key name or a file name, an escape sequence) never
  // reach the terminal raw; tabs and line breaks inside a message stay.
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += c == '\r' ? std::string("\\r") : std::string("\\x") + kHex[c >> 4] + kHex[c & 0xf];
    } else {
      out += ch;
    }
  }
  return out;
}

std::optional<std::string> CheckListen(std::string_view value) {
  auto listen = ParseListen(value);
  if (listen) return std::nullopt;
  return std::move(listen.error().message);
}

std::optional<std::string> CheckDbus(std::string_view value) {
  if (value == "auto" || value == "system" || value == "session" || value == "none") {
    return std::nullopt;
  }
  const std::size_t colon = value.find(':');
  if (colon != std::string_view::npos && colon > 0 &&
      value.find('=', colon) != std::string_view::npos) {
    return std::nullopt;  // a D-Bus address: transport:key=value[,key=value][;...]
  }
  return std::string(
      "must be one of auto|system|session|none or a D-Bus address like "
      "unix:path=/run/dbus/system_bus_socket");
}

std::optional<std::string> CheckLogLevel(std::string_view value) {
  static constexpr std::array<std::string_view, 5> kLevels = {"trace", "debug", "info", "warn",
                                                              "error"};
  if (std::find(kLevels.begin(), kLevels.end(), value) != kLevels.end()) return std::nullopt;
  return std::string("must be one of trace|debug|info|warn|error");
}

std::optional<std::string> CheckIoClass(std::string_view value) {
  if (value == "best-effort" || value == "idle" || value == "none") return std::nullopt;
  return std::string("must be one of best-effort|idle|none");
}

std::optional<std::string> CheckBcryptHash(std::string_view hash) {
  const std::string problem =
      "must be a bcrypt hash ($2y$, $2b$ or $2a$ and 60 characters, e.g. from "
      "`htpasswd -nbBC 10 USER PASSWORD`), not a password or another kind of hash";
  if (hash.size() != 60 ||
      !(hash.starts_with("$2y$") || hash.starts_with("$2b$") || hash.starts_with("$2a$"))) {
    return problem;
  }
  const bool cost_digits = hash[4] >= '0' && hash[4] <= '9' && hash[5] >= '0' && hash[5] <= '9';
  const int cost = cost_digits ? (hash[4] - '0') * 10 + (hash[5] - '0') : 0;
  if (!cost_digits || hash[6] != '$') return problem;
  if (cost < 4 || cost > 31)
    return "bcrypt cost must be from 04 to 31, got " + std::to_string(cost);
  for (char c : hash.substr(7)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '/';
    if (!ok) return problem;
  }
  return std::nullopt;
}

LoadResult LoadFromString(std::string_view yaml_text, const std::string& file_name) {
  if (yaml_text.size() > kMaxConfigBytes) {
    return tl::unexpected(OneProblem(file_name, {},
                                     "file is larger than 1 MiB (" +
                                         std::to_string(yaml_text.size()) +
                                         " bytes); is this really a config file?"));
  }
  if (const std::size_t bad = FirstNonTextByte(yaml_text); bad != std::string_view::npos) {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto byte = static_cast<unsigned char>(yaml_text[bad]);
    std::string shown = "0x";
    shown += kHex[byte >> 4];
    shown += kHex[byte & 0xf];
    return tl::unexpected(OneProblem(file_name, PositionOfOffset(yaml_text, bad),
                                     "not a text file: byte " + shown + " at offset " +
                                         std::to_string(bad) +
                                         " (a config file must be UTF-8 text)"));
  }
  const std::string text(yaml_text);
  YAML::Node root;
  try {
    root = YAML::Load(text);
    if (auto second = SecondDocument(text)) {
      return tl::unexpected(OneProblem(
          file_name, PositionOf(*second),
          "unexpected content after the first YAML document (a config file holds exactly one "
          "document; remove the `---` or the stray text)"));
    }
  } catch (const YAML::DeepRecursion& error) {
    return tl::unexpected(
        OneProblem(file_name, PositionOf(error.mark),
                   "YAML nesting is too deep (" + std::to_string(error.depth()) + " levels)"));
  } catch (const YAML::Exception& error) {
    return tl::unexpected(
        OneProblem(file_name, SyntaxErrorPosition(yaml_text, error.mark),
                   "YAML syntax error: " + error.msg + TabHint(yaml_text, error.mark)));
  }

  Loader loader(file_name);
  Config config;
  try {
    config = loader.LoadRoot(root);
  } catch (const YAML::Exception& error) {
    // The walk checks types before converting, so this is a yaml-cpp surprise, not a user error
    // we know how to phrase; still a problem, never a crash.
    loader.Report(PositionOf(error.mark), "", "cannot read this YAML: " + error.msg);
  }
  if (!loader.ok()) return tl::unexpected(loader.TakeProblems());
  return config;
}

LoadResult LoadFromFile(const std::filesystem::path& path) {
  const std::string name = path.string();
  // O_NONBLOCK: opening a FIFO without a writer must not hang; cleared below for reading.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    const int code = errno;
    return tl::unexpected(OneProblem(name, {}, "cannot open: " + LowercaseErrno(code)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int code = errno;
    ::close(fd);
    return tl::unexpected(OneProblem(name, {}, "cannot stat: " + LowercaseErrno(code)));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return tl::unexpected(OneProblem(name, {}, "is a directory, not a config file"));
  }
  if (const int flags = ::fcntl(fd, F_GETFL); flags >= 0) {
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  // Read at most one byte past the cap; st_size is not trusted (pipes, /proc, growing files).
  std::string text;
  text.resize(kMaxConfigBytes + 1);
  std::size_t used = 0;
  while (used < text.size()) {
    const ssize_t n = ::read(fd, text.data() + used, text.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int code = errno;
      ::close(fd);
      return tl::unexpected(OneProblem(name, {}, "cannot read: " + LowercaseErrno(code)));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (used > kMaxConfigBytes) {
    return tl::unexpected(
        OneProblem(name, {}, "file is larger than 1 MiB; is this really a config file?"));
  }
  text.resize(used);
  return LoadFromString(text, name);
}

std::string DefaultStateDir() {
  if (::geteuid() == 0) return "/var/lib/iodrift";
  // XDG Base Directory: a relative XDG_STATE_HOME is invalid and must be ignored.
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && xdg[0] == '/') {
    return (std::filesystem::path(xdg) / "iodrift").string();
  }
  std::string home;
  if (const char* env_home = std::getenv("HOME"); env_home != nullptr && env_home[0] == '/') {
    home = env_home;
  } else {
    struct passwd pwd {};
    struct passwd* found = nullptr;
    std::array<char, 4096> buffer{};
    if (::getpwuid_r(::geteuid(), &pwd, buffer.data(), buffer.size(), &found) == 0 &&
        found != nullptr && found->pw_dir != nullptr && found->pw_dir[0] == '/') {
      home = found->pw_dir;
    }
  }
  if (home.empty()) return "/tmp/iodrift-" + std::to_string(::geteuid());
  return (std::filesystem::path(home) / ".local" / "state" / "iodrift").string();
}

Config DefaultConfig(const std::string& state_dir) {
  Config config;
  config.state_dir = state_dir;
  const std::string target = (std::filesystem::path(state_dir) / "probe").string();
  for (ProbeKind kind : {ProbeKind::kCached, ProbeKind::kBuffered, ProbeKind::kDirect,
                         ProbeKind::kRandom, ProbeKind::kMetadata, ProbeKind::kMemory}) {
    ProbeSpec probe;
    probe.kind = kind;
    probe.interval = std::chrono::minutes(5);
    probe.size = 0;
    probe.time_budget = DefaultTimeBudget(kind);
    if (kind == ProbeKind::kMemory) {
      probe.name = "memory";
    } else {
      probe.name = "state-" + std::string(ProbeKindName(kind));
      probe.target = target;
    }
    config.probes.push_back(std::move(probe));
  }
  return config;
}

std::optional<Duration> ParseDuration(std::string_view text) {
  auto parsed = ParseDurationDetailed(text);
  if (!parsed) return std::nullopt;
  return *parsed;
}

std::optional<std::uint64_t> ParseSize(std::string_view text) {
  auto parsed = ParseSizeDetailed(text);
  if (!parsed) return std::nullopt;
  return *parsed;
}

}  // namespace iodrift::config
