// Input screening (positions, UTF-8 text, one document) and the Loader's value readers: each
// reads one entry, reports what is wrong with it (key and line) and returns nullopt.
#include "config/loader.h"

#include <array>
#include <regex>
#include <sstream>

#include <yaml-cpp/eventhandler.h>

namespace iodrift::config::detail {

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

namespace {

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

}  // namespace

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

std::vector<Problem> Loader::TakeProblems() {
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

std::optional<std::string> Loader::ReadScalar(const Entry& entry, std::string_view what) {
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

std::optional<bool> Loader::ReadBool(const Entry& entry) {
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
std::optional<std::uint64_t> Loader::ReadCount(const Entry& entry, std::uint64_t min,
                                               std::uint64_t max) {
  const std::string what = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
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
std::optional<std::vector<std::uint32_t>> Loader::ReadReaders(const Entry& entry) {
  constexpr std::size_t kMaxSteps = 16;
  if (entry.value.IsScalar()) {
    auto v = ReadCount(entry, 1, probes::kMaxReaders);
    if (!v) return std::nullopt;
    return std::vector<std::uint32_t>{static_cast<std::uint32_t>(*v)};
  }
  if (!entry.value.IsSequence() || entry.value.size() == 0 || entry.value.size() > kMaxSteps) {
    ReportValue(
        entry,
        "expected a reader count from 1 to " + std::to_string(probes::kMaxReaders) +
            " or a list of 1 to " + std::to_string(kMaxSteps) + " of them like [1, 2, 4, 8], got " +
            (entry.value.IsSequence() && entry.value.size() == 0 ? std::string("an empty list")
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
std::optional<Duration> Loader::ReadDuration(const Entry& entry, bool allow_zero) {
  auto text = ReadScalar(entry, "a duration like 30s");
  if (!text) return std::nullopt;
  if (allow_zero && !text->empty() && (*text)[0] == '0') {
    const std::string_view t = *text;
    const auto end = t.find_first_not_of('0');
    const std::string_view unit = end == std::string_view::npos ? "" : t.substr(end);
    if (unit.empty() || unit == "ms" || unit == "s" || unit == "m" || unit == "h" || unit == "d") {
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
std::optional<std::uint64_t> Loader::ReadSize(const Entry& entry, bool allow_auto) {
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

std::optional<std::string> Loader::ReadChoice(
    const Entry& entry, std::optional<std::string> (*check)(std::string_view)) {
  auto text = ReadScalar(entry, "a string");
  if (!text) return std::nullopt;
  if (auto problem = check(*text)) {
    ReportValue(entry, *problem + ", got " + Shown(*text));
    return std::nullopt;
  }
  return text;
}

std::optional<std::string> Loader::ReadAbsolutePath(const Entry& entry) {
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

std::optional<std::string> Loader::ReadRegex(const Entry& entry) {
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

// A map section: null is an empty map (all defaults), anything but a map is a problem.
bool Loader::ExpectMap(const Entry& entry, std::string_view what) {
  if (entry.value.IsNull() || entry.value.IsMap()) return true;
  ReportValue(entry, "expected " + std::string(what) + ", got " + DescribeNode(entry.value));
  return false;
}

}  // namespace iodrift::config::detail
