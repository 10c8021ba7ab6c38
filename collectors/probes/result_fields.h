// One description of a probe result: every output of a ProbeResult — `iodriftd --once --json`,
// GET /api/v1/probes, the D-Bus `RunProbe` answer and `ProbeCompleted` signal (a{sv}), and the
// status page's "last run" details — walks the fields of VisitProbeResult, in its order and
// with its names, so none of them can drift from the others. Names are the JSON member names;
// meminfo fields keep the kernel's names (`Active(file)`).
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
//
// Thread-safety: VisitProbeResult is a pure function of its arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/probes/probe.h"

namespace iodrift::probes {

enum class GroupShape { kMap, kRecord };

class ResultFieldVisitor {
 public:
  virtual ~ResultFieldVisitor() = default;
  virtual void Text(std::string_view key, const std::string& value) = 0;
  virtual void Flag(std::string_view key, bool value) = 0;
  virtual void Real(std::string_view key, const std::optional<double>& value) = 0;
  virtual void Count(std::string_view key, const std::optional<std::uint64_t>& value) = 0;
  virtual void Signed(std::string_view key, std::int64_t value) = 0;
  virtual void TextList(std::string_view key, const std::vector<std::string>& values) = 0;
  virtual void BeginGroup(std::string_view key, GroupShape shape, bool present) = 0;
  virtual void EndGroup() = 0;
};

void VisitProbeResult(const ProbeResult& result, ResultFieldVisitor& visitor);

// The top-level member names in walk order (for clients that rebuild the JSON from a{sv}).
const std::vector<std::string_view>& ProbeResultFieldNames();

}  // namespace iodrift::probes
