// The HTML report: one self-contained page (Chart.js inlined, nothing remote), every text from
// the sweep escaped, the chart data a JSON island with one curve per (predictor, configuration),
// and, in headless Chromium when it is installed, a page that renders offline without errors.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <zlib.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "report/chartjs.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/report/html.hpp"
#include "stepcast/report/plan.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::report {
namespace {
namespace html_report_test {  // this file's own names: test files are compiled several to a unit

using predict::Predictor;
using predict::Result;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::string_view kHostile = "<script>alert('x')</script> & \"more\"";

std::string html_of(const Sweep& sweep) {
  std::ostringstream out;
  write_html_report(out, sweep);
  return out.str();
}

std::size_t count(std::string_view text, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + what.size()))
    ++n;
  return n;
}

/// A prediction with a consistent single-worker rate: `rate` samples/s alone, step time
/// `batch / (rate x efficiency)`.
Result result(int workers, Predictor predictor, double efficiency, double rate = 100, double batch = 32) {
  Result r;
  r.workers = workers;
  r.predictor = predictor;
  r.efficiency = efficiency;
  r.speedup = efficiency * workers;
  r.throughput = rate * r.speedup;
  r.step_time = batch / (rate * efficiency);
  r.breakdown = {.compute = batch / rate, .communication_exposed = r.step_time - batch / rate, .wait = 0};
  r.bottleneck = workers == 1 ? "compute" : "ring all-reduce on worker NIC out 80% busy";
  r.utilization = {{"worker compute", efficiency}, {"worker NIC out", 0.8 * (workers > 1)}};
  if (workers > 1) {
    r.links = {{"node0.nic.up", 0.8}, {"node1.nic.down", 0.75}};
    r.link_classes = {{.name = "worker NIC", .links = 4, .busiest = 0.8, .mean_busy = 0.6, .bytes = 4e9}};
  }
  return r;
}

/// Two predictors x two swept PS counts x {1, 2, 4} workers; hostile text in every place a
/// sweep carries text.
Sweep swept() {
  Sweep sweep;
  sweep.scenario = "resnet50 <b>&</b>";
  sweep.inputs = {{"cluster.nic_bandwidth", "10 Gbps", false}, {"model.name", std::string(kHostile), false}};
  sweep.compute_source = "profile <trace.json>";
  for (const std::string count : {"2", "4"}) {
    for (Predictor p : {Predictor::Fine, Predictor::Coarse}) {
      for (int n : {1, 2, 4}) {
        sweep.predictions.push_back(result(n, p, n == 1 ? 1.0 : 0.9 - 0.1 * n + (count == "4" ? 0.05 : 0)));
        sweep.configs.push_back({{"training.ps.count", count, true}});
      }
    }
  }
  sweep.predictions[4].bottleneck = std::string(kHostile);
  sweep.predictions[4].utilization.push_back({std::string(kHostile), 0.5});
  return sweep;
}

/// The text between `open` (found from `from`) and the next `close`; nullopt when absent.
std::optional<std::string> between(std::string_view text, std::string_view open, std::string_view close,
                                   std::size_t from = 0) {
  const std::size_t a = text.find(open, from);
  if (a == std::string_view::npos) return std::nullopt;
  const std::size_t b = text.find(close, a + open.size());
  if (b == std::string_view::npos) return std::nullopt;
  return std::string(text.substr(a + open.size(), b - a - open.size()));
}

constexpr std::string_view kDataOpen = "<script type=\"application/json\" id=\"stepcast-data\">";

simdjson::dom::element chart_data(simdjson::dom::parser& parser, const std::string& html) {
  const auto json = between(html, kDataOpen, "</script>");
  EXPECT_TRUE(json.has_value()) << "no #stepcast-data island";
  simdjson::dom::element doc;
  const auto error = parser.parse(json.value_or("null")).get(doc);
  EXPECT_EQ(error, simdjson::SUCCESS) << simdjson::error_message(error) << "\n" << json.value_or("");
  return doc;
}

TEST(HtmlReport, IsOneDocumentWithChartJsInlinedOnce) {
  const std::string html = html_of(swept());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0), 0u);
  EXPECT_TRUE(html.ends_with("</body>\n</html>\n"));
  EXPECT_NE(html.find("<meta charset=\"utf-8\">"), std::string::npos);
  const std::string_view chartjs = detail::chartjs_source();
  ASSERT_GT(chartjs.size(), 100'000u) << "the inlined Chart.js looks truncated";
  EXPECT_NE(chartjs.find("Chart.js v" + std::string(detail::chartjs_version())), std::string_view::npos);
  EXPECT_EQ(count(html, chartjs), 1u);
  // Our four scripts (error hook, data island, Chart.js, drawing), and the library opens no other.
  EXPECT_EQ(count(chartjs, "</script"), 0u);
  EXPECT_EQ(count(html, "<script"), 4u);
  EXPECT_EQ(count(html, "</script>"), 4u);
  EXPECT_NE(html.find("id=\"chart-throughput\""), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-efficiency\""), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-breakdown\""), std::string::npos);
}

TEST(HtmlReport, ReferencesNothingRemote) {
  const std::string html = html_of(swept());
  // The only URLs are in Chart.js's licence banners, inside /*! ... */ comments: text, not fetched.
  for (std::string_view scheme : {"http://", "https://", "ftp://"}) {
    for (std::size_t at = html.find(scheme); at != std::string::npos; at = html.find(scheme, at + 1)) {
      const std::size_t opened = html.rfind("/*", at);
      const std::size_t closed = html.rfind("*/", at);
      EXPECT_TRUE(opened != std::string::npos && (closed == std::string::npos || closed < opened))
          << "URL outside a comment: " << html.substr(at, 80);
    }
  }
  std::string page = html;  // the page without the library: no URL, no attribute that loads anything
  page.erase(page.find(detail::chartjs_source()), detail::chartjs_source().size());
  for (std::string_view loads :
       {"http:", "https:", "src=", "url(", "@import", "<iframe", "<img", "<object", "<embed"})
    EXPECT_EQ(count(page, loads), 0u) << loads;
  // One link, the empty inline icon, which keeps browsers from asking for favicon.ico.
  EXPECT_EQ(count(page, "href="), 1u);
  EXPECT_EQ(count(page, "<link"), 1u);
  EXPECT_NE(page.find("<link rel=\"icon\" href=\"data:,\">"), std::string::npos);
}

