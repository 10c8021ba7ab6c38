// One description of a probe result: every output of a ProbeResult — `iodriftd --once --json`,
// GET /api/v1/probes, the D-Bus `RunProbe` answer and `ProbeCompleted` signal (a{sv}) and its
// decoding in iodriftctl, the status page's "last run" details, and the iodrift_probe_* families
// of /metrics that come from the last run — walks the fields of one function (the walk in
// result_fields.cpp), in its order and with its names, so none of them can drift from the others.
// Names are the JSON member names; meminfo fields keep the kernel's names (`Active(file)`).
// Adding a field is one line of the walk (its name, its value and how /metrics shows it) plus its
// value in tests/daemon/result_fields_test.cpp; docs/design.md "Adding a result field".
//
// The walk:
//   Text, Flag, Real, Count, Signed   one scalar member; Real/Count with nullopt: the field does
//                                     not apply to this kind or run (JSON null, absent on D-Bus)
//   TextList                          an array of strings
//   BeginGroup(key, shape, present) … EndGroup()
//                                     a nested object; when !present the field does not apply
//                                     (JSON null) and no members come before EndGroup. A kMap
//                                     group's keys are data (meminfo fields, ops) and its values
//                                     all of one type (D-Bus: a typed map such as a{st}); a
//                                     kRecord group has fixed keys of mixed types (a{sv}).
// Every member comes with its MetricExport: how /metrics shows it, or why it does not.
//
// Both directions: VisitProbeResult hands the values of a result to a ResultFieldVisitor (the
// outputs); ReadProbeResult walks the same fields with a ResultFieldReader that fills a result
// in (D-Bus FromDict), so a field cannot be written without being read back.
//
// Thread-safety: the walks are pure functions of their arguments; the descriptions are constant.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/probes/probe.h"

namespace iodrift::probes {

enum class GroupShape { kMap, kRecord };

// A /metrics family that result fields are written to (daemon/probe_metrics.cpp builds it).
struct ResultFamily {
  std::string_view name{};
  // With last_run_help, " Value from the last scheduled or on-demand run." follows.
  std::string_view help{};
  bool last_run_help = true;
  bool summary = false;   // a summary of MetricExport::kQuantile fields, else a gauge
  bool op_label = false;  // samples carry op=Traits(kind).op (the ops kinds' families)
};

// How one field of the walk reaches /metrics. Labels kind, probe and target are on every sample.
struct MetricExport {
  enum class Way {
    kNone,       // not in /metrics: `why` says why (and where the field is instead)
    kGauge,      // a sample of `family` with the field's value; in a kMap group one per key,
                 // labelled `label`=key (a kMap group's members take the group's export)
    kInfoLabel,  // the label `label` of `family` (value 1, one sample per probe); a list joins
                 // its values with ","
    kQuantile,   // the quantile `quantile` of the summary `family`
    kFlags,      // a list: one sample per value, 1, labelled `label`=value; each of `always`
                 // that is not in the list is written as 0, so alerts can rely on the series
  };
  Way way = Way::kNone;
  const ResultFamily* family = nullptr;
  // Used instead of `family` for the kinds whose figure is a rate of operations
  // (Traits(kind).ops_figure); null: `family` for every kind.
  const ResultFamily* ops_family = nullptr;
  std::string_view label{};
  std::pair<std::string_view, std::string_view> fixed{};  // a constant label (part=kernel_cpu)
  bool on_success = false;                                // only when the run succeeded
  double quantile = 0;
  std::span<const std::string_view> always{};
  std::string_view why{};
};

class ResultFieldVisitor {
 public:
  virtual ~ResultFieldVisitor() = default;
  virtual void Text(std::string_view key, const std::string& value, const MetricExport& m) = 0;
  virtual void Flag(std::string_view key, bool value, const MetricExport& m) = 0;
  virtual void Real(std::string_view key, const std::optional<double>& value,
                    const MetricExport& m) = 0;
  virtual void Count(std::string_view key, const std::optional<std::uint64_t>& value,
                     const MetricExport& m) = 0;
  virtual void Signed(std::string_view key, std::int64_t value, const MetricExport& m) = 0;
  virtual void TextList(std::string_view key, const std::vector<std::string>& values,
                        const MetricExport& m) = 0;
  // Returns `present` (the members follow only then).
  virtual bool BeginGroup(std::string_view key, GroupShape shape, bool present,
                          const MetricExport& m) = 0;
  virtual void EndGroup() = 0;
};

void VisitProbeResult(const ProbeResult& result, ResultFieldVisitor& visitor);

// The reading side of the walk: each call finds the member in the input and, when it is there
// with the right type, stores it into `value`; a member that is missing leaves `value` alone.
// kMap groups come whole (Map), since their keys are data.
class ResultFieldReader {
 public:
  virtual ~ResultFieldReader() = default;
  virtual void Text(std::string_view key, std::string& value, const MetricExport& m) = 0;
  virtual void Flag(std::string_view key, bool& value, const MetricExport& m) = 0;
  virtual void Real(std::string_view key, std::optional<double>& value, const MetricExport& m) = 0;
  virtual void Count(std::string_view key, std::optional<std::uint64_t>& value,
                     const MetricExport& m) = 0;
  virtual void Signed(std::string_view key, std::int64_t& value, const MetricExport& m) = 0;
  virtual void TextList(std::string_view key, std::vector<std::string>& values,
                        const MetricExport& m) = 0;
  // Whether the input holds the group (`present` is the result's own, false for a fresh one);
  // its members are read only then.
  virtual bool BeginGroup(std::string_view key, GroupShape shape, bool present,
                          const MetricExport& m) = 0;
  virtual void EndGroup() = 0;
  virtual void Map(std::string_view key, std::map<std::string, double>& values) = 0;
  virtual void Map(std::string_view key, std::map<std::string, std::uint64_t>& values) = 0;
  virtual void Map(std::string_view key, std::map<std::string, std::int64_t>& values) = 0;
  virtual void Map(std::string_view key, std::map<std::string, std::string>& values) = 0;
};

// Fills `result` from the reader's input, field by field of the same walk.
void ReadProbeResult(ProbeResult& result, ResultFieldReader& reader);

// The top-level member names in walk order (for clients that rebuild the JSON from a{sv}).
const std::vector<std::string_view>& ProbeResultFieldNames();

}  // namespace iodrift::probes
