// write_html_report: the sweep as one self-contained HTML page. The tables are written here as
// HTML; the charts are drawn in the browser by the inlined Chart.js from a JSON island
// (<script type="application/json">) written with the report's one JSON writer.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/chartjs.hpp"
#include "report/json_text.hpp"
#include "report/text_table.hpp"
#include "stepcast/report/html.hpp"
#include "stepcast/units.hpp"
#include "stepcast/version.hpp"

namespace stepcast::report {
namespace {

using detail::JsonWriter;
using predict::Result;

/// The heat map shows this many rows at most, the busiest first; the rest are counted.
constexpr std::size_t kMaxHeatRows = 24;
/// Above this many curves a legend of full labels ("fine, training.ps.count=4, ...") covers the
/// chart: curves get short labels ("C1", "C2", ...) and a key table gives each one's full label.
constexpr std::size_t kMaxFullLegendLabels = 6;

// ---- Text

/// Appends `text` with the five characters that are markup in HTML text and attribute values
/// replaced by entities, so a scenario name or bottleneck cannot open a tag.
void append_escaped(fmt::memory_buffer& buf, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&':
        buf.append(std::string_view("&amp;"));
        break;
      case '<':
        buf.append(std::string_view("&lt;"));
        break;
      case '>':
        buf.append(std::string_view("&gt;"));
        break;
      case '"':
        buf.append(std::string_view("&quot;"));
        break;
      case '\'':
        buf.append(std::string_view("&#39;"));
        break;
      default:
        buf.push_back(c);
        break;
    }
  }
}

std::string escaped(std::string_view text) {
  fmt::memory_buffer buf;
  append_escaped(buf, text);
  return fmt::to_string(buf);
}

/// "training.ps.count=4, cluster.nic_bandwidth=25Gbps"; "" without a sweep. (Its own helper:
/// config_label is the table's.)
std::string config_text(const Config& config) {
  std::string text;
  for (const Input& input : config) {
    if (!text.empty()) text += ", ";
    text += input.key + "=" + input.value;
  }
  return text;
}

const Config& config_of(const Sweep& sweep, std::size_t i) {
  static const Config kNone;
  return i < sweep.configs.size() ? sweep.configs[i] : kNone;
}

std::string workers_text(int workers) { return format_count(workers, "worker", "workers"); }

/// A number with `digits` decimals, or an en dash when it is not finite.
std::string fixed(double value, int digits) {
  if (!std::isfinite(value)) return "&ndash;";
  return fmt::format("{:.{}f}", value, digits);
}

// ---- What the page shows, computed once

/// Step times are shown in the one unit that suits the sweep's longest step.
struct TimeUnit {
  std::string_view name;
  double per_second;
};

TimeUnit time_unit_for(const std::vector<Result>& predictions) {
  double longest = 0;
  for (const Result& r : predictions)
    if (std::isfinite(r.step_time)) longest = std::max(longest, r.step_time);
  if (longest >= 1) return {"s", 1};
  if (longest >= 1e-3 || longest == 0) return {"ms", 1e3};
  return {"\u00b5s", 1e6};
}

/// One curve: the predictions of one predictor under one swept configuration, in sweep order.
struct Group {
  std::string predictor;
  std::string config;
  std::vector<std::size_t> members;  ///< indices into sweep.predictions
  std::string shown{};               ///< its legend label: full() or, with many curves, "C3"
  [[nodiscard]] std::string full() const { return config.empty() ? predictor : predictor + ", " + config; }
};

/// The keys every swept configuration sets, in order, when they all set the same ones; empty
/// otherwise (or with no configurations).
std::vector<std::string> swept_keys(const Sweep& sweep) {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    std::vector<std::string> these;
    for (const Input& input : config_of(sweep, i)) these.push_back(input.key);
    if (these.empty()) return {};
    if (i == 0) {
      keys = std::move(these);
    } else if (these != keys) {
      return {};
    }
  }
  return keys;
}

/// Whether the curves are many enough to get short labels and a key table.
bool short_labels(const std::vector<Group>& groups) { return groups.size() > kMaxFullLegendLabels; }

std::vector<Group> groups_of(const Sweep& sweep) {
  std::vector<Group> groups;
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    const std::string predictor = predict::to_string(sweep.predictions[i].predictor);
    const std::string config = config_text(config_of(sweep, i));
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return g.predictor == predictor && g.config == config; });
    if (it == groups.end()) {
      groups.push_back({predictor, config, {}});
      it = std::prev(groups.end());
    }
    it->members.push_back(i);
  }
  const bool short_names = short_labels(groups);
  // When every configuration sets the same keys, the legend gives their values only (the note
  // under the charts names the keys): "fine, 10Gbps" keeps a legend of a few curves on one or
  // two lines.
  const std::vector<std::string> keys = swept_keys(sweep);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    Group& group = groups[g];
    if (short_names) {
      group.shown = fmt::format("C{}", g + 1);
    } else if (!keys.empty()) {
      const Config& config = config_of(sweep, group.members.front());
      std::string values;
      for (const Input& input : config) values += ", " + input.value;
      group.shown = group.predictor + values;
    } else {
      group.shown = group.full();
    }
  }
  return groups;
}

/// Whether a prediction fits in GPU memory: false only when both its memory and the GPU's are
/// known and it needs more.
bool fits(const Result& r) { return !r.memory.known || r.memory.fits(); }

