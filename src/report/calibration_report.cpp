// write_json / write_table of a ring all-reduce calibration (`stepcast calibrate nccl-tests`).
#include "stepcast/detail/report/calibration_report.hpp"

#include <fmt/format.h>

#include <iterator>
#include <string_view>
#include <utility>

#include "report/json_text.hpp"

namespace stepcast::report {
namespace {

using calibrate::FitMethod;
using detail::JsonWriter;

void write_regime(JsonWriter& json, const calibrate::Regime& r) {
  json.begin_object();
  for (const auto& [key, value] : {std::pair<std::string_view, double>{"from_bytes", r.from_bytes},
                                   {"first_bytes", r.first_bytes},
                                   {"last_bytes", r.last_bytes}}) {
    json.key(key);
    json.number(value);
  }
  json.key("count");
  json.integer(r.count);
  json.key("step_latency_s");
  json.number(r.step_latency);
  json.key("bandwidth_Bps");
  json.number(r.bw);
  json.key("latency_clamped");
  json.boolean(r.latency_clamped);
  json.end_object();
}

void write_size(JsonWriter& json, const calibrate::SizeError& e) {
  json.begin_object();
  json.key("bytes");
  json.number(e.bytes);
  json.key("measured_s");
  json.number(e.measured);
  json.key("predicted_s");
  json.number(e.predicted);
  json.key("error");
  json.number(e.error);
  json.key("used");
  json.boolean(e.used);
  json.key("line");
  json.integer(e.line);
  json.key("loo_predicted_s");
  json.number(e.loo_predicted);
  json.key("loo_error");
  json.number(e.loo_error);
  json.end_object();
}

}  // namespace

void write_json(std::ostream& out, const CalibrationReport& report) {
  const calibrate::Calibration& c = report.calibration;
  const calibrate::CalibrationSource& source = report.source;
  const bool regimes = c.options.method == FitMethod::Regimes;
  JsonWriter json(out, JsonWriter::Layout::OneLine);
  json.begin_object();
  json.key("source");
  json.begin_object();
  json.key("file");
  json.string(source.file);
  json.key("format");
  json.string(calibrate::to_string(source.format));
  json.key("placement");
  // The names the command line takes (--fit, --in-place), so the JSON reads like the command.
  json.string(name_c_str(source.placement));
  json.key("workers");
  json.integer(c.fit.workers);
  json.key("workers_per_node");
  json.integer(source.workers_per_node);
  json.end_object();
  json.key("method");
  json.string(calibrate::to_string(c.options.method));
  json.key("step_latency_s");
  json.number(c.fit.step_latency);
  json.key("bandwidth_Bps");
  json.number(c.fit.bw);
  json.key("latency_clamped");
  json.boolean(c.latency_clamped);
  json.key("regimes");
  json.begin_array();
  if (regimes) {
    for (const calibrate::Regime& r : c.regimes.regimes) write_regime(json, r);
  }
  json.end_array();
  json.key("nccl");
  if (c.options.method == FitMethod::Nccl) {
    json.begin_object();
    json.key("nic_bandwidth_Bps");
    json.number(c.nccl.nic_bw);
    json.key("latency_scale");
    json.number(c.nccl.latency_scale);
    // LL's cap: fitted, or null when NCCL's table (by node count) stays.
    json.key("ll_bandwidth_Bps");
    if (c.nccl.ll_bw > 0) {
      json.number(c.nccl.ll_bw);
    } else {
      json.null();
    }
    json.key("ll_fitted_bandwidth_Bps");
    json.number(c.nccl_ll_fitted_bw);
    json.key("ll_gain");
    json.number(c.nccl_ll_gain);
    json.key("channels");
    json.number(cluster::nccl_channels(c.nccl.spec(c.nccl.workers)));
    json.end_object();
  } else {
    json.null();
  }
  json.key("regime_scores");
  json.begin_array();
  // Infinity where that many regimes do not fit: null, as JSON has no infinity.
  for (double score : c.regime_scores) json.number(score);
  json.end_array();
  json.key("sizes");
  json.begin_array();
  for (const calibrate::SizeError& e : c.sizes) write_size(json, e);
  json.end_array();
  json.key("summary");
  json.begin_object();
  json.key("min_bytes");
  json.number(c.options.report_min_bytes);
  json.key("count");
  json.integer(c.summary_count);
  json.key("median_error");
  json.number(c.median_error);
  json.key("max_error");
  json.number(c.max_error);
  json.key("in_sample");
  json.boolean(c.summary_in_sample);
  json.end_object();
  json.key("output");
  if (report.output.empty()) {
    json.null();
  } else {
    json.string(report.output);
  }
  json.end_object();
}

void write_table(std::ostream& out, const CalibrationReport& report) {
  const calibrate::Calibration& c = report.calibration;
  fmt::memory_buffer buf;
  auto it = std::back_inserter(buf);
  fmt::format_to(it, "{}\n{}",
                 c.options.method == FitMethod::Regimes ? "ring all-reduce calibration in size regimes"
                 : c.options.method == FitMethod::Nccl  ? "all-reduce calibration of NCCL's tuning model"
                                                        : "ring all-reduce calibration",
                 calibration_header(c, report.source));
  if (!report.output.empty()) fmt::format_to(it, "wrote the cluster keys to {}\n", report.output);
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

}  // namespace stepcast::report