TEST(HtmlReport, EscapesEveryTextFromTheSweep) {
  const std::string html = html_of(swept());
  EXPECT_EQ(html.find(kHostile), std::string::npos);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  const std::string escaped = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;more&quot;";
  // The bottleneck in the predictions table; the resource in the heat map and the input's value.
  EXPECT_EQ(count(html, "<td class=\"words\">" + escaped + "</td>"), 1u);
  EXPECT_EQ(count(html, "<td>" + escaped + "</td>"), 2u);
  EXPECT_NE(html.find("<title>stepcast: resnet50 &lt;b&gt;&amp;&lt;/b&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("<h1>stepcast prediction: resnet50 &lt;b&gt;&amp;&lt;/b&gt;</h1>"), std::string::npos);
  EXPECT_NE(html.find("Compute time: profile &lt;trace.json&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<b>&</b>"), std::string::npos);
}

TEST(HtmlReport, ChartDataIsJsonWithNoLessThanSign) {
  const std::string html = html_of(swept());
  const auto json = between(html, kDataOpen, "</script>");
  ASSERT_TRUE(json.has_value());
  EXPECT_EQ(json->find('<'), std::string::npos);
  EXPECT_NE(json->find("\\u003cb>"), std::string::npos);  // the scenario name's "<b>"
  simdjson::dom::parser parser;
  const simdjson::dom::element data = chart_data(parser, html);
  EXPECT_EQ(std::string_view(data["scenario"]), "resnet50 <b>&</b>");  // the same text once parsed
}

TEST(HtmlReport, OneCurvePerPredictorAndConfiguration) {
  simdjson::dom::parser parser;
  const std::string html = html_of(swept());
  const simdjson::dom::element data = chart_data(parser, html);
  const simdjson::dom::array groups = data["groups"];
  ASSERT_EQ(groups.size(), 4u);
  // Every configuration sets the same key: the legend gives its values, the note names it.
  const std::array<std::string_view, 4> labels{"fine, 2", "coarse, 2", "fine, 4", "coarse, 4"};
  EXPECT_NE(html.find("the legend gives the predictor and the value of training.ps.count"), std::string::npos);
  for (std::size_t g = 0; g < 4; ++g) {
    EXPECT_EQ(std::string_view(groups.at(g)["label"]), labels[g]);
    const simdjson::dom::array points = groups.at(g)["points"];
    ASSERT_EQ(points.size(), 3u);
    EXPECT_EQ(int64_t(points.at(2)["workers"]), 4);
  }
  // Every curve has the same single-worker rate (100 samples/s), so one ideal line: N x 100.
  const simdjson::dom::array ideals = data["ideals"];
  ASSERT_EQ(ideals.size(), 1u);
  EXPECT_NEAR(double(ideals.at(0)["single_worker_samples_per_s"]), 100, 1e-9);
  const simdjson::dom::array ideal = ideals.at(0)["points"];
  ASSERT_EQ(ideal.size(), 3u);
  EXPECT_NEAR(double(ideal.at(2)["throughput_samples_per_s"]), 400, 1e-9);
  EXPECT_EQ(simdjson::dom::array(data["predictions"]).size(), 12u);
  EXPECT_FALSE(bool(data["workers_log_scale"]));  // 1 to 4
}

TEST(HtmlReport, WithoutASweepOneCurvePerPredictorAndAnIdealPerSingleWorkerRate) {
  Sweep sweep;
  sweep.scenario = "two predictors";
  for (int n : {1, 4, 16}) {
    sweep.predictions.push_back(result(n, Predictor::Fine, 0.9, 100));
    sweep.predictions.push_back(result(n, Predictor::Analytic, 0.95, 120));  // another rate alone
  }
  const std::string html = html_of(sweep);
  EXPECT_EQ(html.find("<th>configuration</th>"), std::string::npos)
      << "no configuration column without a sweep";
  simdjson::dom::parser parser;
  const simdjson::dom::element data = chart_data(parser, html);
  const simdjson::dom::array groups = data["groups"];
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(std::string_view(groups.at(0)["label"]), "fine");
  EXPECT_EQ(std::string_view(groups.at(1)["label"]), "analytic");
  const simdjson::dom::array ideals = data["ideals"];
  ASSERT_EQ(ideals.size(), 2u);
  EXPECT_EQ(std::string_view(ideals.at(1)["label"]), "ideal (analytic)");
  EXPECT_NEAR(double(simdjson::dom::array(ideals.at(1)["points"]).at(2)["throughput_samples_per_s"]),
              16 * 120, 1e-9);
  EXPECT_TRUE(bool(data["workers_log_scale"]));  // 1 to 16
}

TEST(HtmlReport, HeatMapRowsAreTheBusiestResourcesAndLinksFirst) {
  const std::string html = html_of(swept());
  const auto heat = between(html, "<section id=\"heatmap\">", "</section>");
  ASSERT_TRUE(heat.has_value());
  // Peaks: worker compute 1.0, NIC out 0.8, the NICs' class 0.8 (no row per link), hostile 0.5.
  const std::size_t compute = heat->find("<td>resource</td><td>worker compute</td>");
  const std::size_t nic = heat->find("<td>resource</td><td>worker NIC out</td>");
  const std::size_t links = heat->find("<td>links</td><td>worker NIC</td>");
  ASSERT_NE(links, std::string::npos);
  EXPECT_LT(compute, nic);
  EXPECT_LT(nic, links);
  EXPECT_EQ(heat->find("node1.nic.down"), std::string::npos);
  // One column per prediction: the header lists 12 predictions; one worker reports no links.
  EXPECT_EQ(count(*heat, "<th>"), 2u + 12u);
  EXPECT_NE(heat->find("<td class=\"na\">&ndash;</td>"), std::string::npos);
  EXPECT_NE(heat->find("title=\"80.0 % busy\">80 %</td>"), std::string::npos);
  EXPECT_NE(heat->find("background:hsl(8,80%,40%);color:#fff"), std::string::npos);  // 100 % busy
  EXPECT_NE(heat->find("The 4 busiest of 4 rows"), std::string::npos);
}

TEST(HtmlReport, UnitsOnColumnsAndAxes) {
  const std::string html = html_of(swept());
  for (std::string_view unit :
       {"<th>step time (ms)</th>", "<th>throughput (samples/s)</th>", "<th>efficiency (%)</th>",
        "<th>speed-up (\u00d7)</th>", "<th>exposed communication (ms)</th>", "'throughput (samples/s)'",
        "'efficiency (%)'", "'time per step (' + unit + ')'", "\"time_unit\": \"ms\"",
        "Busy fraction of each resource and link over the measured steps (%"})
    EXPECT_NE(html.find(unit), std::string::npos) << unit;
  // Step time of 1 worker: 32 / 100 samples/s = 320 ms; efficiency 100.0 %.
  EXPECT_NE(html.find("<td class=\"n\">320.000</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"n\">100.0</td>"), std::string::npos);
}

TEST(HtmlReport, SpreadMemoryAndTokensOnlyWhenPresent) {
  Sweep sweep = swept();
  std::string html = html_of(sweep);
  for (std::string_view id : {"id=\"spread\"", "id=\"memory\"", "id=\"tokens\"", "MFU"})
    EXPECT_EQ(html.find(id), std::string::npos) << id;

  Result& r = sweep.predictions[1];
  r.step_samples = {
      .samples = 3, .mean = 0.3, .p50 = 0.29, .p95 = 0.35, .min = 0.28, .max = 0.36, .step_times = {}};
  r.memory.known = true;
  r.memory.per_worker = {
      .parameters = 2e9, .gradients = 2e9, .optimizer = 12e9, .activations = 0, .buffers = 0};
  r.memory.gpu_memory = 8e9;  // 16 GB does not fit in 8
  // Reserved: 16 GB in a pool with 20% unused, 16 / 0.8 = 20 GB, and 1 GB outside it: 21 GB.
  r.memory.allocator_overhead = 0.2;
  r.memory.outside_allocator = 1e9;
  r.tokens = {.tokens_per_s = 5e4,
              .tokens_per_s_per_worker = 2.5e4,
              .model_flops_per_s_per_worker = 3e14,
              .mfu = 0.4,
              .mfu_6nd = 0.35};
  html = html_of(sweep);
  const auto spread = between(html, "<section id=\"spread\">", "</section>");
  ASSERT_TRUE(spread.has_value());
  EXPECT_NE(spread->find("<th>p95 (ms)</th>"), std::string::npos);
  EXPECT_NE(spread->find("<td class=\"n\">350.000</td>"), std::string::npos);
  EXPECT_EQ(count(*spread, "<tr>"), 2u);  // header and the one prediction with samples
  const auto memory = between(html, "<section id=\"memory\">", "</section>");
  ASSERT_TRUE(memory.has_value());
  EXPECT_NE(memory->find("<td class=\"n\">12.0 GB</td>"), std::string::npos);  // optimizer
  EXPECT_NE(memory->find("<td class=\"n\">16.0 GB + activations</td>"), std::string::npos);
  EXPECT_NE(memory->find("<td class=\"n\">not modelled</td>"), std::string::npos);
  EXPECT_NE(memory->find("<td class=\"n\">21.0 GB + activations</td>"), std::string::npos);  // reserved
  EXPECT_NE(memory->find("<span class=\"bad\">no: 21.0 GB reserved &gt; 8.00 GB</span>"), std::string::npos);
  EXPECT_EQ(count(*memory, "<tr>"), 2u);
  const auto tokens = between(html, "<section id=\"tokens\">", "</section>");
  ASSERT_TRUE(tokens.has_value());
  EXPECT_NE(tokens->find("<td class=\"n\">50000</td>"), std::string::npos);
  EXPECT_NE(tokens->find("<td class=\"n\">300 TFLOP/s</td>"), std::string::npos);
  EXPECT_NE(tokens->find("<td class=\"n\">40.0</td>"), std::string::npos);
  EXPECT_NE(html.find("<th>MFU (%)</th>"), std::string::npos);  // in the predictions table too
}

TEST(HtmlReport, ParallelLayoutsGiveLayoutBubbleAndExposedByDimension) {
  Sweep sweep = swept();
  EXPECT_EQ(html_of(sweep).find("id=\"layouts\""), std::string::npos);  // plain data parallelism: nothing new

  Result& r = sweep.predictions[1];  // 2 workers, fine: step 32 / (100 x 0.7) = 457 ms
  r.layout = "tp2 cp1 pp4 dp32";
  r.bubble_fraction = 0.25;
  r.breakdown.tensor = 0.012;
  r.breakdown.context = 0;
  r.breakdown.pipeline = 0.003;
  r.breakdown.data = 0.0405;
  std::string html = html_of(sweep);
  auto layouts = between(html, "<section id=\"layouts\">", "</section>");
  ASSERT_TRUE(layouts.has_value());
  for (std::string_view cell :
       {"<th>layout</th>", "<th>bubble (%)</th>", "<th>exposed tensor (ms)</th>",
        "<th>exposed context (ms)</th>", "<th>exposed pipeline (ms)</th>", "<th>exposed data (ms)</th>",
        "<td>tp2 cp1 pp4 dp32</td>", "<td class=\"n\">25.0</td>", "<td class=\"n\">12.000</td>",
        "<td class=\"n\">0.000</td>", "<td class=\"n\">3.000</td>", "<td class=\"n\">40.500</td>"})
    EXPECT_NE(layouts->find(cell), std::string::npos) << cell;
  EXPECT_EQ(count(*layouts, "<tr>"), 2u);                 // header and the one prediction with a layout
  EXPECT_EQ(layouts->find("expert"), std::string::npos);  // no expert parallelism, no column

  r.layout = "tp2 cp1 pp4 dp32 ep8";
  r.breakdown.expert = 0.007;
  html = html_of(sweep);
  layouts = between(html, "<section id=\"layouts\">", "</section>");
  ASSERT_TRUE(layouts.has_value());
  EXPECT_NE(layouts->find("<th>exposed expert (ms)</th>"), std::string::npos);
  EXPECT_NE(layouts->find("<td class=\"n\">7.000</td>"), std::string::npos);
}

TEST(HtmlReport, NonFiniteNumbersAndAnEmptySweepDoNotBreakIt) {
  Sweep sweep = swept();
  sweep.predictions[0].step_time = kNaN;
  sweep.predictions[0].throughput = std::numeric_limits<double>::infinity();
  std::string html = html_of(sweep);
  EXPECT_NE(html.find("<td class=\"n\">&ndash;</td>"), std::string::npos);
  simdjson::dom::parser parser;
  const simdjson::dom::element data = chart_data(parser, html);
  const simdjson::dom::element first = simdjson::dom::array(data["predictions"]).at(0);
  EXPECT_EQ(first["step_time_s"].value().type(), simdjson::dom::element_type::NULL_VALUE);

  html = html_of(Sweep{});
  EXPECT_TRUE(html.ends_with("</html>\n"));
  EXPECT_NE(html.find("The sweep has no predictions."), std::string::npos);
  EXPECT_NE(html.find("(unnamed scenario)"), std::string::npos);
  EXPECT_EQ(html.find(detail::chartjs_source()), std::string::npos);  // nothing to draw
  EXPECT_NE(html.find("document.body.dataset.rendered = 'yes'"), std::string::npos);
  chart_data(parser, html);
}

// ---- Many curves, links by class, what does not fit

/// `curves` swept configurations of one predictor at 1, 2 and 4 workers: a legend of their full
/// labels would cover the chart.
Sweep many_curves(int curves) {
  Sweep sweep;
  sweep.scenario = "many curves";
  for (int c = 0; c < curves; ++c) {
    for (int n : {1, 2, 4}) {
      sweep.predictions.push_back(result(n, Predictor::Fine, n == 1 ? 1.0 : 0.95 - 0.01 * c - 0.05 * n));
      sweep.configs.push_back({{"cluster.nic_bandwidth", std::to_string(10 + c) + "Gbps", false},
                               {"training.bucket_size", std::to_string(25 + c) + "MB", false},
                               {"training.allreduce.algorithm", c % 2 == 0 ? "ring" : "tree", false}});
    }
  }
  return sweep;
}

TEST(HtmlReport, ManyCurvesGetShortLabelsAndAKeyTable) {
  simdjson::dom::parser parser;
  const std::string html = html_of(many_curves(30));
  const simdjson::dom::element data = chart_data(parser, html);
  EXPECT_TRUE(bool(data["short_labels"]));
  std::set<std::string> labels;
  for (simdjson::dom::element g : data["groups"].get_array()) {
    const std::string label{std::string_view(g["label"])};
    const std::string full{std::string_view(g["full"])};
    EXPECT_LE(label.size(), 4u) << label;
    labels.insert(label);
    // The key table maps the short label to the full configuration, in one row.
    const std::string row = "<tr><td>" + label + "</td><td>fine</td><td>";
    const std::size_t at = html.find(row);
    ASSERT_NE(at, std::string::npos) << row;
    EXPECT_EQ(html.compare(at + row.size(), full.size() - 6, full.substr(6)), 0) << full;  // less "fine, "
  }
  EXPECT_EQ(labels.size(), 30u) << "labels must be distinct";
  EXPECT_NE(html.find("id=\"key\""), std::string::npos);

  // A few curves keep their full labels, and there is no key.
  const std::string few = html_of(swept());
  EXPECT_FALSE(bool(chart_data(parser, few)["short_labels"]));
  EXPECT_EQ(few.find("id=\"key\""), std::string::npos);
}

TEST(HtmlReport, LinksAreListedByClassNotOneRowPerLink) {
  Sweep sweep;
  sweep.scenario = "fabric";
  Result r = result(16, Predictor::Fine, 0.8);
  // The ten links a prediction keeps are all NICs; its classes count every link.
  r.utilization = {{"worker NIC out", 0.9}, {"leaf->spine link", 0.7}};
  r.links = {{"node0.nic.up", 0.9, 1e9}, {"node1.nic.up", 0.5, 1e9}};
  r.link_classes = {{"worker NIC", 32, 0.9, 0.6, 3e10},
                    {"leaf->spine link", 8, 0.7, 0.5, 8e9},
                    {"spine->leaf link", 8, 0.6, 0.45, 7e9},
                    {"intra-node link", 128, 0.2, 0.1, 1e10},
                    {"PCIe link", 16, 0.1, 0.05, 1e9}};
  sweep.predictions = {r};
  const std::string html = html_of(sweep);
  const std::string heat = between(html, "<section id=\"heatmap\">", "</section>").value_or("");
  for (std::string_view name : {"node0.nic.up", "node1.nic.up"})
    EXPECT_EQ(heat.find(name), std::string::npos) << name << " has a row of its own";
  // One row per class: its busiest link, then the mean and the count of every link that carried bytes.
  EXPECT_NE(heat.find("<td>worker NIC</td><td class=\"heat\""), std::string::npos) << heat;
  EXPECT_NE(heat.find("90 %<br><small>mean 60 %, 32</small>"), std::string::npos) << heat;
  EXPECT_NE(heat.find("<td>links</td><td>leaf-&gt;spine link</td>"), std::string::npos) << heat;
  EXPECT_NE(heat.find("70 %<br><small>mean 50 %, 8</small>"), std::string::npos) << heat;
  // The uplinks' class is a resource too: one row, the class's.
  EXPECT_EQ(heat.find("<td>resource</td><td>leaf-&gt;spine link</td>"), std::string::npos) << heat;
  EXPECT_NE(heat.find("<td>resource</td><td>worker NIC out</td>"), std::string::npos) << heat;
  EXPECT_NE(heat.find("<td>spine-&gt;leaf link</td>"), std::string::npos);
  EXPECT_NE(heat.find("<td>intra-node link</td>"), std::string::npos);
  EXPECT_NE(heat.find("<td>PCIe link</td>"), std::string::npos);
  EXPECT_EQ(count(heat, "<td>links</td>"), 5u);
}

/// A prediction that needs `reserved` bytes of a GPU of `gpu` bytes.
void set_memory(Result& r, double reserved, double gpu) {
  r.memory.known = true;
  r.memory.activations_modelled = true;
  r.memory.per_worker.parameters = reserved;
  r.memory.gpu_memory = gpu;
}

TEST(HtmlReport, WhatDoesNotFitIsMarkedOnEveryChart) {
  Sweep sweep = swept();
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i)
    set_memory(sweep.predictions[i], i == 2 ? 90e9 : 60e9, 80e9);
  simdjson::dom::parser parser;
  const std::string html = html_of(sweep);
  const simdjson::dom::element data = chart_data(parser, html);
  EXPECT_EQ(int64_t(data["misfits"]), 1);
  // The line charts' points and the breakdown's bars carry "fits"; exactly one is false on each.
  int bad_points = 0, bad_bars = 0;
  for (simdjson::dom::element g : data["groups"].get_array())
    for (simdjson::dom::element p : g["points"].get_array()) bad_points += bool(p["fits"]) ? 0 : 1;
  for (simdjson::dom::element p : data["predictions"].get_array()) {
    const bool fits = bool(p["fits"]);
    bad_bars += fits ? 0 : 1;
    const std::string label = simdjson::minify(p["label"]);
    EXPECT_EQ(label.find("does not fit") != std::string::npos, !fits) << label;
  }
  EXPECT_EQ(bad_points, 1);
  EXPECT_EQ(bad_bars, 1);
}

// ---- advise and plan

Advice advice_of(const Sweep& sweep) {
  Advice a;
  a.scenario = "resnet50 <advise>";
  a.target = "efficiency >= 80.0%";
  a.target_efficiency = 0.8;
  a.minimised = "steps up the --vary lists";
  a.base = sweep.predictions.front();
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    GridPoint p{sweep.configs[i], sweep.predictions[i], static_cast<int>(i % 3), 0, false};
    p.meets = p.result.memory.fits() && p.result.efficiency >= 0.8;
    a.grid.push_back(p);
  }
  for (std::size_t i = 0; i < a.grid.size(); ++i)
    if (a.grid[i].meets && a.cheapest.empty()) a.cheapest.push_back(i);
  a.best_changes.push_back({"training.ps.count", "2", "4", a.grid[9].result, 5.0, 0.05});
  return a;
}

