// The probe kinds and what each one is: one row per kind (kinds.cpp), read by everything that
// differs by kind — the config loader (which keys apply, the choices in messages, the default
// probes), the remote defaults (netfs.h), the runner (what the run's size is), the figure's unit
// and op (result fields, drift, /metrics, the status page), the `--once` table and the twin
// (analysis::IsTwinOf).
//
// The run function is the one property not in the row: the runner's switch over ProbeKind
// (runner.cpp RunKind, checked complete by -Wswitch) calls it, so the config and its fuzzer
// read this table without linking the probe engine.
//
// Adding a kind: docs/design.md "Adding a probe kind".
//
// Thread-safety: constant data.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string_view>

#include "collectors/probes/probe_spec.h"

namespace iodrift::probes {

// What the spec's size of a run is (ProbeResult::spec_size) and which key holds it.
enum class SizeKey {
  kBytes,     // `size:` bytes per run (0 = calibrate)
  kFiles,     // `files:` files per run
  kRequests,  // `requests:` requests per run
};

struct KindTraits {
  ProbeKind kind;
  std::string_view name;  // the `kind:` value and the `kind` label
  // The figure: a throughput in bytes/s (op "") or a rate of operations ("read", "create").
  bool ops_figure;
  std::string_view op;
  std::string_view reads_phrase;  // the `--once` table: "buffered disk reads"
  bool has_target;                // false: memory (`target:` and `remote:` do not apply)
  SizeKey size_key;
  bool takes_readers;  // `readers:` (parallel readers, readers.h)
  bool takes_members;  // `members:` (array members, members.h)
  Duration min_interval;
  // The `time_budget:` when the config sets none: 100 ms for cached and memory, whose timed
  // windows copy for the whole budget (CPU-bound: a run costs about its budget of CPU on a free
  // core, and 12 runs an hour must stay within 2 CPU-seconds); 250 ms for the others (a cap on
  // reading; their CPU is the kernel's I/O path, far below the budget).
  Duration default_time_budget;
  // The kind whose run on the same target tells this one's device from its page cache
  // (buffered <-> direct); analysis::IsTwinOf pairs probes by it. The kinds of a pair read the
  // target in sequence, so their system CPU per GiB is a figure (runner.cpp).
  std::optional<ProbeKind> twin;
  // Reads bypass the page cache (O_DIRECT): the device side of a twin pair (the recovery
  // experiment runs it beside the probe; the page-cache tax divides by it). Random reads choose
  // per run (ProbeResult::mode), so the kind says false.
  bool bypasses_page_cache;
};

// The row of `kind` (every ProbeKind has one).
const KindTraits& Traits(ProbeKind kind);
// Every row, in ProbeKind order.
std::span<const KindTraits> AllKinds();
// "cached|buffered|direct|random|metadata|memory", for messages.
std::string_view KindChoices();
// The spec's size of one run of `spec` (the key its kind's size_key names).
std::uint64_t SpecSize(const ProbeSpec& spec);

}  // namespace iodrift::probes
