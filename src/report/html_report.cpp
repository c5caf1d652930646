// write_html_report: the sweep as one self-contained HTML page. The tables are written here as
// HTML; the charts are drawn in the browser by the inlined Chart.js from a JSON island
// (<script type="application/json">) written with the report's one JSON writer.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/chartjs.hpp"
#include "report/json_text.hpp"
#include "stepcast/report/html.hpp"
#include "stepcast/units.hpp"
#include "stepcast/version.hpp"

namespace stepcast::report {
namespace {

using detail::JsonWriter;
using predict::Result;

/// The heat map shows this many rows at most, the busiest first; the rest are counted.
constexpr std::size_t kMaxHeatRows = 24;

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
  [[nodiscard]] std::string label() const { return config.empty() ? predictor : predictor + ", " + config; }
};

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
  return groups;
}

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

/// One row of the heat map: a resource (Result::utilization) or a link (Result::links), with its
/// busy fraction per prediction (NaN where that prediction does not report it).
struct HeatRow {
  std::string name;
  bool link = false;
  std::vector<double> busy;
  double peak = 0;
};

std::vector<HeatRow> heat_rows(const std::vector<Result>& predictions) {
  std::vector<HeatRow> rows;
  auto add = [&](std::size_t column, const std::string& name, double busy, bool link) {
    auto it = std::find_if(rows.begin(), rows.end(),
                           [&](const HeatRow& row) { return row.link == link && row.name == name; });
    if (it == rows.end()) {
      rows.push_back({name, link, std::vector<double>(predictions.size(), std::nan("")), 0});
      it = std::prev(rows.end());
    }
    it->busy[column] = busy;
    if (std::isfinite(busy)) it->peak = std::max(it->peak, busy);
  };
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    for (const auto& u : predictions[i].utilization) add(i, u.resource, u.busy, false);
    for (const auto& l : predictions[i].links) add(i, l.name, l.busy, true);
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

  json.key("groups");
  json.begin_array();
  for (const Group& g : groups) {
    json.begin_object();
    json.key("label");
    json.string(g.label());
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
        label += (k > 0 ? "; " : "") + groups[ideal.groups[k]].label();
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

  json.key("predictions");
  json.begin_array();
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    const Result& r = sweep.predictions[i];
    json.begin_object();
    json.key("label");  // lines of the bar's label
    json.begin_array();
    json.string(workers_text(r.workers));
    json.string(predict::to_string(r.predictor));
    if (const std::string config = config_text(config_of(sweep, i)); !config.empty()) json.string(config);
    json.end_array();
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

/// The chart data as JSON text that is safe inside <script>: '<' only occurs inside JSON
/// strings, where \u003c means the same, so "</script>" in a scenario name cannot end the element.
std::string chart_data_json(const Sweep& sweep, const std::vector<Group>& groups,
                            const std::vector<Ideal>& ideals, const TimeUnit& unit) {
  std::ostringstream text;
  write_chart_data(text, sweep, groups, ideals, unit);
  std::string safe;
  for (char c : text.str()) {
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
  function curve(label, points, y, color, ideal, predictor) {
    return {
      label: label, stepcastIdeal: ideal,
      data: points.map(function (p) { return { x: p.workers, y: y(p) }; }),
      borderColor: color, backgroundColor: color, borderWidth: ideal ? 1.5 : 2,
      borderDash: ideal ? [6, 4] : [], pointRadius: ideal ? 0 : 4, pointStyle: marks[predictor] || 'circle', tension: 0
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
  var lineOptions = function (yTitle, unit, digits) {
    return {
      parsing: true,
      interaction: { mode: 'nearest', intersect: false },
      scales: { x: workersAxis(), y: { beginAtZero: true, title: { display: true, text: yTitle } } },
      plugins: {
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
  function part(label, key, color) {
    return {
      label: label, backgroundColor: color,
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
      scales: { x: { stacked: true, title: { display: true, text: 'prediction (workers, predictor, configuration)' } },
                y: { stacked: true, beginAtZero: true, title: { display: true, text: 'time per step (' + unit + ')' } } },
      plugins: {
        title: title('Where the step time goes (' + unit + ' per step, mean over workers)'),
        tooltip: { callbacks: { label: function (c) { return c.dataset.label + ': ' + fmt(c.parsed.y, 3) + ' ' + unit; } } }
      }
    }
  });

  charts.forEach(function (c) {
    var ctx = c.canvas.getContext('2d');
    var px = ctx.getImageData(0, 0, c.canvas.width, c.canvas.height).data, painted = 0;
    for (var i = 0; i < px.length; i += 4) {
      if (px[i + 3] > 0 && (px[i] < 250 || px[i + 1] < 250 || px[i + 2] < 250)) painted++;
    }
    c.canvas.dataset.painted = String(painted);
    c.canvas.dataset.datasets = String(c.chart.data.datasets.filter(function (d) { return !d.stepcastIdeal; }).length);
  });
  document.body.dataset.charts = String(charts.length);
  document.body.dataset.rendered = 'yes';
  window.stepcastShowErrors();
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

void write_heat_map(Page& page, const Sweep& sweep) {
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
      "whole time), one column per prediction; &ndash;: not reported by that prediction. The {} busiest of {}"
      " rows, by their peak over the sweep.</p>\n",
      shown, rows.size());
  page.raw("<div class=\"scroll\"><table class=\"heat\">\n<thead><tr><th>kind</th><th>resource or link</th>");
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    const Result& r = sweep.predictions[i];
    page.raw("<th>").text(workers_text(r.workers)).raw("<br>").text(predict::to_string(r.predictor));
    if (const std::string config = config_text(config_of(sweep, i)); !config.empty())
      page.raw("<br>").text(config);
    page.raw("</th>");
  }
  page.raw("</tr></thead>\n<tbody>\n");
  for (std::size_t k = 0; k < shown; ++k) {
    const HeatRow& row = rows[k];
    page.raw("<tr><td>").raw(row.link ? "link" : "resource").raw("</td><td>").text(row.name).raw("</td>");
    for (double busy : row.busy) {
      if (!std::isfinite(busy)) {
        page.raw("<td class=\"na\">&ndash;</td>");
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

}  // namespace

void write_html_report(std::ostream& out, const Sweep& sweep) {
  const std::vector<Group> groups = groups_of(sweep);
  const std::vector<Ideal> ideals = ideals_of(sweep, groups);
  const TimeUnit unit = time_unit_for(sweep.predictions);
  const bool with_config =
      std::any_of(sweep.configs.begin(), sweep.configs.end(), [](const Config& c) { return !c.empty(); });
  const std::string name = sweep.scenario.empty() ? std::string("(unnamed scenario)") : sweep.scenario;

  Page page(out);
  page.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
  page.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
  page.format("<meta name=\"generator\" content=\"stepcast {}\">\n", STEPCAST_VERSION);
  // An empty inline icon: without it a browser asks the server (or the disk) for favicon.ico.
  page.raw("<link rel=\"icon\" href=\"data:,\">\n");
  page.raw("<title>stepcast: ").text(name).raw("</title>\n");
  page.raw("<style>").raw(kStyle).raw("</style>\n");
  page.raw("<script>").raw(kErrorHook).raw("</script>\n</head>\n<body>\n");

  page.raw("<h1>stepcast prediction: ").text(name).raw("</h1>\n");
  page.format("<p class=\"meta\">{} prediction{} in {} curve{} (predictor", sweep.predictions.size(),
              sweep.predictions.size() == 1 ? "" : "s", groups.size(), groups.size() == 1 ? "" : "s");
  page.raw(with_config ? ", swept configuration)" : ")");
  page.format(
      ". Written by stepcast {}; charts drawn by Chart.js {} (MIT licence), inlined: this page needs no "
      "network.</p>\n",
      STEPCAST_VERSION, detail::chartjs_version());
  page.raw("<pre id=\"stepcast-errors\" class=\"errors\" hidden></pre>\n");

  if (sweep.predictions.empty()) {
    page.raw("<p>The sweep has no predictions.</p>\n");
  } else {
    page.raw("<section id=\"scaling\"><h2>Scaling</h2>\n<div class=\"charts\">\n");
    page.raw(
        "<div class=\"chart\"><canvas id=\"chart-throughput\" role=\"img\" aria-label=\"throughput in "
        "samples/s "
        "against workers, with the ideal line\"></canvas></div>\n");
    page.raw(
        "<div class=\"chart\"><canvas id=\"chart-efficiency\" role=\"img\" aria-label=\"scaling efficiency "
        "in % "
        "against workers\"></canvas></div>\n</div>\n");
    page.raw(
        "<p class=\"note\">One curve per predictor and swept configuration. Ideal (dashed): N workers "
        "&times; the "
        "rate of one worker training alone (throughput / speed-up), efficiency 100 %.</p>\n</section>\n");
    page.raw("<section id=\"breakdown\"><h2>Where the step time goes</h2>\n");
    page.raw(
        "<div class=\"chart wide\"><canvas id=\"chart-breakdown\" role=\"img\" aria-label=\"step time split "
        "into "
        "compute, exposed communication and wait, per prediction\"></canvas></div>\n");
    page.raw(
        "<p class=\"note\">Compute: ops running. Exposed communication: waiting for a transfer or collective "
        "with "
        "nothing running. Wait: waiting for other workers or a server (barrier, apply).</p>\n</section>\n");
    write_predictions(page, sweep, unit, with_config);
    write_heat_map(page, sweep);
    write_spread(page, sweep, unit, with_config);
    write_memory(page, sweep, with_config);
    write_tokens(page, sweep, with_config);
  }
  write_inputs(page, sweep);

  page.raw("<script type=\"application/json\" id=\"stepcast-data\">")
      .raw(chart_data_json(sweep, groups, ideals, unit))
      .raw("</script>\n");
  if (!sweep.predictions.empty()) {
    page.format("<script>/* Chart.js {}, from Debian's libjs-chart.js */\n", detail::chartjs_version());
    page.raw(detail::chartjs_source()).raw("\n</script>\n");
    page.raw("<script>").raw(kDraw).raw("</script>\n");
  } else {
    page.raw(
        "<script>document.body.dataset.rendered = 'yes'; document.body.dataset.charts = '0';</script>\n");
  }
  page.raw("</body>\n</html>\n");
}

}  // namespace stepcast::report