/// The ideal of a curve: N workers x one worker's compute-only rate, which is throughput /
/// speed-up (speed-up is against one worker training alone, Result::speedup); NaN when no
/// member has a speed-up.
double single_worker_rate(const Sweep& sweep, const Group& group) {
  for (std::size_t i : group.members) {
    const Result& r = sweep.predictions[i];
    if (r.speedup > 0 && std::isfinite(r.throughput) && std::isfinite(r.speedup))
      return r.throughput / r.speedup;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

/// One ideal line, shared by the curves whose single-worker rates agree (predictors of the same
/// configuration usually do), so the chart is not drawn over with copies of one line.
struct Ideal {
  double rate = 0;  ///< samples/s of one worker alone
  std::vector<std::size_t> groups;
};

std::vector<Ideal> ideals_of(const Sweep& sweep, const std::vector<Group>& groups) {
  std::vector<Ideal> ideals;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const double rate = single_worker_rate(sweep, groups[g]);
    if (!std::isfinite(rate)) continue;
    auto same = std::find_if(ideals.begin(), ideals.end(), [&](const Ideal& i) {
      return std::fabs(i.rate - rate) <= 1e-9 * std::fabs(rate);
    });
    if (same == ideals.end()) {
      ideals.push_back({rate, {}});
      same = std::prev(ideals.end());
    }
    same->groups.push_back(g);
  }
  return ideals;
}

/// One row of the heat map: a resource (Result::utilization) or a class of links
/// (Result::link_classes), with its busy fraction per prediction (NaN where that prediction does not
/// report it); for a class, the busiest link's, with the mean and the count of its links.
struct HeatRow {
  std::string name;
  bool link = false;
  std::vector<double> busy;
  double peak = 0;
  std::vector<double> mean{};
  std::vector<std::size_t> links{};
};

std::vector<HeatRow> heat_rows(const std::vector<Result>& predictions) {
  std::vector<HeatRow> rows;
  const std::size_t n = predictions.size();
  auto add = [&](std::size_t column, const std::string& name, double busy, bool link) -> HeatRow& {
    auto it = std::find_if(rows.begin(), rows.end(),
                           [&](const HeatRow& row) { return row.link == link && row.name == name; });
    if (it == rows.end()) {
      rows.push_back({name, link, std::vector<double>(n, std::nan("")), 0,
                      std::vector<double>(n, std::nan("")), std::vector<std::size_t>(n, 0)});
      it = std::prev(rows.end());
    }
    it->busy[column] = busy;
    if (std::isfinite(busy)) it->peak = std::max(it->peak, busy);
    return *it;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<sim::LinkClassLoad>& classes = predictions[i].link_classes;
    for (const auto& u : predictions[i].utilization) {
      // A switch-to-switch class is a resource too (its busiest link): its row of links says more.
      const bool a_class = std::any_of(classes.begin(), classes.end(),
                                       [&](const sim::LinkClassLoad& c) { return c.name == u.resource; });
      if (!a_class) add(i, u.resource, u.busy, false);
    }
    for (const sim::LinkClassLoad& c : classes) {
      HeatRow& row = add(i, c.name, c.busiest, true);
      row.mean[i] = c.mean_busy;
      row.links[i] = c.links;
    }
  }
  // Busiest first; equal peaks keep first appearance (resources before links).
  std::stable_sort(rows.begin(), rows.end(),
                   [](const HeatRow& a, const HeatRow& b) { return a.peak > b.peak; });
  return rows;
}

// ---- The JSON island the charts are drawn from

void write_chart_data(std::ostream& out, const Sweep& sweep, const std::vector<Group>& groups,
                      const std::vector<Ideal>& ideals, const TimeUnit& unit) {
  int fewest = std::numeric_limits<int>::max();
  int most = 0;
  std::vector<int> worker_counts;
  for (const Result& r : sweep.predictions) {
    fewest = std::min(fewest, r.workers);
    most = std::max(most, r.workers);
    worker_counts.push_back(r.workers);
  }
  std::sort(worker_counts.begin(), worker_counts.end());
  worker_counts.erase(std::unique(worker_counts.begin(), worker_counts.end()), worker_counts.end());

  JsonWriter json(out, JsonWriter::Layout::OneLine);
  json.begin_object();
  json.key("scenario");
  json.string(sweep.scenario);
  json.key("workers");
  json.begin_array();
  for (int n : worker_counts) json.integer(n);
  json.end_array();
  // A wide range of worker counts (1 to 1,024) is unreadable on a linear axis.
  json.key("workers_log_scale");
  json.boolean(fewest >= 1 &&
               int64_t{most} >= 8 * int64_t{fewest});  // 64-bit: an empty sweep leaves fewest at INT_MAX
  json.key("time_unit");
  json.string(unit.name);
  json.key("time_per_s");
  json.number(unit.per_second);
  json.key("short_labels");
  json.boolean(short_labels(groups));
  std::size_t misfits = 0;
  for (const Result& r : sweep.predictions) misfits += fits(r) ? 0 : 1;
  json.key("misfits");
  json.integer(misfits);

  json.key("groups");
  json.begin_array();
  for (const Group& g : groups) {
    json.begin_object();
    json.key("label");
    json.string(g.shown);
    json.key("full");
    json.string(g.full());
    json.key("predictor");
    json.string(g.predictor);
    json.key("points");
    json.begin_array();
    for (std::size_t i : g.members) {
      const Result& r = sweep.predictions[i];
      json.begin_object();
      json.key("workers");
      json.integer(r.workers);
      json.key("throughput_samples_per_s");
      json.number(r.throughput);
      json.key("efficiency");
      json.number(r.efficiency);
      json.key("fits");
      json.boolean(fits(r));
      json.end_object();
    }
    json.end_array();
    json.end_object();
  }
  json.end_array();

  json.key("ideals");
  json.begin_array();
  for (const Ideal& ideal : ideals) {
    std::vector<int> counts;
    std::string label = "ideal";
    if (ideals.size() > 1) {
      label += " (";
      for (std::size_t k = 0; k < ideal.groups.size(); ++k)
        label += (k > 0 ? "; " : "") + groups[ideal.groups[k]].shown;
      label += ")";
    }
    for (std::size_t g : ideal.groups)
      for (std::size_t i : groups[g].members) counts.push_back(sweep.predictions[i].workers);
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    json.begin_object();
    json.key("label");
    json.string(label);
    json.key("first_group");
    json.integer(ideal.groups.front());
    json.key("single_worker_samples_per_s");
    json.number(ideal.rate);
    json.key("points");
    json.begin_array();
    for (int n : counts) {
      json.begin_object();
      json.key("workers");
      json.integer(n);
      json.key("throughput_samples_per_s");
      json.number(n * ideal.rate);
      json.end_object();
    }
    json.end_array();
    json.end_object();
  }
  json.end_array();

  std::vector<std::size_t> group_of(sweep.predictions.size(), 0);
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t i : groups[g].members) group_of[i] = g;
  json.key("predictions");
  json.begin_array();
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    const Result& r = sweep.predictions[i];
    json.begin_object();
    json.key("label");  // lines of the bar's label
    json.begin_array();
    json.string(workers_text(r.workers));
    if (short_labels(groups)) {
      json.string(groups[group_of[i]].shown);
    } else {
      json.string(predict::to_string(r.predictor));
      if (const std::string config = config_text(config_of(sweep, i)); !config.empty()) json.string(config);
    }
    if (!fits(r)) json.string("\u2717 does not fit");
    json.end_array();
    json.key("fits");
    json.boolean(fits(r));
    json.key("step_time_s");
    json.number(r.step_time);
    json.key("compute_s");
    json.number(r.breakdown.compute);
    json.key("communication_exposed_s");
    json.number(r.breakdown.communication_exposed);
    json.key("wait_s");
    json.number(r.breakdown.wait);
    json.end_object();
  }
  json.end_array();
  json.end_object();
}

std::string chart_data_text(const Sweep& sweep, const std::vector<Group>& groups,
                            const std::vector<Ideal>& ideals, const TimeUnit& unit) {
  std::ostringstream text;
  write_chart_data(text, sweep, groups, ideals, unit);
  return text.str();
}

/// JSON text made safe inside <script>: '<' only occurs inside JSON strings, where \u003c means
/// the same, so "</script>" in a scenario name cannot end the element.
std::string safe_json(const std::string& json) {
  std::string safe;
  for (char c : json) {
    if (c == '<') {
      safe += "\\u003c";
    } else {
      safe += c;
    }
  }
  while (!safe.empty() && safe.back() == '\n') safe.pop_back();
  return safe;
}

// ---- Page pieces

