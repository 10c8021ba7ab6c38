#include "daemon/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace iodrift::daemon {

void AppendJsonString(std::string& out, std::string_view value) {
  out.push_back('"');
  for (std::size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    // DEL and the C1 controls (U+0080..U+009F, 0xC2 0x80..0x9F in UTF-8) escaped too: a
    // terminal that shows the JSON must not act on them.
    const auto u = static_cast<unsigned char>(c);
    const auto next = i + 1 < value.size() ? static_cast<unsigned char>(value[i + 1]) : 0u;
    if (u == 0x7f || (u == 0xc2 && next >= 0x80 && next <= 0x9f)) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", u == 0x7f ? 0x7fu : next);
      out += buf;
      if (u == 0xc2) ++i;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_element_.empty()) {
    if (has_element_.back()) out_.push_back(',');
    has_element_.back() = true;
  }
}

void JsonWriter::BeginObject() {
  BeforeValue();
  out_.push_back('{');
  has_element_.push_back(false);
}

void JsonWriter::EndObject() {
  out_.push_back('}');
  has_element_.pop_back();
}

void JsonWriter::BeginArray() {
  BeforeValue();
  out_.push_back('[');
  has_element_.push_back(false);
}

void JsonWriter::EndArray() {
  out_.push_back(']');
  has_element_.pop_back();
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeValue();
  AppendJsonString(out_, key);
  out_.push_back(':');
  after_key_ = true;
  return *this;
}

void JsonWriter::String(std::string_view value) {
  BeforeValue();
  AppendJsonString(out_, value);
}

void JsonWriter::Number(double value) {
  if (!std::isfinite(value)) {
    Null();
    return;
  }
  BeforeValue();
  char buf[64];
  // Whole numbers (byte counts) without exponent; others in the shortest form that reads back
  // as the same double (epoch timestamps keep their microseconds).
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", value);
    out_ += buf;
    return;
  }
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out_.append(buf, ec == std::errc() ? end : buf);
}

void JsonWriter::Integer(std::int64_t value) {
  BeforeValue();
  out_ += std::to_string(value);
}

void JsonWriter::Unsigned(std::uint64_t value) {
  BeforeValue();
  out_ += std::to_string(value);
}

void JsonWriter::Bool(bool value) {
  BeforeValue();
  out_ += value ? "true" : "false";
}

void JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
}

void JsonWriter::OptionalNumber(const std::optional<double>& value) {
  if (value)
    Number(*value);
  else
    Null();
}

void JsonWriter::OptionalString(const std::string* value) {
  if (value)
    String(*value);
  else
    Null();
}

}  // namespace iodrift::daemon
