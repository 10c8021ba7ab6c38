// The top level of a config file and its small sections (collectors, scheduler, status,
// diagnose). Each section is a table of KeyRule rows: a key is named once, next to what reading
// it does. ForEachEntry takes the key list (unknown keys, "did you mean") from the same table, so
// adding a key or a collector is one row plus the field in config.h. Rows are in the order the
// keys are listed in messages ("expected one of: ...").
#include "config/listen.h"
#include "config/loader.h"

namespace iodrift::config::detail {

Config Loader::LoadRoot(const YAML::Node& root) {
  Config config;
  if (root.IsNull()) return config;
  if (!root.IsMap()) {
    Report(root, "",
           "the top level must be a map of settings (`listen: ...`, `probes: ...`), got " +
               DescribeNode(root));
    return config;
  }
  static constexpr KeyRule<Config> kKeys[] = {
      {"listen",
       [](Loader& l, const Entry& e, Config& c) {
         if (auto v = l.ReadChoice(e, &CheckListen)) c.listen = *v;
       }},
      {"state_dir",
       [](Loader& l, const Entry& e, Config& c) {
         if (auto v = l.ReadAbsolutePath(e)) c.state_dir = *v;
       }},
      {"proc_root",
       [](Loader& l, const Entry& e, Config& c) {
         if (auto v = l.ReadAbsolutePath(e)) c.proc_root = *v;
       }},
      {"sys_root",
       [](Loader& l, const Entry& e, Config& c) {
         if (auto v = l.ReadAbsolutePath(e)) c.sys_root = *v;
       }},
      {"dbus",
       [](Loader& l, const Entry& e, Config& c) {
         if (auto v = l.ReadChoice(e, &CheckDbus)) c.dbus = *v;
       }},
      {"log_level",
       [](Loader& l, const Entry& e, Config& c) {
         if (auto v = l.ReadChoice(e, &CheckLogLevel)) c.log_level = *v;
       }},
      {"collectors",
       [](Loader& l, const Entry& e, Config& c) { l.LoadCollectors(e, c.collectors); }},
      {"http", [](Loader& l, const Entry& e, Config& c) { l.LoadHttp(e, c.http); }},
      {"scheduler", [](Loader& l, const Entry& e, Config& c) { l.LoadScheduler(e, c.scheduler); }},
      {"status", [](Loader& l, const Entry& e, Config& c) { l.LoadStatus(e, c.status); }},
      {"diagnose", [](Loader& l, const Entry& e, Config& c) { l.LoadDiagnose(e, c.diagnose); }},
      {"probes", [](Loader& l, const Entry& e, Config& c) { l.LoadProbes(e, &c.probes); }},
  };
  ForEachEntry<Config>(root, "", kKeys, config);
  return config;
}

// `name: true|false`, or `name: {enabled: ..., <options>}` walked with the `options` table
// (which holds `enabled` too) into `target`.
template <class Options>
void Loader::LoadCollector(const Entry& entry, bool& enabled,
                           std::type_identity_t<std::span<const KeyRule<Options>>> options,
                           Options& target) {
  if (entry.value.IsMap()) {
    ForEachEntry<Options>(entry.value, entry.path, options, target);
    return;
  }
  if (entry.value.IsScalar() || entry.value.IsNull()) {
    if (auto v = ReadBool(entry)) enabled = *v;
    return;
  }
  ReportValue(entry,
              "expected true, false or a map with `enabled`, got " + DescribeNode(entry.value));
}

void Loader::ReadEnabled(Loader& loader, const Entry& entry, bool& enabled) {
  if (auto v = loader.ReadBool(entry)) enabled = *v;
}

// A collector without options: `name: true|false` or `name: {enabled: ...}`.
template <bool CollectorsConfig::*kEnabled>
void Loader::LoadPlainCollector(Loader& loader, const Entry& entry, CollectorsConfig& out) {
  static constexpr KeyRule<bool> kOptions[] = {{"enabled", &ReadEnabled}};
  loader.LoadCollector<bool>(entry, out.*kEnabled, kOptions, out.*kEnabled);
}

void Loader::LoadVmstat(Loader& loader, const Entry& entry, CollectorsConfig& out) {
  static constexpr KeyRule<VmstatOptions> kOptions[] = {
      {"enabled",
       [](Loader& l, const Entry& e, VmstatOptions& o) { ReadEnabled(l, e, o.enabled); }},
      {"fields",
       [](Loader& l, const Entry& e, VmstatOptions& o) {
         if (auto v = l.ReadRegex(e)) o.fields = *v;
       }},
  };
  loader.LoadCollector<VmstatOptions>(entry, out.vmstat.enabled, kOptions, out.vmstat);
}

void Loader::LoadSlabinfo(Loader& loader, const Entry& entry, CollectorsConfig& out) {
  static constexpr KeyRule<SlabinfoOptions> kOptions[] = {
      {"enabled",
       [](Loader& l, const Entry& e, SlabinfoOptions& o) { ReadEnabled(l, e, o.enabled); }},
      {"include",
       [](Loader& l, const Entry& e, SlabinfoOptions& o) {
         if (auto v = l.ReadRegex(e)) o.include = *v;
       }},
      {"exclude",
       [](Loader& l, const Entry& e, SlabinfoOptions& o) {
         if (auto v = l.ReadRegex(e)) o.exclude = *v;
       }},
  };
  loader.LoadCollector<SlabinfoOptions>(entry, out.slabinfo.enabled, kOptions, out.slabinfo);
}

void Loader::LoadCollectors(const Entry& section, CollectorsConfig& out) {
  if (!ExpectMap(section, "a map of collectors (`meminfo: true`, ...)")) return;
  using C = CollectorsConfig;
  static constexpr KeyRule<C> kCollectors[] = {
      {"meminfo", &LoadPlainCollector<&C::meminfo>},
      {"vmstat", &LoadVmstat},
      {"slabinfo", &LoadSlabinfo},
      {"pressure", &LoadPlainCollector<&C::pressure>},
      {"buddyinfo", &LoadPlainCollector<&C::buddyinfo>},
      {"boot", &LoadPlainCollector<&C::boot>},
      {"dentries", &LoadPlainCollector<&C::dentries>},
      {"balloon", &LoadPlainCollector<&C::balloon>},
  };
  ForEachEntry<C>(section.value, section.path, kCollectors, out);
}

void Loader::LoadScheduler(const Entry& section, SchedulerConfig& out) {
  if (!ExpectMap(section, "a map (`max_concurrent: 1`, `io_class: best-effort`, ...)")) return;
  static constexpr KeyRule<SchedulerConfig> kKeys[] = {
      {"max_concurrent",
       [](Loader& l, const Entry& e, SchedulerConfig& s) {
         if (auto v = l.ReadCount(e, 1, 64)) s.max_concurrent = static_cast<std::uint32_t>(*v);
       }},
      {"io_class",
       [](Loader& l, const Entry& e, SchedulerConfig& s) {
         if (auto v = l.ReadChoice(e, &CheckIoClass)) s.io_class = *v;
       }},
      {"io_level",
       [](Loader& l, const Entry& e, SchedulerConfig& s) {
         if (auto v = l.ReadCount(e, 0, 7)) s.io_level = static_cast<int>(*v);
       }},
      {"nice",
       [](Loader& l, const Entry& e, SchedulerConfig& s) {
         if (auto v = l.ReadCount(e, 0, 19)) s.nice = static_cast<int>(*v);
       }},
  };
  ForEachEntry<SchedulerConfig>(section.value, section.path, kKeys, out);
}

void Loader::LoadStatus(const Entry& section, StatusOptions& out) {
  if (!ExpectMap(section, "a map (`enabled: true`, `history_runs: 240`)")) return;
  static constexpr KeyRule<StatusOptions> kKeys[] = {
      {"enabled",
       [](Loader& l, const Entry& e, StatusOptions& s) { ReadEnabled(l, e, s.enabled); }},
      {"history_runs",
       [](Loader& l, const Entry& e, StatusOptions& s) {
         if (auto v = l.ReadCount(e, 2, 100000)) {
           s.history_runs = static_cast<std::uint32_t>(*v);
         }
       }},
  };
  ForEachEntry<StatusOptions>(section.value, section.path, kKeys, out);
}

void Loader::LoadDiagnose(const Entry& section, DiagnoseConfig& out) {
  if (!ExpectMap(section, "a map (`enabled: true`, `warm_size: 1GiB`)")) return;
  static constexpr KeyRule<DiagnoseConfig> kKeys[] = {
      {"enabled",
       [](Loader& l, const Entry& e, DiagnoseConfig& d) { ReadEnabled(l, e, d.enabled); }},
      {"warm_size",
       [](Loader& l, const Entry& e, DiagnoseConfig& d) {
         if (auto v = l.ReadSize(e, /*allow_auto=*/false)) d.warm_size = *v;
       }},
      {"min_available",
       [](Loader& l, const Entry& e, DiagnoseConfig& d) {
         if (auto v = l.ReadSize(e, /*allow_auto=*/false)) d.min_available = *v;
       }},
      {"max_memory_pressure",
       [](Loader& l, const Entry& e, DiagnoseConfig& d) {
         if (auto v = l.ReadCount(e, 0, 100)) {
           d.max_memory_pressure = static_cast<std::uint32_t>(*v);
         }
       }},
      {"max_io_pressure",
       [](Loader& l, const Entry& e, DiagnoseConfig& d) {
         if (auto v = l.ReadCount(e, 0, 100)) d.max_io_pressure = static_cast<std::uint32_t>(*v);
       }},
      {"timeout",
       [](Loader& l, const Entry& e, DiagnoseConfig& d) {
         if (auto v = l.ReadDuration(e)) d.timeout = *v;
       }},
      {"cooldown",
       [](Loader& l, const Entry& e, DiagnoseConfig& d) {
         if (auto v = l.ReadDuration(e, /*allow_zero=*/true)) d.cooldown = *v;
       }},
  };
  ForEachEntry<DiagnoseConfig>(section.value, section.path, kKeys, out);
}

}  // namespace iodrift::config::detail