constexpr std::string_view kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:0 auto;padding:16px 24px;max-width:1400px}
h1{font-size:22px;margin:8px 0}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta,.note{color:#555}.note{font-size:13px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:16px}
.chart{position:relative;height:360px}.chart.wide{height:400px}
table{border-collapse:collapse;margin:6px 0;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 7px;vertical-align:top}th{background:#f4f4f4;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.heat{text-align:center;min-width:3.5em;font-variant-numeric:tabular-nums}td.na{color:#aaa;text-align:center}
table.heat th{font-size:11px;font-weight:normal;max-width:9em;overflow-wrap:anywhere}td.words{min-width:22em}
.scroll{overflow-x:auto}.bad{color:#b00020;font-weight:600}
h3{font-size:15px;margin:16px 0 6px}.answer .chosen{font-size:16px}
dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 14px;margin:6px 0}dl.facts dt{color:#555}
dl.facts dd{margin:0;overflow-wrap:anywhere}
.errors{color:#b00020;background:#fff0f0;border:1px solid #b00020;padding:8px;white-space:pre-wrap}
)css";

/// Runs before anything else: collects script errors, console errors, resources that failed to
/// load and, once the page has loaded, anything it fetched (there should be nothing: the page is
/// self-contained; body[data-resources] counts it), and shows them at the top of the page in
/// #stepcast-errors, so a broken chart says why instead of leaving a blank space.
constexpr std::string_view kErrorHook = R"js(
(function () {
  var errors = [];
  function show() {
    var el = document.getElementById('stepcast-errors');
    if (!el) return;
    el.textContent = errors.join('\n');
    el.hidden = errors.length === 0;
  }
  window.addEventListener('error', function (e) {
    var t = e.target;
    errors.push(t && t !== window && (t.src || t.href) ? 'could not load ' + (t.src || t.href) : String(e.message));
    show();
  }, true);
  window.addEventListener('unhandledrejection', function (e) { errors.push('unhandled rejection: ' + e.reason); show(); });
  var consoleError = console.error;
  console.error = function () {
    errors.push(Array.prototype.map.call(arguments, String).join(' '));
    show();
    return consoleError.apply(console, arguments);
  };
  window.stepcastShowErrors = show;
  // Everything is inline, so the page fetches nothing. Counted when loading is over, when the
  // resource timing list holds failed requests too.
  window.addEventListener('load', function () {
    var fetched = performance.getEntriesByType('resource').map(function (e) { return e.name; });
    document.body.dataset.resources = String(fetched.length);
    if (fetched.length > 0) console.error('the page fetched ' + fetched.join(', '));
  });
})();
)js";

/// Runs after the charts are drawn (stepcastFinish(charts), charts being [{canvas, chart}]): marks
/// on each canvas the number of datasets it drew (ideal lines apart) and of pixels it painted
/// (neither transparent nor white) and the share of its height the legend takes (%); counts the text boxes
/// (cells, headings, paragraphs, the answer's lines) whose text is wider than the box (body[data-overflow],
/// and the first few in body[data-overflowing]); then sets body[data-rendered="yes"] and the number of
/// charts. The browser test reads these back with --dump-dom.
constexpr std::string_view kFinish = R"js(
window.stepcastFinish = function (charts) {
  charts.forEach(function (c) {
    var ctx = c.canvas.getContext('2d');
    var px = ctx.getImageData(0, 0, c.canvas.width, c.canvas.height).data, painted = 0;
    for (var i = 0; i < px.length; i += 4) {
      if (px[i + 3] > 0 && (px[i] < 250 || px[i + 1] < 250 || px[i + 2] < 250)) painted++;
    }
    c.canvas.dataset.painted = String(painted);
    // How much of the canvas the legend takes (one of 30 long labels would take it all).
    var legend = c.chart.legend;
    c.canvas.dataset.legendShare = String(legend && legend.options.display !== false ? Math.round(100 * legend.height / c.chart.height) : 0);
    c.canvas.dataset.datasets = String(c.chart.data.datasets.filter(function (d) { return !d.stepcastIdeal && !d.stepcastLimit; }).length);
  });
  var over = [];
  document.querySelectorAll('td, th, p, h1, h2, h3, li, dt, dd').forEach(function (el) {
    if (el.scrollWidth > el.clientWidth + 1) over.push(el.tagName.toLowerCase() + ': ' + el.textContent.slice(0, 60));
  });
  document.body.dataset.overflow = String(over.length);
  document.body.dataset.overflowing = over.slice(0, 5).join(' | ');
  document.body.dataset.charts = String(charts.length);
  document.body.dataset.rendered = 'yes';
  window.stepcastShowErrors();
};
)js";

/// Draws the three charts from #stepcast-data, then marks the page: body[data-rendered="yes"],
/// the number of charts, and on each canvas the number of datasets it drew (ideal lines apart)
/// and of pixels it painted (neither transparent nor white), which the browser test reads back
/// with --dump-dom.
constexpr std::string_view kDraw = R"js(
(function () {
  'use strict';
  if (typeof Chart === 'undefined') throw new Error('Chart.js did not load');
  var data = JSON.parse(document.getElementById('stepcast-data').textContent);
  var palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.size = 12;
  function fmt(v, digits) { return v === null || v === undefined ? '-' : v.toFixed(digits); }
  function title(text) { return { display: true, text: text, font: { size: 14, weight: 'bold' } }; }
  function workersAxis() {
    return {
      type: data.workers_log_scale ? 'logarithmic' : 'linear',
      title: { display: true, text: data.workers_log_scale ? 'workers (log scale)' : 'workers' },
      afterBuildTicks: function (axis) { axis.ticks = data.workers.map(function (n) { return { value: n }; }); },
      ticks: { callback: function (v) { return String(v); } }
    };
  }
  // A point style per predictor, so that curves which coincide (fine and coarse often do) still
  // show both.
  var marks = { fine: 'circle', coarse: 'triangle', analytic: 'rectRot' };
  // A prediction that does not fit in GPU memory: a red cross, on every chart.
  var misfitColor = '#b00020';
  function curve(label, points, y, color, ideal, predictor) {
    var bad = function (p) { return p.fits === false; };
    return {
      label: label, stepcastIdeal: ideal,
      data: points.map(function (p) { return { x: p.workers, y: y(p) }; }),
      borderColor: color, backgroundColor: color, borderWidth: ideal ? 1.5 : 2,
      borderDash: ideal ? [6, 4] : [], tension: 0,
      pointRadius: points.map(function (p) { return ideal ? 0 : bad(p) ? 8 : 4; }),
      pointStyle: points.map(function (p) { return bad(p) ? 'crossRot' : marks[predictor] || 'circle'; }),
      pointBorderColor: points.map(function (p) { return bad(p) ? misfitColor : color; }),
      pointBorderWidth: points.map(function (p) { return bad(p) ? 3 : 1; })
    };
  }
  var charts = [];
  function draw(id, config) {
    var canvas = document.getElementById(id);
    if (!canvas) return;
    charts.push({ canvas: canvas, chart: new Chart(canvas, config) });
  }
  var ys = function (p) { return p.throughput_samples_per_s; };
  var throughput = data.groups.map(function (g, i) {
    return curve(g.label, g.points, ys, palette[i % palette.length], false, g.predictor);
  });
  // One ideal: grey; several: each in the colour of the first curve it belongs to.
  data.ideals.forEach(function (ideal) {
    var color = data.ideals.length > 1 ? palette[ideal.first_group % palette.length] : '#666';
    var label = ideal.label + ': N \u00d7 ' + fmt(ideal.single_worker_samples_per_s, 1) + ' samples/s';
    throughput.push(curve(label, ideal.points, ys, color, true));
  });
  // With many curves the legend shows short labels (the key table names them) and leaves the
  // ideal lines out (dashed, explained under the charts).
  var legend = {
    labels: {
      boxWidth: data.short_labels ? 10 : 40, font: { size: data.short_labels ? 11 : 12 },
      filter: function (item, chart) { return !(data.short_labels && chart.datasets[item.datasetIndex].stepcastIdeal); }
    }
  };
  var subtitle = {
    display: data.misfits > 0, color: misfitColor,
    text: '\u2717 (red cross): does not fit in GPU memory'
  };
  var lineOptions = function (yTitle, unit, digits) {
    return {
      parsing: true,
      interaction: { mode: 'nearest', intersect: false },
      scales: { x: workersAxis(), y: { beginAtZero: true, title: { display: true, text: yTitle } } },
      plugins: {
        legend: legend, subtitle: subtitle,
        tooltip: { callbacks: { label: function (c) { return c.dataset.label + ': ' + fmt(c.parsed.y, digits) + ' ' + unit; } } }
      }
    };
  };
  var options = lineOptions('throughput (samples/s)', 'samples/s', 1);
  options.plugins.title = title('Throughput against workers (samples/s, all workers)');
  draw('chart-throughput', { type: 'line', data: { datasets: throughput }, options: options });

  var ye = function (p) { return p.efficiency === null ? null : 100 * p.efficiency; };
  var efficiency = data.groups.map(function (g, i) {
    return curve(g.label, g.points, ye, palette[i % palette.length], false, g.predictor);
  });
  if (data.workers.length > 0) {
    efficiency.push(curve('ideal (100 %)', [{ workers: data.workers[0] }, { workers: data.workers[data.workers.length - 1] }],
                          function () { return 100; }, '#666', true));
  }
  options = lineOptions('efficiency (%)', '%', 1);
  options.scales.y.suggestedMax = 100;
  options.plugins.title = title('Scaling efficiency against workers (%, speed-up / workers)');
  draw('chart-efficiency', { type: 'line', data: { datasets: efficiency }, options: options });

  var unit = data.time_unit, scale = data.time_per_s;
  // A prediction that does not fit: its bars pale, outlined in red, and its label says so.
  function part(label, key, color) {
    return {
      label: label, backgroundColor: data.predictions.map(function (p) { return p.fits ? color : color + '55'; }),
      borderColor: data.predictions.map(function (p) { return p.fits ? color : misfitColor; }),
      borderWidth: data.predictions.map(function (p) { return p.fits ? 0 : 2; }),
      data: data.predictions.map(function (p) { return p[key] === null ? null : p[key] * scale; })
    };
  }
  draw('chart-breakdown', {
    type: 'bar',
    data: {
      labels: data.predictions.map(function (p) { return p.label; }),
      datasets: [part('compute', 'compute_s', '#4e79a7'), part('exposed communication', 'communication_exposed_s', '#e15759'),
                 part('wait (other workers, servers)', 'wait_s', '#f28e2b')]
    },
    options: {
      scales: { x: { stacked: true, title: { display: true, text: data.short_labels ? 'prediction (workers, curve: see the key)' : 'prediction (workers, predictor, configuration)' } },
                y: { stacked: true, beginAtZero: true, title: { display: true, text: 'time per step (' + unit + ')' } } },
      plugins: {
        subtitle: { display: subtitle.display, color: misfitColor, text: 'pale bars outlined in red (\u2717 in the label): do not fit in GPU memory' },
        title: title('Where the step time goes (' + unit + ' per step, mean over workers)'),
        tooltip: { callbacks: { label: function (c) { return c.dataset.label + ': ' + fmt(c.parsed.y, 3) + ' ' + unit; } } }
      }
    }
  });

  window.stepcastFinish(charts);
})();
)js";

class Page {
 public:
  explicit Page(std::ostream& out) : out_(out) {}
  Page(const Page&) = delete;
  Page& operator=(const Page&) = delete;
  ~Page() { flush(); }

  Page& raw(std::string_view html) {
    buf_.append(html);
    if (buf_.size() >= detail::kFlushBytes) flush();
    return *this;
  }
  Page& text(std::string_view text) {
    append_escaped(buf_, text);
    return *this;
  }
  template <typename... Args>
  Page& format(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(buf_), format, std::forward<Args>(args)...);
    return *this;
  }
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  std::ostream& out_;
  fmt::memory_buffer buf_;
};

/// A table row of already-escaped cells; `numeric` cells are right-aligned.
struct Cell {
  std::string html;
  bool numeric = true;
  bool sentence = false;  ///< a bottleneck: wide enough to read
};

void write_table(Page& page, const std::vector<std::string_view>& header,
                 const std::vector<std::vector<Cell>>& rows) {
  page.raw("<div class=\"scroll\"><table>\n<thead><tr>");
  for (std::string_view h : header) page.raw("<th>").text(h).raw("</th>");
  page.raw("</tr></thead>\n<tbody>\n");
  for (const auto& row : rows) {
    page.raw("<tr>");
    for (const Cell& c : row) {
      page.raw(c.numeric    ? "<td class=\"n\">"
               : c.sentence ? "<td class=\"words\">"
                            : "<td>")
          .raw(c.html)
          .raw("</td>");
    }
    page.raw("</tr>\n");
  }
  page.raw("</tbody></table></div>\n");
}

/// The first cells of every per-prediction table: workers, predictor, and the configuration when
/// the sweep has one.
std::vector<Cell> identity_cells(const Sweep& sweep, std::size_t i, bool with_config) {
  const Result& r = sweep.predictions[i];
  std::vector<Cell> cells{{fmt::format("{}", r.workers)}, {escaped(predict::to_string(r.predictor)), false}};
  if (with_config) cells.push_back({escaped(config_text(config_of(sweep, i))), false});
  return cells;
}

