// The status page's stylesheet and script, inlined into the page (status_page.cpp) so it loads
// nothing from outside. The stylesheet also styles the SVG charts (svg_chart.h classes); the
// script shows every value of the hovered run (same data-i) in its probe's readout line.
#pragma once

namespace iodrift::daemon::status_assets {

extern const char* const kStyle;   // the contents of <style>
extern const char* const kScript;  // the contents of <script>

}  // namespace iodrift::daemon::status_assets