TEST(HtmlReport, AdvicePageLeadsWithTheAnswer) {
  Sweep sweep = swept();
  for (Result& r : sweep.predictions) set_memory(r, 60e9, 80e9);
  set_memory(sweep.predictions[1], 90e9, 80e9);
  const Advice a = advice_of(sweep);
  ASSERT_FALSE(a.cheapest.empty());
  std::ostringstream out;
  write_advice_html(out, a);
  const std::string html = out.str();
  const std::size_t answer = html.find("<section id=\"answer\""),
                    charts = html.find("<section id=\"scaling\"");
  ASSERT_NE(answer, std::string::npos);
  ASSERT_NE(charts, std::string::npos);
  EXPECT_LT(answer, charts) << "the answer comes before the charts";
  const std::string lead = html.substr(answer, charts - answer);
  EXPECT_NE(lead.find("efficiency &gt;= 80.0%"), std::string::npos) << "the target line";
  EXPECT_NE(lead.find("Chosen: <b>" + config_label(a.grid[a.cheapest.front()].config)), std::string::npos);
  EXPECT_NE(lead.find("<th>meets</th>"), std::string::npos);
  EXPECT_NE(lead.find("Runner-ups"), std::string::npos);
  EXPECT_NE(lead.find("Best single change: <b>training.ps.count</b>"), std::string::npos);
  EXPECT_NE(lead.find("1 does not fit in GPU memory"), std::string::npos) << lead;
  EXPECT_EQ(html.find("<advise>"), std::string::npos) << "the scenario name is escaped";
}