std::vector<std::string_view> identity_header(bool with_config) {
  std::vector<std::string_view> header{"workers", "predictor"};
  if (with_config) header.emplace_back("configuration");
  return header;
}

void write_predictions(Page& page, const Sweep& sweep, const TimeUnit& unit, bool with_config) {
  bool tokens = false, mfu = false;
  for (const Result& r : sweep.predictions) {
    tokens = tokens || r.tokens.tokens_per_s > 0;
    mfu = mfu || r.tokens.mfu >= 0;
  }
  const std::string step = fmt::format("step time ({})", unit.name);
  const std::string compute = fmt::format("compute ({})", unit.name);
  const std::string exposed = fmt::format("exposed communication ({})", unit.name);
  const std::string wait = fmt::format("wait ({})", unit.name);
  std::vector<std::string_view> header = identity_header(with_config);
  header.insert(header.end(), {step, "throughput (samples/s)"});
  if (tokens) header.insert(header.end(), {"tokens/s (all GPUs)", "tokens/s per GPU"});
  if (mfu) header.insert(header.end(), {"MFU (%)"});
  header.insert(header.end(), {"speed-up (\u00d7)", "efficiency (%)", compute, exposed, wait});
  header.emplace_back("bottleneck");

  std::vector<std::vector<Cell>> rows;
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    const Result& r = sweep.predictions[i];
    std::vector<Cell> row = identity_cells(sweep, i, with_config);
    row.push_back({fixed(r.step_time * unit.per_second, 3)});
    row.push_back({fixed(r.throughput, 1)});
    if (tokens) {
      row.push_back({fixed(r.tokens.tokens_per_s, 0)});
      row.push_back({fixed(r.tokens.tokens_per_s_per_worker, 0)});
    }
    if (mfu) row.push_back({r.tokens.mfu >= 0 ? fixed(100 * r.tokens.mfu, 1) : "&ndash;"});
    row.push_back({fixed(r.speedup, 2)});
    row.push_back({fixed(100 * r.efficiency, 1)});
    row.push_back({fixed(r.breakdown.compute * unit.per_second, 3)});
    row.push_back({fixed(r.breakdown.communication_exposed * unit.per_second, 3)});
    row.push_back({fixed(r.breakdown.wait * unit.per_second, 3)});
    row.push_back({escaped(r.bottleneck), false, true});
    rows.push_back(std::move(row));
  }
  page.raw("<section id=\"predictions\"><h2>Predictions</h2>\n");
  page.raw(
      "<p class=\"note\">Throughput: samples/s summed over workers. Speed-up: against one worker training "
      "alone "
      "(no communication); efficiency = speed-up / workers. Step-time parts are means over workers and "
      "measured steps and add up to the step time.</p>\n");
  write_table(page, header, rows);
  page.raw("</section>\n");
}

/// Colour of a busy fraction: white at 0 to dark red at 1.
std::string heat_style(double busy) {
  const double b = std::clamp(busy, 0.0, 1.0);
  return fmt::format("background:hsl(8,80%,{:.0f}%);color:{}", 98 - 58 * b, b >= 0.6 ? "#fff" : "#222");
}

void write_heat_map(Page& page, const Sweep& sweep, const std::vector<Group>& groups) {
  const std::vector<HeatRow> rows = heat_rows(sweep.predictions);
  page.raw("<section id=\"heatmap\"><h2>Busiest resources and links</h2>\n");
  if (rows.empty()) {
    page.raw("<p class=\"note\">No prediction reports resource or link use.</p>\n</section>\n");
    return;
  }
  const std::size_t shown = std::min(rows.size(), kMaxHeatRows);
  page.format(
      "<p class=\"note\">Busy fraction of each resource and link over the measured steps (%, 100 % = busy "
      "the "
      "whole time), one column per prediction; &ndash;: not reported by that prediction. Links are listed by "
      "class (the NICs, intra-node links, PCIe, each class of switch-to-switch link): the busiest link of "
      "the "
      "class, then the mean and the number of its links that carried bytes. The {} busiest of {} rows, by "
      "their peak over the sweep.</p>\n",
      shown, rows.size());
  page.raw("<div class=\"scroll\"><table class=\"heat\">\n<thead><tr><th>kind</th><th>resource or link</th>");
  std::vector<std::string> curve_of(sweep.predictions.size());
  for (const Group& g : groups)
    for (std::size_t i : g.members) curve_of[i] = g.shown;
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    const Result& r = sweep.predictions[i];
    page.raw("<th>").text(workers_text(r.workers)).raw("<br>");
    if (short_labels(groups)) {
      page.text(curve_of[i]);  // the key table names it
    } else {
      page.text(predict::to_string(r.predictor));
      if (const std::string config = config_text(config_of(sweep, i)); !config.empty())
        page.raw("<br>").text(config);
    }
    page.raw("</th>");
  }
  page.raw("</tr></thead>\n<tbody>\n");
  for (std::size_t k = 0; k < shown; ++k) {
    const HeatRow& row = rows[k];
    page.raw("<tr><td>").raw(row.link ? "links" : "resource").raw("</td><td>").text(row.name).raw("</td>");
    for (std::size_t i = 0; i < row.busy.size(); ++i) {
      const double busy = row.busy[i];
      if (!std::isfinite(busy)) {
        page.raw("<td class=\"na\">&ndash;</td>");
      } else if (row.link) {
        page.format(
            "<td class=\"heat\" style=\"{}\" title=\"busiest {:.1f} %, mean {:.1f} % over {} link{}\">{:.0f} "
            "%"
            "<br><small>mean {:.0f} %, {}</small></td>",
            heat_style(busy), 100 * busy, 100 * row.mean[i], row.links[i], row.links[i] == 1 ? "" : "s",
            100 * busy, 100 * row.mean[i], row.links[i]);
      } else {
        page.format("<td class=\"heat\" style=\"{}\" title=\"{:.1f} % busy\">{:.0f} %</td>", heat_style(busy),
                    100 * busy, 100 * busy);
      }
    }
    page.raw("</tr>\n");
  }
  page.raw("</tbody></table></div>\n</section>\n");
}

void write_spread(Page& page, const Sweep& sweep, const TimeUnit& unit, bool with_config) {
  std::vector<std::vector<Cell>> rows;
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    const predict::StepSpread& s = sweep.predictions[i].step_samples;
    if (s.samples == 0) continue;
    std::vector<Cell> row = identity_cells(sweep, i, with_config);
    row.push_back({fmt::format("{}", s.samples)});
    for (double v : {s.mean, s.p50, s.p95, s.min, s.max}) row.push_back({fixed(v * unit.per_second, 3)});
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return;
  std::vector<std::string> names;
  for (std::string_view stat : {"mean", "p50", "p95", "min", "max"})
    names.push_back(fmt::format("{} ({})", stat, unit.name));
  std::vector<std::string_view> header = identity_header(with_config);
  header.emplace_back("sample steps");
  header.insert(header.end(), names.begin(), names.end());
  page.raw("<section id=\"spread\"><h2>Per-step spread</h2>\n");
  page.raw(
      "<p class=\"note\">Predicted step time of each measured sample step, predicted on its own: the spread "
      "of "
      "the measured steps carried to the predicted configuration.</p>\n");
  write_table(page, header, rows);
  page.raw("</section>\n");
}

void write_memory(Page& page, const Sweep& sweep, bool with_config) {
  std::vector<std::vector<Cell>> rows;
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    const predict::MemoryCheck& m = sweep.predictions[i].memory;
    if (!m.known) continue;
    std::vector<Cell> row = identity_cells(sweep, i, with_config);
    const predict::Memory& p = m.per_worker;
    for (double v : {p.parameters, p.gradients, p.optimizer}) row.push_back({escaped(format_bytes(v))});
    row.push_back({m.activations_modelled ? escaped(format_bytes(p.activations)) : "not modelled"});
    row.push_back({escaped(format_bytes(p.buffers))});
    const std::string note = m.activations_modelled ? "" : " + activations";
    row.push_back({escaped(format_bytes(m.allocated())) + note});
    row.push_back({escaped(format_bytes(m.reserved())) + note});
    row.push_back({m.gpu_memory > 0 ? escaped(format_bytes(m.gpu_memory)) : "unknown"});
    std::string fits = "&ndash;";  // nothing to compare with
    if (m.gpu_memory > 0) {
      fits = m.fits() ? "yes"
                      : "<span class=\"bad\">no: " + escaped(format_bytes(m.reserved())) + " reserved &gt; " +
                            escaped(format_bytes(m.gpu_memory)) + "</span>";
    }
    row.push_back({fits, false});
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return;
  std::vector<std::string_view> header = identity_header(with_config);
  header.insert(header.end(), {"parameters", "gradients", "optimizer", "activations", "buffers", "allocated",
                               "reserved", "GPU memory", "fits"});
  page.raw("<section id=\"memory\"><h2>Memory per GPU</h2>\n");
  page.raw(
      "<p class=\"note\">Bytes one GPU holds at the peak of a step (kB, MB, GB: powers of 1000): the "
      "tensors (allocated), and what the GPU gives the job (reserved: the caching allocator's pool, the "
      "CUDA context and NCCL's buffers), which is what must fit.</p>\n");
  write_table(page, header, rows);
  page.raw("</section>\n");
}

