// The config loader's inside, shared by its files (config/*.cpp; not for other folders): the
// limits, the text helpers, where a YAML node is, and the Loader that walks a file against each
// section's key table and collects every problem.
//
//   parse_values.cpp   durations, sizes and the text helpers of messages
//   loader.cpp         input screening (UTF-8, one document, positions) and the value readers
//   parse_sections.cpp the top level and the small sections (collectors, scheduler, status, ...)
//   parse_http.cpp     the http section (TLS files, basic auth users)
//   parse_probes.cpp   the probes list
//   config.cpp         the public API (config.h)
//
// Thread-safety: a Loader is used by one thread for one file.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <tl/expected.hpp>
#include <yaml-cpp/yaml.h>

#include "collectors/probes/kinds.h"
#include "config/config.h"

namespace iodrift::config::detail {

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

// ---- text helpers (parse_values.cpp) ----------------------------------------------------------

// `text` made safe to show inside a message: control and non-ASCII bytes escaped, long values cut.
std::string Shown(std::string_view text);
std::string JoinChoices(std::span<const std::string_view> choices, std::string_view separator);
// The closest of `choices` to `word` when it is close enough to be a plausible typo.
std::optional<std::string_view> Closest(std::string_view word,
                                        std::span<const std::string_view> choices);
// Parses a run of decimal digits at the front of `*text` (consumed). nullopt when there is no
// digit or the value exceeds `limit`; in the overflow case `*overflow` is set.
std::optional<std::uint64_t> TakeDigits(std::string_view* text, std::uint64_t limit,
                                        bool* overflow);
// The detailed forms behind ParseDuration / ParseSize: the value, or what is wrong with it.
tl::expected<Duration, std::string> ParseDurationDetailed(std::string_view text);
tl::expected<std::uint64_t, std::string> ParseSizeDetailed(std::string_view text);

// strerror(code) starting in lowercase, for "cannot read: permission denied" (config.cpp).
std::string LowercaseErrno(int code);

// ---- where a node is (loader.cpp) ---------------------------------------------------------------

struct Position {
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based; 0 = unknown
};

Position PositionOf(const YAML::Mark& mark);
Position PositionOf(const YAML::Node& node);
// Byte offset -> 1-based line and column (columns count bytes).
Position PositionOfOffset(std::string_view text, std::size_t offset);
// yaml-cpp reports "not found" errors at the end of input: the end of the last line instead.
Position SyntaxErrorPosition(std::string_view text, const YAML::Mark& mark);
// A hint when the line of a syntax error is indented with a tab.
std::string TabHint(std::string_view text, const YAML::Mark& mark);
// Offset of the first byte that cannot be in a UTF-8 YAML text, or npos.
std::size_t FirstNonTextByte(std::string_view text);
// Where a second YAML document (or stray content yaml-cpp reads as one) begins, if any.
std::optional<YAML::Mark> SecondDocument(const std::string& text);

// ---- the schema walk ----------------------------------------------------------------------------

// One `key: value` pair of a YAML map, with the dotted path of the key.
struct Entry {
  std::string path;  // e.g. "probes[2].interval"
  std::string name;  // e.g. "interval"
  YAML::Node key;
  YAML::Node value;
};

std::string DescribeNode(const YAML::Node& node);
// True for a scalar the author marked as a string: quoted, or tagged !!str. Booleans and
// integers must be plain so that `enabled: "false"` does not pass as a typo of `false`.
bool IsMarkedString(const YAML::Node& node);

inline bool IsAbsolutePath(std::string_view path) { return !path.empty() && path.front() == '/'; }

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
  std::vector<Problem> TakeProblems();

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

  // ---- value readers (loader.cpp); each reports what is wrong and returns nullopt ------------

  // A scalar value as text. `what` names the expected value for the message.
  std::optional<std::string> ReadScalar(const Entry& entry, std::string_view what);
  std::optional<bool> ReadBool(const Entry& entry);
  // A plain decimal integer in [min, max].
  std::optional<std::uint64_t> ReadCount(const Entry& entry, std::uint64_t min, std::uint64_t max);
  // `readers: N` or `readers: [1, 2, 4, 8]`: reader counts from 1 to kMaxReaders, a list
  // without repeats (at most 16 counts: each is a step of the run).
  std::optional<std::vector<std::uint32_t>> ReadReaders(const Entry& entry);
  // `allow_zero`: "0" with or without a unit ("0s", "0m") reads as none (zero).
  std::optional<Duration> ReadDuration(const Entry& entry, bool allow_zero = false);
  // A size in bytes; `auto` (for probe sizes) stands for 0 = calibrate.
  std::optional<std::uint64_t> ReadSize(const Entry& entry, bool allow_auto);
  std::optional<std::string> ReadChoice(const Entry& entry,
                                        std::optional<std::string> (*check)(std::string_view));
  std::optional<std::string> ReadAbsolutePath(const Entry& entry);
  std::optional<std::string> ReadRegex(const Entry& entry);
  // A map section: null is an empty map (all defaults), anything but a map is a problem.
  bool ExpectMap(const Entry& entry, std::string_view what);

  // ---- sections: each is a table of KeyRule rows --------------------------------------------

  Config LoadRoot(const YAML::Node& root);  // parse_sections.cpp

 private:
  // parse_sections.cpp
  template <class Options>
  void LoadCollector(const Entry& entry, bool& enabled,
                     std::type_identity_t<std::span<const KeyRule<Options>>> options,
                     Options& target);
  static void ReadEnabled(Loader& loader, const Entry& entry, bool& enabled);
  template <bool CollectorsConfig::*kEnabled>
  static void LoadPlainCollector(Loader& loader, const Entry& entry, CollectorsConfig& out);
  static void LoadVmstat(Loader& loader, const Entry& entry, CollectorsConfig& out);
  static void LoadSlabinfo(Loader& loader, const Entry& entry, CollectorsConfig& out);
  void LoadCollectors(const Entry& section, CollectorsConfig& out);
  void LoadScheduler(const Entry& section, SchedulerConfig& out);
  void LoadStatus(const Entry& section, StatusOptions& out);
  void LoadDiagnose(const Entry& section, DiagnoseConfig& out);

  // parse_http.cpp
  struct HttpSection;
  enum class PemKind { kCertificate, kPrivateKey };
  void LoadHttp(const Entry& section, HttpOptions& out);
  std::optional<std::string> ReadPemFile(const Entry& entry, PemKind kind);
  void LoadBasicAuthUsers(const Entry& section, std::map<std::string, std::string>* out);

  // parse_probes.cpp
  struct ProbeItem;
  void LoadProbes(const Entry& section, std::vector<ProbeSpec>* out);
  ProbeSpec LoadProbe(const YAML::Node& item, const std::string& path, YAML::Node* name_node);
  static std::string FormatDuration(Duration d);
  static std::optional<std::string> CheckProbeName(std::string_view name);

  std::string file_;
  std::vector<Problem> problems_;
  std::size_t problem_count_ = 0;
};

}  // namespace iodrift::config::detail