/// A plan of `counts` GPU counts with `k` ranked layouts each and a closest miss; long layout
/// labels, as Llama's are.
Plan plan_of(std::vector<int> counts, std::size_t k) {
  Plan plan;
  plan.scenario = "llama <plan>";
  plan.top_k = k;
  plan.searched = {"training.parallel.tensor", "training.parallel.pipeline"};
  plan.held = {"workload.micro_batch"};
  plan.compute_source = "the model's FLOPs at 45% of peak";
  for (int gpus : counts) {
    PlanCount c;
    c.gpus = gpus;
    c.considered = 1000;
    c.fitting = 400;
    c.rejected = {500, {{"training.parallel.tensor", 300}, {"training.parallel.pipeline", 200}}, 100, 0};
    PlanMiss miss{{{"training.parallel.tensor", "1", true}}, "tp1 cp1 pp2 dp" + std::to_string(gpus / 2), {}};
    miss.memory.known = true;
    miss.memory.per_worker.parameters = 81e9;
    miss.memory.gpu_memory = 80e9;
    c.closest_miss = miss;
    for (std::size_t i = 0; i < k; ++i) {
      PlanRow row;
      row.label =
          fmt::format("tp{} cp1 pp{} vp20 dp{}, fsdp optimizer, mb 1, ckpt selective, sp, interleaved",
                      1 << (i % 4), 1 << (i / 4 % 3), gpus / 4);
      row.config = {{"training.parallel.tensor", std::to_string(1 << (i % 4)), true}};
      row.fine = result(gpus, Predictor::Fine, 0.9 - 0.01 * double(i));
      row.fine.tokens = {1e6, 900.0 - 10 * double(i), 4e14, 0.41 - 0.005 * double(i), 0.39};
      row.fine.bubble_fraction = 0.04;
      row.fine.breakdown.tensor = 0.01 * row.fine.step_time;
      row.fine.breakdown.data = 0.02 * row.fine.step_time;
      row.fine.links = {{"node0.nic.up", 0.8, 1e9}, {"leaf0->spine1", 0.6, 2e9}, {"spine1->leaf3", 0.5, 2e9}};
      row.fine.link_classes = {{"worker NIC", 64, 0.8, 0.7, 5e10}, {"leaf->spine link", 16, 0.6, 0.4, 3e10}};
      set_memory(row.fine, 60e9 + 1e9 * double(i), 80e9);
      row.coarse = row.fine;
      row.coarse.predictor = Predictor::Coarse;
      row.coarse_rank = i == 0 ? 1 : i == 1 ? 0 : i;
      c.top.push_back(row);
    }
    plan.counts.push_back(c);
  }
  plan.best_count = 0;
  return plan;
}

