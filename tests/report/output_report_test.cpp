// The one JSON writer and the reports of `collective` and `inspect`, on hand-built values: the
// JSON parses (simdjson, the library the readers use), non-finite numbers are null, and every
// field is there with its unit in its name.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>

#include "report/json_text.hpp"
#include "stepcast/detail/report/calibration_report.hpp"
#include "stepcast/detail/report/collective_report.hpp"
#include "stepcast/detail/report/inspect_report.hpp"

namespace stepcast::report {
namespace {
namespace output_report_test {  // this file's own names: test files are compiled several to a unit

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Parses `text` with simdjson's DOM API; fails the test (and returns a null element) when it is
/// not one valid JSON document. The parser must outlive the element.
simdjson::dom::element parse(simdjson::dom::parser& parser, const std::string& text) {
  simdjson::dom::element doc;
  const auto error = parser.parse(text).get(doc);
  EXPECT_EQ(error, simdjson::SUCCESS) << simdjson::error_message(error) << "\n" << text;
  return doc;
}

bool is_null(simdjson::dom::element e) { return e.type() == simdjson::dom::element_type::NULL_VALUE; }

template <typename Value>
std::string render(void (*write)(std::ostream&, const Value&), const Value& value) {
  std::ostringstream out;
  write(out, value);
  return out.str();
}

// ---- JsonWriter

TEST(JsonWriter, OneLineLayoutSeparatesWithCommaSpaceAndEndsWithANewline) {
  std::ostringstream out;
  {
    detail::JsonWriter json(out, detail::JsonWriter::Layout::OneLine);
    json.begin_object();
    json.key("a");
    json.integer(1);
    json.key("b");
    json.begin_array();
    json.number(0.5);
    json.string("x\"y");
    json.boolean(true);
    json.null();
    json.end_array();
    json.key("c");
    json.begin_object();
    json.end_object();
    json.key("d");
    json.begin_array();
    json.end_array();
    json.end_object();
  }
  EXPECT_EQ(out.str(), "{\"a\": 1, \"b\": [0.5, \"x\\\"y\", true, null], \"c\": {}, \"d\": []}\n");
}

TEST(JsonWriter, IndentedLayoutPutsOneMemberPerLine) {
  std::ostringstream out;
  {
    detail::JsonWriter json(out);
    json.begin_object();
    json.key("a");
    json.begin_array();
    json.integer(1);
    json.integer(2);
    json.end_array();
    json.key("b");
    json.begin_object();
    json.end_object();
    json.end_object();
  }
  EXPECT_EQ(out.str(), "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}\n");
}

TEST(JsonWriter, NonFiniteNumbersAndAbsentIntegersAreNull) {
  for (const auto layout : {detail::JsonWriter::Layout::OneLine, detail::JsonWriter::Layout::Indented}) {
    std::ostringstream out;
    {
      detail::JsonWriter json(out, layout);
      json.begin_array();
      for (double x : {kNaN, kInf, -kInf}) json.number(x);
      json.integer(std::optional<int>{});
      json.integer(std::optional<int>{7});
      json.end_array();
    }
    simdjson::dom::parser parser;
    const simdjson::dom::element doc = parse(parser, out.str());
    simdjson::dom::array a;
    ASSERT_EQ(doc.get_array().get(a), simdjson::SUCCESS) << out.str();
    ASSERT_EQ(a.size(), 5u) << out.str();
    for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(is_null(a.at(i).value())) << i << ": " << out.str();
    EXPECT_EQ(int64_t(a.at(4)), 7);
  }
}

TEST(JsonWriter, DoublesRoundTrip) {
  std::ostringstream out;
  {
    detail::JsonWriter json(out, detail::JsonWriter::Layout::OneLine);
    json.begin_array();
    for (double x : {0.1 + 0.2, 1e-300, -123456789.125, 5e-324}) json.number(x);
    json.end_array();
  }
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parse(parser, out.str());
  const double expected[] = {0.1 + 0.2, 1e-300, -123456789.125, 5e-324};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(double(doc.at(i)), expected[i]) << out.str();
}

// ---- collective

CollectiveReport make_collective() {
  CollectiveReport r;
  r.op = scheme::CollectiveOp::AllReduce;
  r.algorithm = scheme::AllReduceAlgorithm::Ring;
  r.cluster.workers = 4;
  r.bytes = 100e6;
  r.result.time = 0.02;
  r.result.stages = 6;
  r.result.max_link_flows = 1;
  for (int i = 0; i < 12; ++i) {
    r.result.links.push_back({.name = "link \"" + std::to_string(i) + "\"", .busy = 0.5, .bytes = 75e6});
  }
  return r;
}

TEST(CollectiveReport, BandwidthsFollowNcclTests) {
  CollectiveReport r = make_collective();
  // 100 MB in 20 ms: algbw 5 GB/s; all-reduce of 4: busbw = 5 x 2 (3) / 4 = 7.5 GB/s.
  EXPECT_DOUBLE_EQ(algorithm_bandwidth(r), 5e9);
  EXPECT_DOUBLE_EQ(bus_bandwidth(r), 7.5e9);
  r.op = scheme::CollectiveOp::AllGather;
  EXPECT_DOUBLE_EQ(bus_bandwidth(r), 3.75e9);
  r.op = scheme::CollectiveOp::Broadcast;
  EXPECT_DOUBLE_EQ(bus_bandwidth(r), 5e9);
  r.result.time = 0;
  EXPECT_EQ(algorithm_bandwidth(r), 0);
}

TEST(CollectiveReport, JsonHasEveryFieldWithUnits) {
  CollectiveReport r = make_collective();
  r.cluster.collective_regimes = {{.from_bytes = 0, .step_latency = 4e-6, .bw = 17e9},
                                  {.from_bytes = 1 << 20, .step_latency = 5e-6, .bw = 38e9}};
  const std::string text = render(write_json, r);
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "one line: " << text;
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parse(parser, text);
  EXPECT_EQ(std::string_view(doc["op"]), "allreduce");
  EXPECT_EQ(std::string_view(doc["algorithm"]), "ring");
  EXPECT_EQ(int64_t(doc["workers"]), 4);
  EXPECT_EQ(double(doc["size_bytes"]), 100e6);
  EXPECT_EQ(double(doc["time_s"]), 0.02);
  EXPECT_DOUBLE_EQ(double(doc["algbw_GBps"]), 5);
  EXPECT_DOUBLE_EQ(double(doc["busbw_GBps"]), 7.5);
  EXPECT_EQ(int64_t(doc["steps"]), 6);
  EXPECT_EQ(int64_t(doc["max_link_flows"]), 1);
  EXPECT_EQ(double(doc["regime"]["from_bytes"]), 1 << 20);
  EXPECT_EQ(double(doc["regime"]["step_latency_s"]), 5e-6);
  EXPECT_EQ(double(doc["regime"]["bandwidth_Bps"]), 38e9);
  simdjson::dom::array links;
  ASSERT_EQ(doc["links"].get_array().get(links), simdjson::SUCCESS);
  EXPECT_EQ(links.size(), 10u);  // the ten busiest of twelve
  EXPECT_EQ(int64_t(doc["links_left_out"]), 2);
  EXPECT_EQ(std::string_view(links.at(0)["name"]), "link \"0\"");
  EXPECT_EQ(double(links.at(0)["busy"]), 0.5);
  EXPECT_EQ(double(links.at(0)["bytes"]), 75e6);
  EXPECT_NE(text.find("\"topology\": "), std::string::npos) << text;
}

TEST(CollectiveReport, AllLinksKeepsEveryLinkAndTheTableCountsTheOthers) {
  CollectiveReport r = make_collective();
  r.links_shown = 0;  // collective --all-links
  const std::string text = render(write_json, r);
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parse(parser, text);
  EXPECT_EQ(doc["links"].get_array().size(), 12u);
  EXPECT_EQ(int64_t(doc["links_left_out"]), 0);
  r.links_shown = 5;
  const std::string table = render(write_table, r);
  EXPECT_NE(table.find("... and 7 more links (--all-links lists them)"), std::string::npos) << table;
}

TEST(CollectiveReport, NonFiniteTimeIsNullAndNoRegimeIsNull) {
  CollectiveReport r = make_collective();
  r.result.time = kInf;
  r.result.links[0].busy = kNaN;
  const std::string text = render(write_json, r);
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parse(parser, text);
  EXPECT_TRUE(is_null(doc["time_s"])) << text;
  EXPECT_TRUE(is_null(doc["regime"])) << text;
  EXPECT_TRUE(is_null(doc["links"].at(0)["busy"])) << text;
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  EXPECT_EQ(text.find("inf"), std::string::npos) << text;
}

TEST(CollectiveReport, TableNamesUnits) {
  const std::string text = render(write_table, make_collective());
  for (const char* part : {"allreduce (ring) of 100 MB over 4 workers", "algbw            5.00 GB/s",
                           "busbw            7.50 GB/s", "steps            6", "busiest links:"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  }
  EXPECT_EQ(text.find("regime"), std::string::npos) << text;
}

// ---- inspect

profile::TraceSummary make_summary() {
  profile::TraceSummary s;
  s.file = "rank0.json";
  s.metadata.framework = "pytorch";
  s.metadata.devices = {{.id = 0, .name = "GPU \"A\"", .memory_bytes = 40e9, .num_sms = 108}};
  s.metadata.world_size = 2;  // rank not recorded: null
  s.devices_used = {0};
  s.num_events = 100;
  s.steps = {{.name = "ProfilerStep#1", .number = 1, .duration = 0.2, .steady = false, .note = "warm-up"},
             {.name = "ProfilerStep#2", .number = 2, .duration = 0.1, .gpu_busy = 0.09, .note = ""}};
  s.step_time = {.count = 1, .mean = 0.1, .p50 = 0.1, .p95 = 0.1, .min = 0.1, .max = 0.1, .stddev = 0};
  s.per_step = {.step = 0.1, .gpu_busy = 0.09, .compute = 0.08, .communication = 0.02, .overlap = 0.01};
  s.collectives = {{.step = "ProfilerStep#2",
                    .collective = "allreduce",
                    .dtype = "Float",
                    .nelems = 10,
                    .bytes = 40,
                    .group_size = 2,
                    .process_group_ranks = "[0, 1]",
                    .kernel_name = "ncclKernel",
                    .device = 0,
                    .stream = 7,
                    .start = 0.01,
                    .duration = 0.002}};
  s.collective_groups = {{.collective = "allreduce",
                          .dtype = "Float",
                          .bytes = 40,
                          .group_size = 2,
                          .count = 1,
                          .total_duration = 0.002,
                          .mean_duration = 0.002,
                          .min_duration = 0.002,
                          .max_duration = 0.002}};
  s.warnings = {"skipped 1 event"};
  s.num_warnings = 3;
  return s;
}

TEST(InspectReport, JsonHasEveryFieldWithUnits) {
  const std::string text = render(write_json, make_summary());
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "one line: " << text;
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parse(parser, text);
  for (const char* key : {"file",
                          "framework",
                          "devices",
                          "devices_used",
                          "rank",
                          "world_size",
                          "backend",
                          "nccl_version",
                          "num_events",
                          "steps_found",
                          "steady_steps",
                          "step_time_s",
                          "step_time_all_s",
                          "not_steady",
                          "per_step_s",
                          "steps",
                          "collectives_by_type",
                          "collectives",
                          "num_warnings",
                          "warnings"}) {
    EXPECT_EQ(doc[key].error(), simdjson::SUCCESS) << key << "\n" << text;
  }
  EXPECT_TRUE(is_null(doc["rank"])) << text;
  EXPECT_EQ(int64_t(doc["world_size"]), 2);
  EXPECT_EQ(std::string_view(doc["devices"].at(0)["name"]), "GPU \"A\"");
  EXPECT_EQ(double(doc["devices"].at(0)["memory_bytes"]), 40e9);
  EXPECT_TRUE(bool(doc["devices"].at(0)["used"]));
  EXPECT_EQ(int64_t(doc["steps_found"]), 2);
  EXPECT_EQ(std::string_view(doc["not_steady"].at(0)), "ProfilerStep#1");
  EXPECT_EQ(double(doc["step_time_s"]["mean"]), 0.1);
  EXPECT_DOUBLE_EQ(double(doc["per_step_s"]["compute_only"]), 0.07);
  EXPECT_DOUBLE_EQ(double(doc["per_step_s"]["communication_exposed"]), 0.01);
  const simdjson::dom::element step = doc["steps"].at(1);
  for (const char* key : {"start_s", "duration_s", "kernel_compute_sum_s", "nccl_kernel_sum_s", "gpu_busy_s",
                          "compute_s", "communication_s", "overlap_s", "idle_s"}) {
    EXPECT_EQ(step[key].error(), simdjson::SUCCESS) << key;
  }
  EXPECT_EQ(double(step["gpu_busy_s"]), 0.09);
  EXPECT_FALSE(bool(doc["steps"].at(0)["steady"]));
  for (const char* key : {"total_duration_s", "mean_duration_s", "min_duration_s", "max_duration_s"}) {
    EXPECT_EQ(double(doc["collectives_by_type"].at(0)[key]), 0.002) << key;
  }
  const simdjson::dom::element c = doc["collectives"].at(0);
  EXPECT_EQ(std::string_view(c["kernel"]), "ncclKernel");
  EXPECT_EQ(int64_t(c["stream"]), 7);
  EXPECT_EQ(double(c["bytes"]), 40);
  EXPECT_EQ(double(c["duration_s"]), 0.002);
  EXPECT_EQ(int64_t(doc["num_warnings"]), 3);
}

TEST(InspectReport, NonFiniteNumbersAreNull) {
  profile::TraceSummary s = make_summary();
  s.step_time.mean = kNaN;
  s.per_step.idle = kInf;
  s.steps[1].duration = -kInf;
  const std::string text = render(write_json, s);
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parse(parser, text);
  EXPECT_TRUE(is_null(doc["step_time_s"]["mean"])) << text;
  EXPECT_TRUE(is_null(doc["per_step_s"]["idle"])) << text;
  EXPECT_TRUE(is_null(doc["steps"].at(1)["duration_s"])) << text;
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  EXPECT_EQ(text.find("inf"), std::string::npos) << text;
}

TEST(InspectReport, TableNamesUnitsAndSurvivesASummaryWithoutSteps) {
  const std::string text = render(write_table, make_summary());
  for (const char* part :
       {"framework   pytorch", "rank ? of world size 2", "2 found (ProfilerStep#1 .. ProfilerStep#2)",
        "not steady: ProfilerStep#1 (200.000 ms): warm-up", "mean 100.000 ms", "allreduce", "... 2 more"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  }
  const std::string empty = render(write_table, profile::TraceSummary{});
  EXPECT_NE(empty.find("steps       0 found"), std::string::npos) << empty;
  const std::string empty_json = render(write_json, profile::TraceSummary{});
  simdjson::dom::parser parser;
  (void)parse(parser, empty_json);
}

// ---- calibrate

CalibrationReport make_calibration() {
  CalibrationReport r;
  calibrate::Calibration& c = r.calibration;
  c.fit = {.workers = 16, .step_latency = 4e-6, .bw = 300e9};
  c.options.method = calibrate::FitMethod::Regimes;
  c.regimes.workers = 16;
  c.regimes.regimes = {{.from_bytes = 0,
                        .first_bytes = 8,
                        .last_bytes = 1024,
                        .count = 8,
                        .step_latency = 4e-6,
                        .bw = 17e9,
                        .latency_clamped = false},
                       {.from_bytes = 2048,
                        .first_bytes = 4096,
                        .last_bytes = 1 << 30,
                        .count = 20,
                        .step_latency = 30e-6,
                        .bw = 300e9,
                        .latency_clamped = true}};
  c.regime_scores = {0.2, 0.01, kInf};
  c.sizes = {{.bytes = 8,
              .measured = 1e-4,
              .predicted = 1.1e-4,
              .error = 0.1,
              .used = true,
              .line = 12,
              .loo_predicted = 1.2e-4,
              .loo_error = 0.2}};
  c.summary_count = 1;
  c.median_error = 0.2;
  c.max_error = 0.2;
  r.source = {.file = "sweep.log",
              .format = calibrate::LogFormat::NcclTests,
              .placement = calibrate::Placement::InPlace,
              .workers_per_node = 8};
  return r;
}

TEST(CalibrationReport, JsonHasEveryFieldWithUnitsAndNullForInfiniteScores) {
  const CalibrationReport r = make_calibration();
  const std::string text = render(write_json, r);
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "one line: " << text;
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parse(parser, text);
  EXPECT_EQ(std::string_view(doc["source"]["file"]), "sweep.log");
  EXPECT_EQ(std::string_view(doc["source"]["placement"]), "in-place");
  EXPECT_EQ(int64_t(doc["source"]["workers"]), 16);
  EXPECT_EQ(int64_t(doc["source"]["workers_per_node"]), 8);
  EXPECT_EQ(std::string_view(doc["method"]), "regimes");
  EXPECT_EQ(double(doc["step_latency_s"]), 4e-6);
  EXPECT_EQ(double(doc["bandwidth_Bps"]), 300e9);
  EXPECT_EQ(doc["regimes"].get_array().size(), 2u);
  EXPECT_EQ(double(doc["regimes"].at(1)["from_bytes"]), 2048);
  EXPECT_EQ(double(doc["regimes"].at(1)["step_latency_s"]), 30e-6);
  EXPECT_EQ(double(doc["regimes"].at(1)["bandwidth_Bps"]), 300e9);
  EXPECT_TRUE(bool(doc["regimes"].at(1)["latency_clamped"]));
  EXPECT_EQ(double(doc["regime_scores"].at(1)), 0.01);
  EXPECT_TRUE(is_null(doc["regime_scores"].at(2))) << text;
  const simdjson::dom::element size = doc["sizes"].at(0);
  EXPECT_EQ(double(size["bytes"]), 8);
  EXPECT_EQ(double(size["measured_s"]), 1e-4);
  EXPECT_EQ(double(size["predicted_s"]), 1.1e-4);
  EXPECT_EQ(double(size["loo_predicted_s"]), 1.2e-4);
  EXPECT_EQ(double(size["loo_error"]), 0.2);
  EXPECT_EQ(int64_t(size["line"]), 12);
  EXPECT_EQ(int64_t(doc["summary"]["count"]), 1);
  EXPECT_EQ(double(doc["summary"]["min_bytes"]), 1 << 20);
  EXPECT_TRUE(is_null(doc["output"])) << text;
}

TEST(CalibrationReport, TableHasTheTitleTheHeaderAndTheOutput) {
  CalibrationReport r = make_calibration();
  r.output = "calib.yaml";
  const std::string text = render(write_table, r);
  EXPECT_EQ(text.rfind("ring all-reduce calibration in size regimes\n", 0), 0u) << text;
  EXPECT_NE(text.find(calibration_header(r.calibration, r.source)), std::string::npos) << text;
  EXPECT_NE(text.find("wrote the cluster keys to calib.yaml\n"), std::string::npos) << text;
}

}  // namespace output_report_test
}  // namespace
}  // namespace stepcast::report