void write_tokens(Page& page, const Sweep& sweep, bool with_config) {
  std::vector<std::vector<Cell>> rows;
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    const predict::TokenRates& t = sweep.predictions[i].tokens;
    if (!(t.tokens_per_s > 0)) continue;
    std::vector<Cell> row = identity_cells(sweep, i, with_config);
    row.push_back({fixed(t.tokens_per_s, 0)});
    row.push_back({fixed(t.tokens_per_s_per_worker, 0)});
    row.push_back({escaped(format_flops(t.model_flops_per_s_per_worker))});
    row.push_back({t.mfu >= 0 ? fixed(100 * t.mfu, 1) : "&ndash;"});
    row.push_back({t.mfu_6nd >= 0 ? fixed(100 * t.mfu_6nd, 1) : "&ndash;"});
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return;
  std::vector<std::string_view> header = identity_header(with_config);
  header.insert(header.end(), {"tokens/s (all GPUs)", "tokens/s per GPU", "model FLOP/s per GPU", "MFU (%)",
                               "MFU, 6N FLOPs per token (%)"});
  page.raw("<section id=\"tokens\"><h2>Tokens and model FLOPs utilization</h2>\n");
  page.raw(
      "<p class=\"note\">MFU: model FLOP/s (recomputation left out) against the GPU's peak FLOP/s; &ndash;: "
      "the "
      "peak is unknown.</p>\n");
  write_table(page, header, rows);
  page.raw("</section>\n");
}

/// A parallel layout's rows, as the terminal's table and its "exposed by dimension" line give
/// them; none for plain data parallelism (no layout), whose exposed time has no dimensions.
void write_layouts(Page& page, const Sweep& sweep, const TimeUnit& unit, bool with_config) {
  bool expert = false;
  for (const Result& r : sweep.predictions) {
    expert = expert ||
             (!r.layout.empty() && (r.layout.find(" ep") != std::string::npos || r.breakdown.expert > 0));
  }
  std::vector<std::vector<Cell>> rows;
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    const Result& r = sweep.predictions[i];
    if (r.layout.empty()) continue;
    std::vector<Cell> row = identity_cells(sweep, i, with_config);
    row.push_back({escaped(r.layout), false});
    row.push_back({fixed(100 * r.bubble_fraction, 1)});
    const predict::Breakdown& b = r.breakdown;
    for (double part : {b.tensor, b.context, b.pipeline, b.data})
      row.push_back({fixed(part * unit.per_second, 3)});
    if (expert) row.push_back({fixed(b.expert * unit.per_second, 3)});
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return;
  const std::string tensor = fmt::format("exposed tensor ({})", unit.name);
  const std::string context = fmt::format("exposed context ({})", unit.name);
  const std::string pipeline = fmt::format("exposed pipeline ({})", unit.name);
  const std::string data = fmt::format("exposed data ({})", unit.name);
  const std::string experts = fmt::format("exposed expert ({})", unit.name);
  std::vector<std::string_view> header = identity_header(with_config);
  header.insert(header.end(), {"layout", "bubble (%)", tensor, context, pipeline, data});
  if (expert) header.emplace_back(experts);
  page.raw("<section id=\"layouts\"><h2>Parallel layouts</h2>\n");
  page.raw(
      "<p class=\"note\">Layout: tp cp pp [vp] dp (and ep), the degrees of tensor, context, pipeline and "
      "data "
      "parallelism. Bubble: the share of the step the critical stage waits for another stage with nothing "
      "of its own in flight. Exposed: the exposed communication split by the dimension whose transfers the "
      "ranks waited for.</p>\n");
  write_table(page, header, rows);
  page.raw("</section>\n");
}

void write_inputs(Page& page, const Sweep& sweep) {
  page.raw("<section id=\"inputs\"><h2>Inputs (resolved scenario)</h2>\n");
  if (!sweep.topology.empty()) page.raw("<p>Topology: ").text(sweep.topology).raw("</p>\n");
  if (!sweep.compute_source.empty()) page.raw("<p>Compute time: ").text(sweep.compute_source).raw("</p>\n");
  if (sweep.inputs.empty()) {
    page.raw("<p class=\"note\">No inputs recorded.</p>\n</section>\n");
    return;
  }
  page.raw(
      "<p class=\"note\">Values as resolved, with their units; <code>cluster.workers</code> is the file's, "
      "each "
      "prediction has its own worker count.</p>\n");
  std::vector<std::vector<Cell>> rows;
  for (const Input& input : sweep.inputs)
    rows.push_back({{escaped(input.key), false}, {escaped(input.value), false}});
  write_table(page, {"key", "value"}, rows);
  page.raw("</section>\n");
}

/// The start of every page: the head (style, error hook), the heading and the line under it,
/// and the (hidden) error box.
void begin_page(Page& page, std::string_view title, std::string_view heading, std::string_view meta) {
  page.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
  page.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
  page.format("<meta name=\"generator\" content=\"stepcast {}\">\n", STEPCAST_VERSION);
  // An empty inline icon: without it a browser asks the server (or the disk) for favicon.ico.
  page.raw("<link rel=\"icon\" href=\"data:,\">\n");
  page.raw("<title>").text(title).raw("</title>\n");
  page.raw("<style>").raw(kStyle).raw("</style>\n");
  page.raw("<script>").raw(kErrorHook).raw("</script>\n</head>\n<body>\n");
  page.raw("<h1>").text(heading).raw("</h1>\n");
  page.raw("<p class=\"meta\">").raw(meta);
  page.format(
      " Written by stepcast {}; charts drawn by Chart.js {} (MIT licence), inlined: this page needs no "
      "network.</p>\n",
      STEPCAST_VERSION, detail::chartjs_version());
  page.raw("<pre id=\"stepcast-errors\" class=\"errors\" hidden></pre>\n");
}

/// The end of every page: the chart data island, then, when there are charts, Chart.js, the
/// finishing function and `draw`; without charts a line that marks the page rendered.
void end_page(Page& page, const std::string& data_json, std::string_view draw, bool charts) {
  page.raw("<script type=\"application/json\" id=\"stepcast-data\">").raw(data_json).raw("</script>\n");
  if (charts) {
    page.format("<script>/* Chart.js {}, from Debian's libjs-chart.js */\n", detail::chartjs_version());
    page.raw(detail::chartjs_source()).raw("\n</script>\n");
    page.raw("<script>").raw(kFinish).raw(draw).raw("</script>\n");
  } else {
    page.raw(
        "<script>document.body.dataset.rendered = 'yes'; document.body.dataset.charts = '0';</script>\n");
  }
  page.raw("</body>\n</html>\n");
}

/// With short curve labels, the table that names each: label, predictor, configuration.
void write_curve_key(Page& page, const std::vector<Group>& groups) {
  if (!short_labels(groups)) return;
  std::vector<std::vector<Cell>> rows;
  for (const Group& g : groups)
    rows.push_back({{escaped(g.shown), false}, {escaped(g.predictor), false}, {escaped(g.config), false}});
  page.raw("<section id=\"key\"><h2>Curve key</h2>\n");
  page.format("<p class=\"note\">{} curves: the charts name them by these short labels.</p>\n",
              groups.size());
  write_table(page, {"curve", "predictor", "configuration"}, rows);
  page.raw("</section>\n");
}

/// The sweep page; `lead`, when given, writes the answer that comes first, under the heading.
void write_sweep_page(std::ostream& out, const Sweep& sweep, std::string_view title, std::string_view heading,
                      const std::function<void(Page&)>& lead) {
  const std::vector<Group> groups = groups_of(sweep);
  const std::vector<Ideal> ideals = ideals_of(sweep, groups);
  const TimeUnit unit = time_unit_for(sweep.predictions);
  const bool with_config =
      std::any_of(sweep.configs.begin(), sweep.configs.end(), [](const Config& c) { return !c.empty(); });

  Page page(out);
  std::string meta = fmt::format("{} prediction{} in {} curve{} (predictor{}).", sweep.predictions.size(),
                                 sweep.predictions.size() == 1 ? "" : "s", groups.size(),
                                 groups.size() == 1 ? "" : "s", with_config ? ", swept configuration" : "");
  begin_page(page, title, heading, meta);
  if (lead) lead(page);

  if (sweep.predictions.empty()) {
    page.raw("<p>The sweep has no predictions.</p>\n");
  } else {
    page.raw("<section id=\"scaling\"><h2>Scaling</h2>\n<div class=\"charts\">\n");
    page.raw(
        "<div class=\"chart\"><canvas id=\"chart-throughput\" role=\"img\" aria-label=\"throughput in "
        "samples/s against workers, with the ideal line\"></canvas></div>\n");
    page.raw(
        "<div class=\"chart\"><canvas id=\"chart-efficiency\" role=\"img\" aria-label=\"scaling efficiency "
        "in % against workers\"></canvas></div>\n</div>\n");
    const std::vector<std::string> keys = swept_keys(sweep);
    const std::string legend_keys =
        keys.empty() || short_labels(groups)
            ? std::string()
            : fmt::format(" (the legend gives the predictor and the value{} of {})", keys.size() > 1 ? "s" : "",
                          escaped(fmt::format("{}", fmt::join(keys, ", "))));
    page.raw(fmt::format(
        "<p class=\"note\">One curve per predictor and swept configuration{}. Ideal (dashed): N workers "
        "&times; the rate of one worker training alone (throughput / speed-up), efficiency 100 %. A red "
        "&#x2717;: the prediction does not fit in GPU memory.</p>\n</section>\n",
        legend_keys));
    write_curve_key(page, groups);
    page.raw("<section id=\"breakdown\"><h2>Where the step time goes</h2>\n");
    page.raw(
        "<div class=\"chart wide\"><canvas id=\"chart-breakdown\" role=\"img\" aria-label=\"step time split "
        "into compute, exposed communication and wait, per prediction\"></canvas></div>\n");
    page.raw(
        "<p class=\"note\">Compute: ops running. Exposed communication: waiting for a transfer or collective "
        "with nothing running. Wait: waiting for other workers or a server (barrier, apply). Pale bars "
        "outlined "
        "in red: the prediction does not fit in GPU memory.</p>\n</section>\n");
    write_predictions(page, sweep, unit, with_config);
    write_layouts(page, sweep, unit, with_config);
    write_heat_map(page, sweep, groups);
    write_spread(page, sweep, unit, with_config);
    write_memory(page, sweep, with_config);
    write_tokens(page, sweep, with_config);
  }
  write_inputs(page, sweep);
  end_page(page, safe_json(chart_data_text(sweep, groups, ideals, unit)), kDraw, !sweep.predictions.empty());
}

