#include "collectors/proc/name_filter.h"

namespace iodrift::proc {

NameFilter::NameFilter(const std::string& include, const std::string& exclude) {
  // ".*" is the common default: skip the regex machinery altogether.
  if (!include.empty() && include != ".*") include_.emplace(include, std::regex::ECMAScript);
  if (!exclude.empty()) exclude_.emplace(exclude, std::regex::ECMAScript);
}

bool NameFilter::Matches(std::string_view name) const {
  if (!include_ && !exclude_) return true;
  std::lock_guard lock(mu_);
  if (auto it = cache_.find(name); it != cache_.end()) return it->second;
  std::string key(name);
  bool ok = (!include_ || std::regex_match(key, *include_)) &&
            (!exclude_ || !std::regex_match(key, *exclude_));
  if (cache_.size() >= kMaxCachedNames) cache_.clear();
  cache_.emplace(std::move(key), ok);
  return ok;
}

}  // namespace iodrift::proc
