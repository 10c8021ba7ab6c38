// /proc/vmstat: virtual memory counters and gauges, one "name value" pair per line
// (no kernel doc beyond include/linux/vm_event_item.h and mm/vmstat.c).
//
//   nr_free_pages 5767632
//   pgscan_kswapd 0
//
// Tolerance: unknown names are kept in file order; lines that are not exactly two fields (a
// printable name and an integer) are skipped and counted. Some entries are signed in the kernel
// (e.g. nr_* per-cpu drift can print negative numbers on old kernels) — those are parsed as
// signed and kept. A value beyond INT64_MAX is malformed (never wrapped); a repeated name keeps
// its first value and the repeat counts as malformed, so names in `fields` are unique.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/error.h"
#include "collectors/common/proc_root.h"

namespace iodrift::proc {

// `collectors.vmstat.fields` takes an ECMAScript regex (whole-name match) or one of two words:
//   default  the fields below (kDefaultVmstatFields): what explains a slow read - reclaim,
//            compaction, refaults, THP and I/O - about 45 series instead of ~190;
//   all      every field (".*"; also "" for configs written before the default list).
inline constexpr std::string_view kVmstatFieldsDefaultWord = "default";
inline constexpr std::string_view kVmstatFieldsAllWord = "all";
// Keep in step with docs/metrics.md ("Series next to node_exporter") and config/iodrift.yaml.
// Fields a kernel does not have simply do not appear (allocstall_device is 6.x, the per-type
// workingset_* names replaced workingset_refault/activate/restore in 5.9).
inline constexpr std::string_view kDefaultVmstatFields =
    // reclaim: pages scanned/stolen by kswapd and by allocating tasks, direct-reclaim stalls per
    // zone, throttled direct reclaim, active-list refill, slab shrinking
    "pgscan_(kswapd|direct)|pgsteal_(kswapd|direct)|pgscan_direct_throttle|allocstall_.+|pgrefill|"
    "slabs_scanned|"
    // what empties memory by force: the OOM killer, `echo N > drop_caches`
    "oom_kill|drop_pagecache|drop_slab|"
    // compaction: stalls of allocating tasks, their outcome, and the work done
    "compact_(stall|fail|success|migrate_scanned|free_scanned)|"
    // refaults: evicted pages read back (thrashing), by anon/file
    "workingset_(refault|activate|restore)(_anon|_file)?|"
    // THP: fault-time allocation and fallback, khugepaged collapse, splits, THPs in use, and
    // splits of the kernel's direct map (large pages broken into small ones)
    "thp_fault_(alloc|fallback)|thp_collapse_alloc(_failed)?|thp_split_page|"
    "nr_anon_transparent_hugepages|direct_map_level[23]_splits|"
    // I/O: paging and swapping, faults, dirty and writeback pages and their rates
    "pgpgin|pgpgout|pswpin|pswpout|pgfault|pgmajfault|nr_dirty|nr_writeback|nr_dirtied|nr_written";

// The regex `fields` stands for: the default list for "default", every field for "all".
std::string VmstatFieldsRegex(std::string_view fields);

struct VmstatField {
  std::string name;
  std::int64_t value;
};

struct Vmstat {
  std::vector<VmstatField> fields;
  std::size_t malformed_lines = 0;

  std::optional<std::int64_t> Get(std::string_view name) const;
};

// Pure; never fails (an empty or garbage text yields no fields and a malformed count).
Vmstat ParseVmstat(std::string_view text);
// Reads root/vmstat. Fails with the errno of the read, or with EINVAL when no field parsed.
Expected<Vmstat> ReadVmstat(const ProcRoot& root);

}  // namespace iodrift::proc