// ---- advise and plan: pages that lead with the answer

/// Memory per GPU, what must fit (reserved), against the GPU's: "63.1 GB of 80.0 GB", in red with
/// "does not fit" when over; an en dash when unknown.
std::string memory_vs_limit(const predict::MemoryCheck& m) {
  if (!m.known) return "&ndash;";
  std::string text = escaped(format_bytes(m.reserved()));
  if (!(m.gpu_memory > 0)) return text;
  text += " of " + escaped(format_bytes(m.gpu_memory));
  return m.fits() ? text : "<span class=\"bad\">" + text + ": does not fit</span>";
}

/// One "name: value" line of the answer's list; `html` is already escaped.
void answer_item(Page& page, std::string_view name, const std::string& html) {
  page.raw("<dt>").text(name).raw("</dt><dd>").raw(html).raw("</dd>\n");
}

/// The money or the steps up the --vary lists `advice` minimised, for one point.
std::string advice_cost(const Advice& a, const GridPoint& p) {
  if (a.minimised.starts_with("cost") && p.result.cost.gpu_hour > 0)
    return escaped(format_number(p.money) + (a.currency.empty() ? "" : " " + a.currency));
  return fmt::format("{}", p.cost);
}

void write_advice_lead(Page& page, const Advice& a) {
  std::size_t meet = 0, over = 0;
  for (const GridPoint& p : a.grid) {
    meet += p.meets ? 1 : 0;
    over += p.result.memory.fits() ? 0 : 1;
  }
  page.raw("<section id=\"answer\" class=\"answer\"><h2>Answer</h2>\n");
  page.raw("<p class=\"target\">Target: <b>").text(a.target).raw("</b>. ");
  page.format("{} configuration{} tried: {} meet{} it", a.grid.size(), a.grid.size() == 1 ? "" : "s", meet,
              meet == 1 ? "s" : "");
  if (over > 0)
    page.format(", <span class=\"bad\">{} do{} not fit in GPU memory</span> (never an answer)", over,
                over == 1 ? "es" : "");
  page.raw(". Cheapest means least ").text(a.minimised).raw(".</p>\n");

  std::optional<std::size_t> chosen;
  if (!a.cheapest.empty()) {
    chosen = a.cheapest.front();
    page.raw("<p class=\"chosen\">Chosen: <b>").text(config_label(a.grid[*chosen].config));
    page.raw("</b>, the cheapest that meets the target");
    if (a.cheapest.size() > 1) page.format(" (tied with {} more)", a.cheapest.size() - 1);
    page.raw(".</p>\n");
  } else if (a.best_point) {
    chosen = *a.best_point;
    page.raw(
            "<p class=\"chosen\"><span class=\"bad\">No configuration meets the target.</span> The best that "
            "fits: <b>")
        .text(config_label(a.grid[*chosen].config))
        .raw("</b>.</p>\n");
  } else {
    page.raw("<p class=\"chosen\"><span class=\"bad\">No configuration fits in GPU memory.</span></p>\n");
  }
  if (chosen) {
    const Result& r = a.grid[*chosen].result;
    page.raw("<dl class=\"facts\">\n");
    answer_item(page, "throughput", escaped(format_number(r.throughput)) + " samples/s");
    answer_item(page, "efficiency", escaped(format_percent(r.efficiency)));
    answer_item(page, "step time", escaped(format_duration(r.step_time)));
    if (r.tokens.tokens_per_s > 0)
      answer_item(page, "tokens/s per GPU", escaped(format_number(r.tokens.tokens_per_s_per_worker)));
    if (r.tokens.mfu >= 0) answer_item(page, "MFU", escaped(format_percent(r.tokens.mfu)));
    answer_item(page, "memory per GPU", memory_vs_limit(r.memory));
    answer_item(page, "bottleneck", escaped(r.bottleneck));
    page.raw("</dl>\n");
  }
  if (a.best_changes.empty()) {
    page.raw(
        "<p class=\"change\">Best single change: none of the varied values that fit in GPU memory raises the "
        "throughput of the scenario as given.</p>\n");
  } else {
    const Change& c = a.best_changes.front();
    page.raw("<p class=\"change\">Best single change: <b>")
        .text(c.key)
        .raw("</b> from ")
        .text(c.from)
        .raw(" to <b>");
    page.text(c.to).raw("</b>: ").text(fmt::format("{}{}", c.gain > 0 ? "+" : "", format_number(c.gain)));
    page.raw(" samples/s (")
        .text(format_signed_percent(c.gain_fraction))
        .raw(") over the scenario as given (");
    page.text(format_number(a.base.throughput)).raw(" samples/s).</p>\n");
  }

  // Runner-ups: what meets first, then the cheapest, then the fastest; the chosen one on top.
  std::vector<std::size_t> order(a.grid.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const bool money = a.minimised.starts_with("cost");
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    const GridPoint &p = a.grid[x], &q = a.grid[y];
    if (chosen && (x == *chosen) != (y == *chosen)) return x == *chosen;
    if (p.meets != q.meets) return p.meets;
    if (p.result.memory.fits() != q.result.memory.fits()) return p.result.memory.fits();
    if (money && p.money != q.money) return p.money < q.money;
    if (p.cost != q.cost) return p.cost < q.cost;
    return p.result.throughput > q.result.throughput;
  });
  constexpr std::size_t kRunnerUps = 10;
  std::vector<std::vector<Cell>> rows;
  for (std::size_t k = 0; k < std::min(order.size(), kRunnerUps); ++k) {
    const GridPoint& p = a.grid[order[k]];
    const bool is_chosen = chosen && order[k] == *chosen;
    rows.push_back({{fmt::format("{}", k + 1)},
                    {escaped(config_label(p.config)) + (is_chosen ? " <b>(chosen)</b>" : ""), false},
                    {p.meets ? "yes" : "no", false},
                    {p.result.memory.fits() ? "yes" : "<span class=\"bad\">no</span>", false},
                    {advice_cost(a, p)},
                    {fixed(p.result.throughput, 1)},
                    {fixed(100 * p.result.efficiency, 1)},
                    {escaped(format_duration(p.result.step_time))},
                    {memory_vs_limit(p.result.memory), false},
                    {escaped(p.result.bottleneck), false, true}});
  }
  page.format("<h3>Runner-ups: {} of {}</h3>\n", rows.size(), a.grid.size());
  write_table(page,
              {"rank", "configuration", "meets", "fits", money ? "cost" : "steps up the lists",
               "throughput (samples/s)", "efficiency (%)", "step time", "memory per GPU", "bottleneck"},
              rows);
  page.raw("</section>\n");
}

// ---- plan

/// "256 GPUs, L3": a ranked layout's short label on the charts (the runner-ups table names it).
std::string plan_label(int gpus, std::size_t rank) { return fmt::format("{}\u00b7L{}", gpus, rank + 1); }

std::string rank_words_html(PlanRank rank, bool job) {
  switch (rank) {
    case PlanRank::TokensPerGpu:
      return "tokens/s per GPU (most first)";
    case PlanRank::Time:
      return "time to train (least first)";
    case PlanRank::Cost:
      return job ? "cost to train (least first)" : "cost per million tokens (least first)";
  }
  return "?";
}

std::string share_cell(double part, double step) {
  return step > 0 && std::isfinite(part) ? fixed(100 * part / step, 2) : "&ndash;";
}

