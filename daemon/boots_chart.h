// The status page's chart of each probe's boots (collectors/analysis/boot_record.h): the ratio
// against uptime on a log axis (svg_chart.h log_x), one line per boot — this boot and up to 19
// past boots — through the points the record keeps: the ratio at 1 h, 1 d, 7 d and 30 d of uptime
// (drawn at the mark), the worst ratio at its uptime and the last ratio at its uptime. A
// reference line at ratio 1 (the boot's own baseline).
//
// Each chart is one <svg class="chart" id="boots-chart-N"> (N: the probe's place in
// BootProbeNames) whose series are <g class="series boot-I"> (I: 0 for the newest boot shown);
// a boot with a single point is a marker without a line.
//
// Pure rendering. Thread-safety: pure function.
#pragma once

#include <string>

#include "collectors/analysis/baseline_store.h"

namespace iodrift::daemon {

// One <figure> per probe that has a boot with a point to draw, in the page's chart grid
// (<div class="charts boots-charts">: half the width each, side by side); "" when none has.
std::string RenderBootsCharts(const analysis::BaselineState& state);

}  // namespace iodrift::daemon
