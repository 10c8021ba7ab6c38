// The probes list: each item's keys, the checks that depend on its kind, and unique names.
#include "config/loader.h"

namespace iodrift::config::detail {
namespace {

// The names of the kinds whose row passes `test`: "buffered, direct and random".
template <class Test>
std::string KindsWhere(Test test) {
  std::vector<std::string_view> names;
  for (const probes::KindTraits& k : probes::AllKinds()) {
    if (test(k)) names.push_back(k.name);
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace

void Loader::LoadProbes(const Entry& section, std::vector<ProbeSpec>* out) {
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
      Report(item, path, "expected a map with name, kind, target, ..., got " + DescribeNode(item));
      continue;
    }
    const std::size_t problems_before = problem_count_;
    YAML::Node name_node;
    ProbeSpec probe = LoadProbe(item, path, &name_node);
    // A probe with other problems still claims its name, so a later duplicate is reported.
    if (probe.name.empty()) continue;
    auto [first, inserted] = names.emplace(probe.name, FirstUse{index, PositionOf(name_node).line});
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
struct Loader::ProbeItem {
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
ProbeSpec Loader::LoadProbe(const YAML::Node& item, const std::string& path,
                            YAML::Node* name_node) {
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
         if (auto v = l.ReadScalar(e, "one of " + std::string(probes::KindChoices()))) {
           if (auto kind = ParseProbeKind(*v)) {
             p.probe.kind = *kind;
             p.kind_valid = true;
           } else {
             l.ReportValue(
                 e, "must be one of " + std::string(probes::KindChoices()) + ", got " + Shown(*v));
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
    Report(item_pos, path + ".name", "missing (every probe needs a unique name like sda-buffered)");
  }
  if (!read.has_kind) {
    Report(item_pos, path + ".kind",
           "missing (must be one of " + std::string(probes::KindChoices()) + ")");
  }
  // Checks that depend on the kind only make sense once the kind is known.
  if (read.kind_valid) {
    const probes::KindTraits& traits = probes::Traits(probe.kind);
    if (!read.time_budget) probe.time_budget = traits.default_time_budget;
    if (!traits.has_target) {
      if (read.target) {
        ReportValue(*read.target,
                    "a " + std::string(traits.name) + " probe reads no file; remove `target`");
      }
    } else if (!read.target) {
      Report(item_pos, path + ".target",
             "missing (a " + std::string(ProbeKindName(probe.kind)) +
                 " probe needs a block device, regular file or directory)");
    }
    if (read.files && traits.size_key != probes::SizeKey::kFiles) {
      Report(PositionOf(read.files->key), read.files->path,
             "only applies to kind " +
                 KindsWhere([](auto& k) { return k.size_key == probes::SizeKey::kFiles; }));
    }
    if (read.requests && traits.size_key != probes::SizeKey::kRequests) {
      Report(PositionOf(read.requests->key), read.requests->path,
             "only applies to kind " +
                 KindsWhere([](auto& k) { return k.size_key == probes::SizeKey::kRequests; }));
    }
    if (read.members && !traits.takes_members) {
      Report(PositionOf(read.members->key), read.members->path,
             "only applies to kinds " + KindsWhere([](auto& k) { return k.takes_members; }) +
                 " (on an array device)");
    }
    if (read.interval && probe.interval < probes::MinInterval(probe.kind)) {
      ReportValue(*read.interval, FormatDuration(probe.interval) +
                                      " is shorter than the minimum of " +
                                      FormatDuration(probes::MinInterval(probe.kind)) +
                                      " for kind " + std::string(ProbeKindName(probe.kind)) +
                                      " (a shorter interval runs the probe back to back)");
    }
    if (read.remote && !traits.has_target) {
      Report(PositionOf(read.remote->key), read.remote->path,
             "only applies to kinds with a target (a memory probe reads no file)");
    }
    if (read.readers && !traits.takes_readers) {
      Report(PositionOf(read.readers->key), read.readers->path,
             "only applies to kinds " + KindsWhere([](auto& k) { return k.takes_readers; }));
    }
  }
  // Whether the target is remote is a fact of each run, not of the file: the runs apply the
  // remote defaults to the keys not given here (netfs.h WithRemoteDefaults).
  probe.given = {.size = read.size.has_value(),
                 .timeout = read.timeout.has_value(),
                 .files = read.files.has_value(),
                 .requests = read.requests.has_value()};
  if (read.durations_valid && (read.timeout || read.time_budget) &&
      probe.timeout <= probe.time_budget) {
    const Entry& at = read.timeout ? *read.timeout : *read.time_budget;
    ReportValue(at, "timeout (" + FormatDuration(probe.timeout) +
                        ") must be greater than time_budget (" + FormatDuration(probe.time_budget) +
                        ")");
  }
  return std::move(read.probe);
}

std::string Loader::FormatDuration(Duration d) {
  const auto ms = d.count();
  if (ms % 1000 != 0) return std::to_string(ms) + "ms";
  return std::to_string(ms / 1000) + "s";
}

std::optional<std::string> Loader::CheckProbeName(std::string_view name) {
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

}  // namespace iodrift::config::detail