TEST(PlanText, MemoryIsWhatTheGpuReservesAndWhatThatLeaves) {
  // The fit check counts reserved bytes (the allocator's pool and the context beyond the tensors);
  // the headroom the table prints must too: 60 GB allocated with 10% of the pool unused and 1.1 GB
  // outside it is 67.8 GB reserved, 12.2 GB free of 80 GB (not 20 GB).
  Plan plan = plan_of({256}, 1);
  predict::MemoryCheck& m = plan.counts[0].top[0].fine.memory;
  m.allocator_overhead = 0.1;
  m.outside_allocator = 1.1e9;
  ASSERT_NEAR(m.reserved(), 60e9 / 0.9 + 1.1e9, 1);
  std::ostringstream out;
  write_plan_text(out, plan);
  const std::string text = out.str();
  EXPECT_NE(text.find("reserved per GPU"), std::string::npos) << text;
  EXPECT_NE(text.find("67.8 GB (12.2 GB free)"), std::string::npos) << text;
}

TEST(HtmlReport, PlanPageLeadsWithTheBestLayoutAndTheCounts) {
  const Plan plan = plan_of({256, 512}, 3);
  std::ostringstream out;
  write_plan_html(out, plan);
  const std::string html = out.str();
  const std::size_t answer = html.find("<section id=\"answer\""),
                    charts = html.find("<section id=\"charts\"");
  ASSERT_NE(answer, std::string::npos);
  ASSERT_NE(charts, std::string::npos);
  EXPECT_LT(answer, charts);
  const std::string lead = html.substr(answer, charts - answer);
  EXPECT_NE(lead.find("<b>" + plan.counts[0].top[0].label + "</b> on 256 GPUs"), std::string::npos) << lead;
  for (std::string_view fact : {"step time", "tokens/s per GPU", "MFU", "memory per GPU", "bubble",
                                "exposed communication", "bottleneck"})
    EXPECT_NE(lead.find("<dt>" + std::string(fact) + "</dt>"), std::string::npos) << fact;
  EXPECT_NE(lead.find(" of 80.0 GB"), std::string::npos) << "memory against the GPU's";
  // Per count: the counts by reason, the closest miss, the runner-ups, and that the orders differ.
  for (int gpus : {256, 512}) {
    const std::string section =
        between(html, "<section id=\"gpus-" + std::to_string(gpus) + "\">", "</section>").value_or("");
    EXPECT_NE(section.find("1000 layouts considered: 400 fit"), std::string::npos) << section;
    EXPECT_NE(section.find("500 invalid"), std::string::npos);
    EXPECT_NE(section.find("100 do not fit in GPU memory"), std::string::npos);
    EXPECT_NE(section.find("Closest miss"), std::string::npos);
    EXPECT_NE(section.find("rank these 3 layouts differently"), std::string::npos);
    EXPECT_EQ(count(section, "<tr><td class=\"n\">"), 3u) << "one row per ranked layout";
  }
  // The charts: one bar per ranked layout and per closest miss, the misses marked as not fitting.
  simdjson::dom::parser parser;
  const simdjson::dom::element data = chart_data(parser, html);
  int bars = 0, misses = 0;
  for (simdjson::dom::element b : data["bars"].get_array()) {
    ++bars;
    misses += bool(b["fits"]) ? 0 : 1;
  }
  EXPECT_EQ(bars, 8);
  EXPECT_EQ(misses, 2);
  for (std::string_view id : {"chart-plan-tokens", "chart-plan-mfu", "chart-plan-memory"})
    EXPECT_NE(html.find("id=\"" + std::string(id) + "\""), std::string::npos) << id;
  // Links by class, not one row per link.
  const std::string links = between(html, "<section id=\"links\">", "</section>").value_or("");
  EXPECT_NE(links.find("<td>leaf-&gt;spine link</td><td class=\"n\">16</td><td class=\"n\">60.0</td>"),
            std::string::npos)
      << links;
  EXPECT_EQ(links.find("node0.nic.up"), std::string::npos);
  EXPECT_EQ(html.find("<plan>"), std::string::npos) << "the scenario name is escaped";
}

