// The HTML report: one self-contained page (Chart.js inlined, nothing remote), every text from
// the sweep escaped, the chart data a JSON island with one curve per (predictor, configuration),
// and, in headless Chromium when it is installed, a page that renders offline without errors.
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
  if (workers > 1) r.links = {{"nic-out-0", 0.8}, {"nic-in-1", 0.75}};
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
  const simdjson::dom::element data = chart_data(parser, html_of(swept()));
  const simdjson::dom::array groups = data["groups"];
  ASSERT_EQ(groups.size(), 4u);
  const std::array<std::string_view, 4> labels{"fine, training.ps.count=2", "coarse, training.ps.count=2",
                                               "fine, training.ps.count=4", "coarse, training.ps.count=4"};
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
  // Peaks: worker compute 1.0, NIC out 0.8, link nic-out-0 0.8, link nic-in-1 0.75, hostile 0.5.
  const std::size_t compute = heat->find("<td>resource</td><td>worker compute</td>");
  const std::size_t nic = heat->find("<td>resource</td><td>worker NIC out</td>");
  const std::size_t link0 = heat->find("<td>link</td><td>nic-out-0</td>");
  const std::size_t link1 = heat->find("<td>link</td><td>nic-in-1</td>");
  ASSERT_NE(link1, std::string::npos);
  EXPECT_LT(compute, nic);
  EXPECT_LT(nic, link0);
  EXPECT_LT(link0, link1);
  // One column per prediction: the header lists 12 predictions; one worker reports no links.
  EXPECT_EQ(count(*heat, "<th>"), 2u + 12u);
  EXPECT_NE(heat->find("<td class=\"na\">&ndash;</td>"), std::string::npos);
  EXPECT_NE(heat->find("title=\"80.0 % busy\">80 %</td>"), std::string::npos);
  EXPECT_NE(heat->find("background:hsl(8,80%,40%);color:#fff"), std::string::npos);  // 100 % busy
  EXPECT_NE(heat->find("The 5 busiest of 5 rows"), std::string::npos);
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

TEST(HtmlReportBrowser, RealisticSweepRendersOfflineWithoutErrors) {
  const char* override_path = std::getenv("STEPCAST_CHROMIUM");
  const std::string chromium = override_path != nullptr ? override_path : "/usr/bin/chromium";
  if (!std::filesystem::exists(chromium))
    GTEST_SKIP() << chromium << " not found: install Debian's chromium (STEPCAST_WITH_BROWSER=1 "
                 << "scripts/install-deps.sh) to run the browser test";

  std::string pattern = (std::filesystem::path(::testing::TempDir()) / "stepcast-html-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path dir = pattern;
  const std::filesystem::path page = dir / "report.html", dom_file = dir / "dom.html",
                              log_file = dir / "chromium.log", shot = dir / "screenshot.png";
  {
    std::ofstream out(page);
    write_html_report(out, realistic_sweep());
    ASSERT_TRUE(out.good());
  }
  // Every host name resolves to nothing, so a request that tried to leave the file would fail
  // (and show up below); the page itself counts its resource fetches.
  const std::string command =
      "timeout 120 '" + chromium +
      "' --headless=new --no-sandbox --disable-gpu --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync --disable-extensions "
      "--host-resolver-rules='MAP * ~NOTFOUND' --enable-logging=stderr --v=0 --hide-scrollbars "
      "--user-data-dir='" +
      (dir / "profile").string() + "' --window-size=1200,2000 --screenshot='" + shot.string() +
      "' --dump-dom 'file://" + page.string() + "' >'" + dom_file.string() + "' 2>'" + log_file.string() +
      "'";
  const int status = std::system(command.c_str());
  const std::string dom = read_file(dom_file), log = read_file(log_file);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command << "\n" << log;
  ASSERT_FALSE(dom.empty()) << log;

  // The drawing script ran to its end: three charts, nothing fetched, no error collected.
  EXPECT_EQ(attribute(dom, "<body", "data-rendered"), "yes") << dom.substr(0, 3000) << "\n" << log;
  EXPECT_EQ(attribute(dom, "<body", "data-charts"), "3");
  EXPECT_EQ(attribute(dom, "<body", "data-resources"), "0");
  const std::size_t errors = dom.find("<pre id=\"stepcast-errors\"");
  ASSERT_NE(errors, std::string::npos);
  EXPECT_EQ(between(dom, ">", "</pre>", errors), "") << "errors on the page";
  for (std::string_view bad : {"CONSOLE", "net::ERR_", "Failed to load", "Uncaught"})
    EXPECT_EQ(log.find(bad), std::string::npos) << bad << " in Chromium's log:\n" << log;

  // Each chart painted a good share of its canvas (axes, grid, curves, bars; 560 x 360 pixels or
  // so), and the throughput and efficiency charts drew one curve per (predictor, bandwidth).
  for (std::string_view id : {"chart-throughput", "chart-efficiency", "chart-breakdown"}) {
    const std::size_t at = dom.find("id=\"" + std::string(id) + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    const std::size_t tag = dom.rfind("<canvas", at);
    const std::string painted = attribute(dom, "<canvas", "data-painted", tag).value_or("0");
    EXPECT_GT(std::stol(painted), 5000) << id;
    const std::string datasets = attribute(dom, "<canvas", "data-datasets", tag).value_or("?");
    EXPECT_EQ(datasets, id == "chart-breakdown" ? "3" : "4") << id;
  }

  // The screenshot is the window's size and not blank: many colours, a good part not white.
  const std::optional<Image> image = decode_png(shot.string());
  ASSERT_TRUE(image.has_value()) << "cannot decode " << shot;
  EXPECT_EQ(image->width, 1200u);
  EXPECT_EQ(image->height, 2000u);
  std::set<uint32_t> colours(image->rgba.begin(), image->rgba.end());
  std::size_t not_white = 0;
  for (uint32_t px : image->rgba) not_white += (px >> 8) != 0xffffffu;
  EXPECT_GT(colours.size(), 50u);
  EXPECT_GT(not_white, image->rgba.size() / 50) << "less than 2 % of the screenshot is not white";

  if (std::getenv("STEPCAST_KEEP_HTML") == nullptr) {
    std::filesystem::remove_all(dir);
  } else {
    std::cout << "report, DOM, log and screenshot kept in " << dir << "\n";
  }
}

}  // namespace html_report_test
}  // namespace
}  // namespace stepcast::report
