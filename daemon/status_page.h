// The built-in status page (GET / on the metrics listener): one self-contained HTML document —
// no external scripts, styles or fonts, so it works on a machine without internet — that answers
// "why is this machine slow after 40 days?" without Grafana.
//
// Per probe it shows the recent figures (bytes/s, or ops/s for random and metadata) with the
// baseline of that moment, the ratio to the baseline, and on the same time axis the memory state
// recorded with every run (free, page cache, slab reclaimable/unreclaimable, dirty + writeback,
// PSI stall ratios, fragmentation index), boot boundaries and uptime, then the `explain` ranking
// (drift.h ExplainProbe). Below: the baselines of this and past boots from the state dir.
//
// Charts are server-rendered SVG (svg_chart.h: a polyline per series, a <circle> per data point
// with a <title> tooltip, axes, a legend per chart); a few lines of inline JS (status_assets.h)
// show every value of the hovered run under the charts. All text from probes, targets and errors
// is HTML-escaped (page_format.h).
//
// Pure rendering: inputs in, HTML out; no I/O, no clock. Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/analysis/baseline_store.h"
#include "collectors/analysis/history.h"
#include "collectors/analysis/probe_states.h"
#include "config/config.h"
#include "daemon/page_format.h"  // HtmlEscape
#include "daemon/svg_chart.h"

namespace iodrift::daemon {

// Charts draw at most this many points per series (evenly picked over the history, the newest
// always included), so a long history (status.history_runs up to 100000) keeps the page small.
inline constexpr std::size_t kMaxChartPoints = 240;

struct StatusPageInput {
  std::string version;
  double now_seconds = 0;  // wall clock (epoch) of the rendering
  std::optional<std::string> boot_id;
  std::optional<double> uptime_seconds;
  std::shared_ptr<const analysis::ProbeSnapshot> probes;  // ProbeStates::Snapshot()
  std::size_t history_runs = 0;                           // the ring's bound per probe
  analysis::BaselineState baselines;                      // ProbeStates::Baselines()
  // StateProblemText (state_health.h): non-empty while the state dir takes no writes; shown as
  // a banner above everything else.
  std::string state_problem;
};

std::string RenderStatusPage(const StatusPageInput& input);

// Every field of one result (collectors/probes/result_fields.h) as a collapsed <details> table,
// under the probe's charts.
std::string ResultFieldsHtml(const probes::ProbeResult& result);

}  // namespace iodrift::daemon