TEST(HtmlReport, PlanWithNoLayoutSaysSoAndDrawsNothing) {
  Plan plan = plan_of({8}, 0);
  plan.best_count.reset();
  std::ostringstream out;
  write_plan_html(out, plan);
  const std::string html = out.str();
  EXPECT_NE(html.find("No layout is valid and fits"), std::string::npos);
  EXPECT_EQ(html.find("<canvas"), std::string::npos);
  EXPECT_EQ(count(html, "</html>"), 1u);
}

TEST(HtmlReport, SameSweepSameBytes) { EXPECT_EQ(html_of(swept()), html_of(swept())); }

// ---- In a browser

/// A PNG's pixels as RGBA, for 8-bit RGB or RGBA images without interlacing (what Chromium
/// writes); nullopt otherwise.
struct Image {
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<uint32_t> rgba;
};

uint32_t be32(const unsigned char* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

std::optional<Image> decode_png(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 8 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return std::nullopt;
  Image image;
  unsigned channels = 0;
  std::string idat;
  for (std::size_t at = 8; at + 12 <= bytes.size();) {
    const uint32_t length = be32(p + at);
    const std::string type = bytes.substr(at + 4, 4);
    if (at + 12 + length > bytes.size()) return std::nullopt;
    const unsigned char* chunk = p + at + 8;
    if (type == "IHDR") {
      image.width = be32(chunk);
      image.height = be32(chunk + 4);
      if (chunk[8] != 8 || chunk[12] != 0 || (chunk[9] != 2 && chunk[9] != 6)) return std::nullopt;
      channels = chunk[9] == 6 ? 4 : 3;
    } else if (type == "IDAT") {
      idat.append(reinterpret_cast<const char*>(chunk), length);
    }
    at += 12 + length;
  }
  if (channels == 0) return std::nullopt;
  const std::size_t stride = std::size_t(image.width) * channels;
  std::vector<unsigned char> raw(image.height * (stride + 1));
  uLongf size = raw.size();
  if (uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK ||
      size != raw.size())
    return std::nullopt;
  // Undo the per-row filters (PNG spec section 9): None, Sub, Up, Average, Paeth.
  std::vector<unsigned char> previous(stride, 0), row(stride);
  image.rgba.reserve(std::size_t(image.width) * image.height);
  for (uint32_t y = 0; y < image.height; ++y) {
    const unsigned char filter = raw[y * (stride + 1)];
    const unsigned char* line = &raw[y * (stride + 1) + 1];
    for (std::size_t x = 0; x < stride; ++x) {
      const int a = x >= channels ? row[x - channels] : 0, b = previous[x],
                c = x >= channels ? previous[x - channels] : 0;
      int predicted = 0;
      switch (filter) {
        case 0:
          break;
        case 1:
          predicted = a;
          break;
        case 2:
          predicted = b;
          break;
        case 3:
          predicted = (a + b) / 2;
          break;
        case 4: {
          const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
          predicted = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c);
          break;
        }
        default:
          return std::nullopt;
      }
      row[x] = static_cast<unsigned char>(line[x] + predicted);
    }
    for (std::size_t x = 0; x < stride; x += channels)
      image.rgba.push_back((uint32_t(row[x]) << 24) | (uint32_t(row[x + 1]) << 16) |
                           (uint32_t(row[x + 2]) << 8) | (channels == 4 ? row[x + 3] : 0xffu));
    previous.swap(row);
  }
  return image;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The value of attribute `name` in the first tag that starts with `tag_start` at or after `from`.
std::optional<std::string> attribute(const std::string& dom, std::string_view tag_start,
                                     std::string_view name, std::size_t from = 0) {
  const std::size_t open = dom.find(tag_start, from);
  if (open == std::string::npos) return std::nullopt;
  const std::string tag = dom.substr(open, dom.find('>', open) - open);
  return between(tag, " " + std::string(name) + "=\"", "\"");
}

/// ResNet-50 under ring all-reduce at 10 and 100 Gbps (the swept configuration), fine and coarse,
/// 1 to 8 workers: 16 predictions in 4 curves, predicted by the library itself.
Sweep realistic_sweep() {
  const workload::Workload w =
      zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 64, .step_time = 0.292});
  Sweep sweep;
  sweep.scenario = "resnet50-allreduce";
  sweep.inputs = {{"model", "resnet50", false},
                  {"training.batch_per_worker", "64", true},
                  {"workload.step_time", "292 ms", false},
                  {"training.scheme", "all_reduce", false}};
  sweep.compute_source = "zoo model at the given step time";
  for (const char* gbps : {"10", "100"}) {
    for (Predictor predictor : {Predictor::Fine, Predictor::Coarse}) {
      for (int n : {1, 2, 4, 8}) {
        cluster::ClusterSpec spec;
        spec.workers = n;
        spec.nic_bw = std::stod(gbps) * 1e9 / 8;
        spec.latency = 5e-6;
        const predict::Options options{.predictor = predictor, .warmup_steps = 1, .measure_steps = 3};
        sweep.predictions.push_back(predict::predict(w, spec, scheme::SchemeConfig{}, options));
        sweep.configs.push_back({{"cluster.nic_bandwidth", std::string(gbps) + "Gbps", false}});
      }
    }
  }
  return sweep;
}