/// The chart data of a plan: one bar per ranked layout of every count, and per count its closest
/// miss (no prediction: only its memory, marked as not fitting).
void write_plan_chart_data(std::ostream& out, const Plan& plan) {
  JsonWriter json(out, JsonWriter::Layout::OneLine);
  json.begin_object();
  json.key("scenario");
  json.string(plan.scenario);
  json.key("bars");
  json.begin_array();
  for (const PlanCount& c : plan.counts) {
    for (std::size_t i = 0; i < c.top.size(); ++i) {
      const predict::Result& f = c.top[i].fine;
      json.begin_object();
      json.key("label");
      json.string(plan_label(c.gpus, i));
      json.key("layout");
      json.string(c.top[i].label);
      json.key("fits");
      json.boolean(f.memory.fits());
      json.key("tokens_per_gpu");
      json.number(f.tokens.tokens_per_s_per_worker);
      json.key("coarse_tokens_per_gpu");
      json.number(c.top[i].coarse.tokens.tokens_per_s_per_worker);
      json.key("mfu_percent");
      if (f.tokens.mfu >= 0) {
        json.number(100 * f.tokens.mfu);
      } else {
        json.null();
      }
      json.key("memory_gb");
      if (f.memory.known) {
        json.number(f.memory.reserved() / 1e9);
      } else {
        json.null();
      }
      json.key("limit_gb");
      if (f.memory.gpu_memory > 0) {
        json.number(f.memory.gpu_memory / 1e9);
      } else {
        json.null();
      }
      json.end_object();
    }
    if (c.closest_miss) {
      const PlanMiss& m = *c.closest_miss;
      json.begin_object();
      json.key("label");
      json.string(fmt::format("{}\u00b7miss", c.gpus));
      json.key("layout");
      json.string(m.label);
      json.key("fits");
      json.boolean(false);
      for (const char* key : {"tokens_per_gpu", "coarse_tokens_per_gpu", "mfu_percent"}) {
        json.key(key);
        json.null();
      }
      json.key("memory_gb");
      json.number(m.memory.reserved() / 1e9);
      json.key("limit_gb");
      json.number(m.memory.gpu_memory / 1e9);
      json.end_object();
    }
  }
  json.end_array();
  json.end_object();
}

std::string plan_chart_json(const Plan& plan) {
  std::ostringstream text;
  write_plan_chart_data(text, plan);
  return text.str();
}

/// Draws the plan's three bar charts from #stepcast-data: tokens/s per GPU (fine, with coarse's
/// as thin bars), MFU, memory per GPU with the GPU's limit as a line. A layout that does not fit
/// (a count's closest miss) has a pale bar outlined in red, a "✗" in its label, and no tokens or
/// MFU (it cannot run).
constexpr std::string_view kDrawPlan = R"js(
(function () {
  'use strict';
  if (typeof Chart === 'undefined') throw new Error('Chart.js did not load');
  var data = JSON.parse(document.getElementById('stepcast-data').textContent);
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.size = 12;
  var misfit = '#b00020';
  function fmt(v, digits) { return v === null || v === undefined ? '-' : v.toFixed(digits); }
  function title(text) { return { display: true, text: text, font: { size: 14, weight: 'bold' } }; }
  var labels = data.bars.map(function (b) { return b.fits ? b.label : ['\u2717 ' + b.label, 'does not fit']; });
  var anyMiss = data.bars.some(function (b) { return !b.fits; });
  var subtitle = { display: anyMiss, color: misfit, text: '\u2717 pale bar outlined in red: does not fit in GPU memory (not predicted)' };
  function bars(label, key, color, extra) {
    var d = {
      label: label,
      data: data.bars.map(function (b) { return b[key]; }),
      backgroundColor: data.bars.map(function (b) { return b.fits ? color : color + '55'; }),
      borderColor: data.bars.map(function (b) { return b.fits ? color : misfit; }),
      borderWidth: data.bars.map(function (b) { return b.fits ? 0 : 2; })
    };
    for (var k in extra) d[k] = extra[k];
    return d;
  }
  function options(yTitle, chartTitle, unit, digits) {
    return {
      scales: { x: { title: { display: true, text: 'layout (GPUs\u00b7rank; the runner-ups tables name them)' } },
                y: { beginAtZero: true, title: { display: true, text: yTitle } } },
      plugins: {
        title: title(chartTitle), subtitle: subtitle,
        tooltip: { callbacks: {
          title: function (items) { var b = data.bars[items[0].dataIndex]; return b.label + ': ' + b.layout; },
          label: function (c) { return c.dataset.label + ': ' + fmt(c.parsed.y, digits) + ' ' + unit; } } }
      }
    };
  }
  var charts = [];
  function draw(id, config) {
    var canvas = document.getElementById(id);
    if (!canvas) return;
    charts.push({ canvas: canvas, chart: new Chart(canvas, config) });
  }
  draw('chart-plan-tokens', { type: 'bar', data: { labels: labels, datasets: [
      bars('fine', 'tokens_per_gpu', '#1f77b4', {}),
      bars('coarse', 'coarse_tokens_per_gpu', '#aec7e8', {})] },
    options: options('tokens/s per GPU', 'Tokens/s per GPU per ranked layout (fine, and coarse)', 'tokens/s', 0) });
  draw('chart-plan-mfu', { type: 'bar', data: { labels: labels, datasets: [bars('MFU (fine)', 'mfu_percent', '#2ca02c', {})] },
    options: options('MFU (%)', 'Model FLOPs utilization per ranked layout (%)', '%', 1) });
  var memory = options('GB per GPU (reserved)', 'Memory per GPU against the GPU\'s (GB, reserved)', 'GB', 1);
  draw('chart-plan-memory', { type: 'bar', data: { labels: labels, datasets: [
      bars('memory per GPU', 'memory_gb', '#9467bd', {}),
      { type: 'line', label: 'GPU memory (the limit)', stepcastLimit: true, data: data.bars.map(function (b) { return b.limit_gb; }),
        borderColor: misfit, backgroundColor: misfit, borderDash: [6, 4], borderWidth: 2, pointRadius: 0, stepped: 'middle' }] },
    options: memory });
  window.stepcastFinish(charts);
})();
)js";

void write_plan_lead(Page& page, const Plan& plan) {
  page.raw("<section id=\"answer\" class=\"answer\"><h2>Answer</h2>\n");
  const bool job = plan.best_count && plan.counts[*plan.best_count].top.front().fine.job.time > 0;
  page.raw("<p class=\"target\">Ranked by <b>").text(rank_words_html(plan.rank_by, job)).raw("</b>");
  page.format(", the top {} by coarse re-predicted by fine at each of {} GPU count{}.</p>\n", plan.top_k,
              plan.counts.size(), plan.counts.size() == 1 ? "" : "s");
  if (!plan.best_count) {
    page.raw(
        "<p class=\"chosen\"><span class=\"bad\">No layout is valid and fits at any GPU count.</span></p>\n");
    page.raw("</section>\n");
    return;
  }
  const PlanCount& c = plan.counts[*plan.best_count];
  const PlanRow& best = c.top.front();
  const predict::Result& f = best.fine;
  page.format("<p class=\"chosen\">Best layout{}: <b>", plan.counts.size() > 1 ? " of all counts" : "");
  page.text(best.label).format("</b> on {} GPUs ({}).</p>\n", c.gpus, escaped(plan_label(c.gpus, 0)));
  page.raw("<dl class=\"facts\">\n");
  answer_item(page, "step time", escaped(format_duration(f.step_time)));
  answer_item(page, "tokens/s per GPU",
              escaped(format_number(f.tokens.tokens_per_s_per_worker)) +
                  " (coarse: " + escaped(format_number(best.coarse.tokens.tokens_per_s_per_worker)) + ")");
  answer_item(page, "MFU", f.tokens.mfu >= 0 ? escaped(format_percent(f.tokens.mfu)) : "&ndash;");
  answer_item(page, "memory per GPU", memory_vs_limit(f.memory));
  answer_item(page, "bubble", escaped(format_percent(f.bubble_fraction)));
  const predict::Breakdown& b = f.breakdown;
  answer_item(page, "exposed communication",
              fmt::format("tensor {} %, context {} %, pipeline {} %, data {} % of the step ({} in all)",
                          share_cell(b.tensor, f.step_time), share_cell(b.context, f.step_time),
                          share_cell(b.pipeline, f.step_time), share_cell(b.data, f.step_time),
                          escaped(format_duration(b.communication_exposed))));
  if (f.job.time > 0) answer_item(page, "time to train", escaped(detail::format_span(f.job.time)));
  if (f.cost.gpu_hour > 0) {
    answer_item(page, f.job.time > 0 ? "cost to train" : "cost per million tokens",
                escaped(detail::format_money(f.job.time > 0 ? f.cost.job : f.cost.per_million_tokens,
                                             f.cost.currency)));
  }
  answer_item(page, "bottleneck", escaped(f.bottleneck));
  answer_item(page, "its settings", escaped(config_label(best.config)));
  page.raw("</dl>\n");
  if (plan.counts.size() > 1) {
    std::vector<std::vector<Cell>> rows;
    for (const PlanCount& k : plan.counts) {
      if (k.top.empty()) {
        rows.push_back({{fmt::format("{}", k.gpus)},
                        {"<span class=\"bad\">no layout fits</span>", false},
                        {"&ndash;"},
                        {"&ndash;"},
                        {"&ndash;"}});
        continue;
      }
      const predict::Result& r = k.top.front().fine;
      rows.push_back({{fmt::format("{}", k.gpus)},
                      {escaped(k.top.front().label), false},
                      {fixed(r.tokens.tokens_per_s_per_worker, 0)},
                      {r.tokens.mfu >= 0 ? fixed(100 * r.tokens.mfu, 1) : "&ndash;"},
                      {memory_vs_limit(r.memory), false}});
    }
    page.raw("<h3>Best layout per GPU count</h3>\n");
    write_table(page, {"GPUs", "best layout", "tokens/s per GPU", "MFU (%)", "memory per GPU"}, rows);
  }
  page.raw("</section>\n");
}

