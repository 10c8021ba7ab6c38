// NameFilter: include/exclude regexes over kernel names (vmstat fields, slab caches), with the
// decision for each name cached, because std::regex is slow and the same ~200 names come back on
// every scrape. The cache is bounded: past kMaxCachedNames entries it is cleared.
//
// Thread-safety: Matches() is safe to call concurrently.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace iodrift::proc {

class NameFilter {
 public:
  // Whole-name matches. An empty `include` matches everything; an empty `exclude` nothing.
  NameFilter(const std::string& include, const std::string& exclude);

  bool Matches(std::string_view name) const;

 private:
  static constexpr std::size_t kMaxCachedNames = 4096;
  std::optional<std::regex> include_;
  std::optional<std::regex> exclude_;
  mutable std::mutex mu_;
  // Looked up by string_view (no std::string built per name and scrape).
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  mutable std::unordered_map<std::string, bool, Hash, std::equal_to<>> cache_;
};

}  // namespace iodrift::proc