/// Chromium, or "" when it is not installed (STEPCAST_CHROMIUM names another).
std::string chromium_path() {
  const char* override_path = std::getenv("STEPCAST_CHROMIUM");
  const std::string chromium = override_path != nullptr ? override_path : "/usr/bin/chromium";
  return std::filesystem::exists(chromium) ? chromium : std::string();
}

#define SKIP_WITHOUT_CHROMIUM(chromium)                                                     \
  if ((chromium).empty())                                                                   \
  GTEST_SKIP() << "Chromium not found: install Debian's chromium (STEPCAST_WITH_BROWSER=1 " \
               << "scripts/install-deps.sh) to run the browser test"

/// A page as headless Chromium left it: the DOM after the scripts ran, Chromium's log, and a
/// screenshot, in `dir`.
struct Rendered {
  std::filesystem::path dir;
  std::string dom;
  std::string log;
  std::filesystem::path shot;
  int status = -1;
};

Rendered render(const std::string& chromium, const std::string& html) {
  std::string pattern = (std::filesystem::path(::testing::TempDir()) / "stepcast-html-XXXXXX").string();
  Rendered r;
  if (mkdtemp(pattern.data()) == nullptr) return r;
  r.dir = pattern;
  const std::filesystem::path page = r.dir / "report.html", dom_file = r.dir / "dom.html",
                              log_file = r.dir / "chromium.log";
  r.shot = r.dir / "screenshot.png";
  std::ofstream(page) << html;
  // Every host name resolves to nothing, so a request that tried to leave the file would fail
  // (and show up below); the page itself counts its resource fetches.
  const std::string command =
      "timeout 120 '" + chromium +
      "' --headless=new --no-sandbox --disable-gpu --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync --disable-extensions "
      "--host-resolver-rules='MAP * ~NOTFOUND' --enable-logging=stderr --v=0 --hide-scrollbars "
      "--user-data-dir='" +
      (r.dir / "profile").string() + "' --window-size=1200,2000 --screenshot='" + r.shot.string() +
      "' --dump-dom 'file://" + page.string() + "' >'" + dom_file.string() + "' 2>'" + log_file.string() +
      "'";
  r.status = std::system(command.c_str());
  r.dom = read_file(dom_file);
  r.log = read_file(log_file);
  return r;
}

