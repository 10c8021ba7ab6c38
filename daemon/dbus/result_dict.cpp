#include "daemon/dbus/result_dict.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "collectors/probes/result_fields.h"

namespace iodrift::daemon::dbus {
namespace {

// The value of `key` when present with type T, else nullopt.
template <typename T>
std::optional<T> Get(const Dict& dict, const std::string& key) {
  auto it = dict.find(key);
  if (it == dict.end()) return std::nullopt;
  try {
    if (!it->second.containsValueOfType<T>()) return std::nullopt;
    return it->second.get<T>();
  } catch (const sdbus::Error&) {
    return std::nullopt;
  }
}

// The walk of result_fields.h as a{sv}: scalars as their D-Bus types (a field that does not
// apply is left out), kRecord groups as a{sv}, kMap groups as typed maps (a{sd}, a{st}, a{sx});
// an empty or absent group is left out.
class DictWriter : public probes::ResultFieldVisitor {
 public:
  Dict Take() { return std::move(top_); }

  void Text(std::string_view key, const std::string& value, const probes::MetricExport&) override {
    Put(key, value);
  }
  void Flag(std::string_view key, bool value, const probes::MetricExport&) override {
    Put(key, value);
  }
  void Real(std::string_view key, const std::optional<double>& value,
            const probes::MetricExport&) override {
    if (value) Put(key, *value);
  }
  void Count(std::string_view key, const std::optional<std::uint64_t>& value,
             const probes::MetricExport&) override {
    if (value) Put(key, *value);
  }
  void Signed(std::string_view key, std::int64_t value, const probes::MetricExport&) override {
    Put(key, value);
  }
  void TextList(std::string_view key, const std::vector<std::string>& values,
                const probes::MetricExport&) override {
    Put(key, values);
  }
  bool BeginGroup(std::string_view key, probes::GroupShape shape, bool present,
                  const probes::MetricExport&) override {
    groups_.push_back(Open{std::string(key), shape, present, {}, {}, {}, {}});
    return present;
  }
  void EndGroup() override {
    Open g = std::move(groups_.back());
    groups_.pop_back();
    if (!g.present) return;
    if (g.shape == probes::GroupShape::kRecord) {
      if (!g.record.empty()) Put(g.key, g.record);
    } else if (!g.reals.empty()) {
      Put(g.key, g.reals);
    } else if (!g.counts.empty()) {
      Put(g.key, g.counts);
    } else if (!g.signeds.empty()) {
      Put(g.key, g.signeds);
    }
  }

 private:
  struct Open {
    std::string key;
    probes::GroupShape shape;
    bool present;
    Dict record;
    std::map<std::string, double> reals;
    std::map<std::string, std::uint64_t> counts;
    std::map<std::string, std::int64_t> signeds;
  };
  template <typename T>
  void Put(std::string_view key, const T& value) {
    std::string k(key);
    if (groups_.empty()) {
      top_[k] = sdbus::Variant(value);
      return;
    }
    Open& g = groups_.back();
    if (g.shape == probes::GroupShape::kRecord) {
      g.record[k] = sdbus::Variant(value);
    } else if constexpr (std::is_same_v<T, double>) {
      g.reals[k] = value;
    } else if constexpr (std::is_same_v<T, std::uint64_t>) {
      g.counts[k] = value;
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
      g.signeds[k] = value;
    }
  }
  Dict top_;
  std::vector<Open> groups_;
};

// The same walk read back from a{sv}: a member of the expected type is stored, anything else
// (missing, another type) leaves the result's default.
class DictReader : public probes::ResultFieldReader {
 public:
  explicit DictReader(const Dict& top) : top_(top) {}

  void Text(std::string_view key, std::string& value, const probes::MetricExport&) override {
    Take(key, value);
  }
  void Flag(std::string_view key, bool& value, const probes::MetricExport&) override {
    Take(key, value);
  }
  void Real(std::string_view key, std::optional<double>& value,
            const probes::MetricExport&) override {
    if (auto v = Get<double>(Scope(), std::string(key))) value = *v;
  }
  void Count(std::string_view key, std::optional<std::uint64_t>& value,
             const probes::MetricExport&) override {
    if (auto v = Get<std::uint64_t>(Scope(), std::string(key))) value = *v;
  }
  void Signed(std::string_view key, std::int64_t& value, const probes::MetricExport&) override {
    Take(key, value);
  }
  void TextList(std::string_view key, std::vector<std::string>& values,
                const probes::MetricExport&) override {
    Take(key, values);
  }
  bool BeginGroup(std::string_view key, probes::GroupShape shape, bool,
                  const probes::MetricExport&) override {
    // kMap groups are read whole (Map); a record is an a{sv}.
    std::optional<Dict> record;
    if (shape == probes::GroupShape::kRecord) record = Get<Dict>(Scope(), std::string(key));
    nested_.push_back(record.value_or(Dict{}));
    return record.has_value();
  }
  void EndGroup() override { nested_.pop_back(); }
  void Map(std::string_view key, std::map<std::string, double>& values) override {
    CopyMap(Scope(), std::string(key), values);
  }
  void Map(std::string_view key, std::map<std::string, std::uint64_t>& values) override {
    CopyMap(Scope(), std::string(key), values);
  }
  void Map(std::string_view key, std::map<std::string, std::int64_t>& values) override {
    CopyMap(Scope(), std::string(key), values);
  }
  void Map(std::string_view key, std::map<std::string, std::string>& values) override {
    // Text values travel as a record (a{sv}).
    if (auto record = Get<Dict>(Scope(), std::string(key))) {
      for (const auto& [name, value] : *record) {
        if (auto text = Get<std::string>(*record, name)) values[name] = *text;
      }
    }
  }

 private:
  const Dict& Scope() const { return nested_.empty() ? top_ : nested_.back(); }
  template <typename T>
  void Take(std::string_view key, T& value) {
    if (auto v = Get<T>(Scope(), std::string(key))) value = std::move(*v);
  }
  template <typename Map>
  static void CopyMap(const Dict& d, const std::string& key, Map& out) {
    if (auto v = Get<std::map<std::string, typename Map::mapped_type>>(d, key)) {
      out.insert(v->begin(), v->end());
    }
  }
  const Dict& top_;
  std::vector<Dict> nested_;
};

}  // namespace

Dict ToDict(const probes::ProbeResult& r) {
  DictWriter writer;
  probes::VisitProbeResult(r, writer);
  return writer.Take();
}

probes::ProbeResult FromDict(const Dict& d) {
  probes::ProbeResult r;
  DictReader reader(d);
  probes::ReadProbeResult(r, reader);
  return r;
}

}  // namespace iodrift::daemon::dbus
