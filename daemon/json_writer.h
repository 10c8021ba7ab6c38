// JsonWriter: a minimal streaming JSON writer for iodrift's outputs (`--once --json`, the status
// API). Our dependency list has no JSON library and we only ever *write* small documents, so a
// hundred lines here beat a new package. Produces compact RFC 8259 JSON; strings are escaped
// (control characters as \u00XX, invalid UTF-8 passed through byte for byte); non-finite
// numbers become null.
//
// Usage: w.BeginObject(); w.Key("a").Number(1); w.EndObject(); w.str();
// Thread-safety: none; one writer per document.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace iodrift::daemon {

class JsonWriter {
 public:
  void BeginObject();
  void EndObject();
  void BeginArray();
  void EndArray();
  // Returns *this, so that a member reads as one line: w.Key("a").Number(1).
  JsonWriter& Key(std::string_view key);
  void String(std::string_view value);
  void Number(double value);
  void Integer(std::int64_t value);
  void Unsigned(std::uint64_t value);
  void Bool(bool value);
  void Null();
  void OptionalNumber(const std::optional<double>& value);
  // The string, or null when `value` is null.
  void OptionalString(const std::string* value);

  const std::string& str() const { return out_; }

 private:
  void BeforeValue();
  std::string out_;
  // One entry per open container: true once it holds an element (a comma is due).
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

// Appends `value` as a quoted, escaped JSON string to `out`.
void AppendJsonString(std::string& out, std::string_view value);

}  // namespace iodrift::daemon