void write_plan_count(Page& page, const PlanCount& c) {
  page.format("<section id=\"gpus-{}\"><h2>{} GPUs</h2>\n", c.gpus, c.gpus);
  std::string by_key;
  for (const auto& [key, n] : c.rejected.invalid_by_key)
    by_key += fmt::format("{}{} {}", by_key.empty() ? "" : ", ", escaped(key), n);
  page.format(
      "<p class=\"counts\">{} layouts considered: {} fit (predicted by coarse); rejected: {} invalid{}, "
      "<span class=\"bad\">{} do not fit in GPU memory</span>{}.</p>\n",
      c.considered, c.fitting, c.rejected.invalid,
      by_key.empty() ? "" : " (by the rule's key: " + by_key + ")", c.rejected.no_fit,
      c.rejected.pruned > 0 ? fmt::format(", {} pruned (cannot reach the top)", c.rejected.pruned) : "");
  if (c.closest_miss) {
    const PlanMiss& m = *c.closest_miss;
    page.raw("<p class=\"counts\">Closest miss (")
        .text(fmt::format("{}\u00b7miss", c.gpus))
        .raw(" on the charts): ");
    page.text(m.label).raw(" needs ").text(format_bytes(m.memory.reserved())).raw(" per GPU, ");
    page.text(format_bytes(m.memory.reserved() - m.memory.gpu_memory)).raw(" more than the ");
    page.text(format_bytes(m.memory.gpu_memory)).raw(".</p>\n");
  }
  if (c.top.empty()) {
    page.format("<p class=\"bad\">No layout is valid and fits at {} GPUs.</p>\n</section>\n", c.gpus);
    return;
  }
  std::vector<std::vector<Cell>> rows;
  for (std::size_t i = 0; i < c.top.size(); ++i) {
    const PlanRow& r = c.top[i];
    const predict::Result& f = r.fine;
    const predict::Breakdown& b = f.breakdown;
    rows.push_back({{fmt::format("{}", i + 1)},
                    {escaped(plan_label(c.gpus, i)), false},
                    {escaped(r.label), false, true},
                    {escaped(format_duration(f.step_time))},
                    {fixed(f.tokens.tokens_per_s_per_worker, 0)},
                    {fixed(r.coarse.tokens.tokens_per_s_per_worker, 0)},
                    {fmt::format("{}", r.coarse_rank + 1)},
                    {f.tokens.mfu >= 0 ? fixed(100 * f.tokens.mfu, 1) : "&ndash;"},
                    {memory_vs_limit(f.memory)},
                    {fixed(100 * f.bubble_fraction, 1)},
                    {fmt::format("{} / {} / {} / {}", share_cell(b.tensor, f.step_time),
                                 share_cell(b.context, f.step_time), share_cell(b.pipeline, f.step_time),
                                 share_cell(b.data, f.step_time))},
                    {escaped(f.bottleneck), false, true}});
  }
  page.format("<h3>Runner-ups: the top {} by coarse, ranked by fine</h3>\n", c.top.size());
  write_table(page,
              {"rank", "chart label", "layout", "step time", "tokens/s per GPU (fine)",
               "tokens/s per GPU (coarse)", "coarse's rank", "MFU (%)", "memory per GPU", "bubble (%)",
               "exposed tp / cp / pp / dp (% of step)", "bottleneck"},
              rows);
  if (c.orders_agree()) {
    page.format("<p class=\"note\">Coarse and fine rank these {} layouts in the same order.</p>\n",
                c.top.size());
  } else {
    page.format(
        "<p class=\"note bad\">Coarse and fine rank these {} layouts differently (coarse's rank column): the "
        "order is fine's.</p>\n",
        c.top.size());
  }
  page.raw("</section>\n");
}

/// The best layout's links by class: how many carried bytes, the busiest and the mean busy
/// fraction, bytes.
void write_plan_links(Page& page, const Plan& plan) {
  if (!plan.best_count) return;
  const PlanCount& c = plan.counts[*plan.best_count];
  const predict::Result& f = c.top.front().fine;
  page.raw("<section id=\"links\"><h2>Links of the best layout, by class</h2>\n");
  if (f.link_classes.empty()) {
    page.raw("<p class=\"note\">The prediction reports no link use.</p>\n</section>\n");
    return;
  }
  page.raw(
      "<p class=\"note\">Every link direction that carried bytes, grouped by class rather than one row per "
      "link.</p>\n");
  std::vector<std::vector<Cell>> rows;
  for (const sim::LinkClassLoad& k : f.link_classes)
    rows.push_back({{escaped(k.name), false},
                    {fmt::format("{}", k.links)},
                    {fixed(100 * k.busiest, 1)},
                    {fixed(100 * k.mean_busy, 1)},
                    {escaped(format_bytes(k.bytes))}});
  write_table(page, {"class", "links", "busiest (%)", "mean busy (%)", "bytes (measured steps)"}, rows);
  page.raw("</section>\n");
}

}  // namespace

void write_html_report(std::ostream& out, const Sweep& sweep) {
  const std::string name = sweep.scenario.empty() ? std::string("(unnamed scenario)") : sweep.scenario;
  write_sweep_page(out, sweep, "stepcast: " + name, "stepcast prediction: " + name, nullptr);
}

void write_advice_html(std::ostream& out, const Advice& advice) {
  Sweep grid;
  grid.scenario = advice.scenario;
  for (const GridPoint& p : advice.grid) {
    grid.predictions.push_back(p.result);
    grid.configs.push_back(p.config);
  }
  const std::string name = advice.scenario.empty() ? std::string("(unnamed scenario)") : advice.scenario;
  write_sweep_page(out, grid, "stepcast advise: " + name, "stepcast advise: " + name,
                   [&](Page& page) { write_advice_lead(page, advice); });
}

void write_plan_html(std::ostream& out, const Plan& plan) {
  const std::string name = plan.scenario.empty() ? std::string("(unnamed scenario)") : plan.scenario;
  Page page(out);
  std::size_t ranked = 0;
  for (const PlanCount& c : plan.counts) ranked += c.top.size();
  begin_page(page, "stepcast plan: " + name, "stepcast plan: " + name,
             fmt::format("{} GPU count{}, {} ranked layout{}.", plan.counts.size(),
                         plan.counts.size() == 1 ? "" : "s", ranked, ranked == 1 ? "" : "s"));
  write_plan_lead(page, plan);
  const bool charts = ranked > 0;
  if (charts) {
    page.raw("<section id=\"charts\"><h2>Ranked layouts</h2>\n");
    page.raw(
        "<div class=\"chart wide\"><canvas id=\"chart-plan-tokens\" role=\"img\" aria-label=\"tokens/s per "
        "GPU "
        "per ranked layout\"></canvas></div>\n<div class=\"charts\">\n");
    page.raw(
        "<div class=\"chart\"><canvas id=\"chart-plan-mfu\" role=\"img\" aria-label=\"MFU per ranked "
        "layout\"></canvas></div>\n");
    page.raw(
        "<div class=\"chart\"><canvas id=\"chart-plan-memory\" role=\"img\" aria-label=\"memory per GPU per "
        "ranked layout against the GPU's memory\"></canvas></div>\n</div>\n");
    const int first = plan.counts.front().gpus;
    page.format(
        "<p class=\"note\">Bars are labelled GPUs&middot;rank ({}&middot;L1 is the best at {} GPUs); the "
        "runner-ups tables give each layout. Memory is what the GPU must give the job (reserved); the dashed "
        "red line is the GPU's memory. A count's closest miss (&#x2717;, pale, outlined in red) does not "
        "fit: "
        "it has memory but no prediction. Layouts that do not fit are never ranked.</p>\n</section>\n", first, first);
  }
  for (const PlanCount& c : plan.counts) write_plan_count(page, c);
  write_plan_links(page, plan);
  page.raw("<section id=\"inputs\"><h2>Search</h2>\n");
  if (!plan.compute_source.empty()) page.raw("<p>Compute time: ").text(plan.compute_source).raw("</p>\n");
  page.raw("<p>Searched: ").text(fmt::format("{}", fmt::join(plan.searched, ", "))).raw("</p>\n");
  if (!plan.held.empty())
    page.raw("<p>Held at the scenario's value: ")
        .text(fmt::format("{}", fmt::join(plan.held, ", ")))
        .raw("</p>\n");
  page.raw("</section>\n");
  end_page(page, safe_json(plan_chart_json(plan)), kDrawPlan, charts);
}

}  // namespace stepcast::report
