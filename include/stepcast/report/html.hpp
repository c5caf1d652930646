// The sweep as one self-contained HTML page for people: throughput and efficiency against
// workers with the ideal line, the step-time breakdown, a heat map of the busiest resources and
// links, the resolved inputs, bottlenecks, per-step spread, memory per GPU, tokens/s and MFU.
// The page needs no network: Chart.js (Debian's libjs-chart.js, inlined at build time) draws the
// charts from the data embedded as JSON; the tables are plain HTML. Knows Results, never the
// simulator.
//
//   std::ofstream file("report.html");
//   report::write_html_report(file, sweep);  // open report.html in any browser, offline
#pragma once

#include <ostream>

#include "stepcast/report/report.hpp"

namespace stepcast::report {

/// Writes one HTML5 document (UTF-8) for `sweep`. Predictions are grouped into curves by
/// (predictor, swept configuration); every text taken from the sweep (scenario name, inputs,
/// bottlenecks, resource names) is HTML-escaped. Deterministic: the same sweep gives the same
/// bytes. Throws nothing of its own; the stream's error state is the caller's to check.
void write_html_report(std::ostream& out, const Sweep& sweep);

}  // namespace stepcast::report