void clean_up(const Rendered& r) {
  if (std::getenv("STEPCAST_KEEP_HTML") == nullptr) {
    std::filesystem::remove_all(r.dir);
  } else {
    std::cout << "report, DOM, log and screenshot kept in " << r.dir << "\n";
  }
}

/// What every page must do in the browser: its scripts ran to their end with `charts` charts, it
/// fetched nothing, no error was collected or logged, no text is wider than its box, and each
/// chart of `ids` painted a good share of its canvas (axes, grid, curves, bars; 560 x 360 pixels
/// or so) and left at least three quarters of its height to the plot (the legend takes at most a
/// quarter).
void expect_clean_page(const Rendered& r, const std::vector<std::string>& ids) {
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.log;
  ASSERT_FALSE(r.dom.empty()) << r.log;
  EXPECT_EQ(attribute(r.dom, "<body", "data-rendered"), "yes") << r.dom.substr(0, 3000) << "\n" << r.log;
  EXPECT_EQ(attribute(r.dom, "<body", "data-charts"), std::to_string(ids.size()));
  EXPECT_EQ(attribute(r.dom, "<body", "data-resources"), "0");
  EXPECT_EQ(attribute(r.dom, "<body", "data-overflow"), "0")
      << "text wider than its box: " << attribute(r.dom, "<body", "data-overflowing").value_or("?");
  const std::size_t errors = r.dom.find("<pre id=\"stepcast-errors\"");
  ASSERT_NE(errors, std::string::npos);
  EXPECT_EQ(between(r.dom, ">", "</pre>", errors), "") << "errors on the page";
  for (std::string_view bad : {"CONSOLE", "net::ERR_", "Failed to load", "Uncaught"})
    EXPECT_EQ(r.log.find(bad), std::string::npos) << bad << " in Chromium's log:\n" << r.log;
  for (const std::string& id : ids) {
    const std::size_t at = r.dom.find("id=\"" + id + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    const std::size_t tag = r.dom.rfind("<canvas", at);
    EXPECT_GT(std::stol(attribute(r.dom, "<canvas", "data-painted", tag).value_or("0")), 5000) << id;
    EXPECT_LE(std::stol(attribute(r.dom, "<canvas", "data-legend-share", tag).value_or("100")), 25) << id;
  }
}

/// The datasets the chart `id` drew (ideal and limit lines apart).
std::string datasets_of(const Rendered& r, const std::string& id) {
  const std::size_t at = r.dom.find("id=\"" + id + "\"");
  if (at == std::string::npos) return "?";
  return attribute(r.dom, "<canvas", "data-datasets", r.dom.rfind("<canvas", at)).value_or("?");
}

TEST(HtmlReportBrowser, RealisticSweepRendersOfflineWithoutErrors) {
  const std::string chromium = chromium_path();
  SKIP_WITHOUT_CHROMIUM(chromium);
  std::ostringstream html;
  write_html_report(html, realistic_sweep());
  const Rendered r = render(chromium, html.str());
  expect_clean_page(r, {"chart-throughput", "chart-efficiency", "chart-breakdown"});
  // The throughput and efficiency charts drew one curve per (predictor, bandwidth).
  EXPECT_EQ(datasets_of(r, "chart-throughput"), "4");
  EXPECT_EQ(datasets_of(r, "chart-efficiency"), "4");
  EXPECT_EQ(datasets_of(r, "chart-breakdown"), "3");

  // The screenshot is the window's size and not blank: many colours, a good part not white.
  const std::optional<Image> image = decode_png(r.shot.string());
  ASSERT_TRUE(image.has_value()) << "cannot decode " << r.shot;
  EXPECT_EQ(image->width, 1200u);
  EXPECT_EQ(image->height, 2000u);
  std::set<uint32_t> colours(image->rgba.begin(), image->rgba.end());
  std::size_t not_white = 0;
  for (uint32_t px : image->rgba) not_white += (px >> 8) != 0xffffffu;
  EXPECT_GT(colours.size(), 50u);
  EXPECT_GT(not_white, image->rgba.size() / 50) << "less than 2 % of the screenshot is not white";
  clean_up(r);
}

TEST(HtmlReportBrowser, ThirtyCurvesKeepTheirChartsReadable) {
  const std::string chromium = chromium_path();
  SKIP_WITHOUT_CHROMIUM(chromium);
  Sweep sweep = many_curves(30);
  set_memory(sweep.predictions[5], 90e9, 80e9);  // one that does not fit, marked
  std::ostringstream html;
  write_html_report(html, sweep);
  const Rendered r = render(chromium, html.str());
  expect_clean_page(r, {"chart-throughput", "chart-efficiency", "chart-breakdown"});
  EXPECT_EQ(datasets_of(r, "chart-throughput"), "30");
  EXPECT_EQ(datasets_of(r, "chart-efficiency"), "30");
  clean_up(r);
}

TEST(HtmlReportBrowser, PlanAndAdvicePagesRenderWithoutErrors) {
  const std::string chromium = chromium_path();
  SKIP_WITHOUT_CHROMIUM(chromium);
  {
    std::ostringstream html;
    write_plan_html(html, plan_of({256, 512, 1024}, 10));
    const Rendered r = render(chromium, html.str());
    expect_clean_page(r, {"chart-plan-tokens", "chart-plan-mfu", "chart-plan-memory"});
    EXPECT_EQ(datasets_of(r, "chart-plan-tokens"), "2");  // fine and coarse
    EXPECT_EQ(datasets_of(r, "chart-plan-memory"), "1");  // and the limit line
    clean_up(r);
  }
  {
    Sweep sweep = swept();
    for (Result& p : sweep.predictions) set_memory(p, 60e9, 80e9);
    set_memory(sweep.predictions[1], 90e9, 80e9);
    std::ostringstream html;
    write_advice_html(html, advice_of(sweep));
    const Rendered r = render(chromium, html.str());
    expect_clean_page(r, {"chart-throughput", "chart-efficiency", "chart-breakdown"});
    clean_up(r);
  }
}

}  // namespace html_report_test
}  // namespace
}  // namespace stepcast::report
