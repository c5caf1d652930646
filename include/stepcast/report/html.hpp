// The sweep as one self-contained HTML page for people: throughput and efficiency against
// workers with the ideal line, the step-time breakdown, a heat map of the busiest resources and
// links (by class: NIC, intra-node, leaf uplink, spine), the resolved inputs, bottlenecks, per-step spread,
// memory per GPU, tokens/s and MFU. The page needs no network: Chart.js (Debian's libjs-chart.js, inlined at
// build time) draws the charts from the data embedded as JSON; the tables are plain HTML. Knows Results,
// never the simulator.
//
//   std::ofstream file("report.html");
//   report::write_html_report(file, sweep);  // open report.html in any browser, offline
#pragma once

#include <ostream>

#include "stepcast/report/advice.hpp"
#include "stepcast/report/plan.hpp"
#include "stepcast/report/report.hpp"

namespace stepcast::report {

/// Writes one HTML5 document (UTF-8) for `sweep`. Predictions are grouped into curves by
/// (predictor, swept configuration); every text taken from the sweep (scenario name, inputs,
/// bottlenecks, resource names) is HTML-escaped. Deterministic: the same sweep gives the same
/// bytes. Throws nothing of its own; the stream's error state is the caller's to check.
void write_html_report(std::ostream& out, const Sweep& sweep);

/// `stepcast advise --report`: the grid as write_html_report draws it, led by the answer: the
/// target, the chosen configuration (the cheapest that meets it, or the best that fits when none
/// does), the runner-ups with a "meets" column, and the best single change. Configurations that
/// do not fit in GPU memory are marked on every chart and in every table.
void write_advice_html(std::ostream& out, const Advice& advice);

/// `stepcast plan --report`: led by the answer (the best layout of all counts with its step time,
/// tokens/s per GPU, MFU, memory per GPU against the GPU's, bubble, exposed communication by
/// dimension and bottleneck), then per GPU count what was considered and rejected (with the
/// closest miss) and the runner-ups (fine against coarse, and whether they rank alike); charts of
/// tokens/s per GPU, MFU and memory per GPU (with the GPU's limit) per ranked layout, the closest
/// misses marked as not fitting; the best layout's links by class. Same page style as
/// write_html_report; deterministic.
void write_plan_html(std::ostream& out, const Plan& plan);

}  // namespace stepcast::report
