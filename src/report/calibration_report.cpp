// write_json / write_table of a ring all-reduce calibration (`stepcast calibrate nccl-tests`) and
// of a GEMM table's check (`stepcast calibrate gemm`).
#include "stepcast/detail/report/calibration_report.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "report/json_text.hpp"
#include "stepcast/enum_names.hpp"

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
    // The network hops' own scale, fitted across node counts; null: latency_scale (one node count).
    json.key("net_latency_scale");
    if (c.nccl.net_latency_scale) {
      json.number(*c.nccl.net_latency_scale);
    } else {
      json.null();
    }
    json.key("node_counts");
    json.begin_array();
    for (const calibrate::NodeCountScore& n : c.node_counts) {
      json.begin_object();
      json.key("workers");
      json.number(n.workers);
      json.key("nodes");
      json.number(n.nodes);
      json.key("median_error");
      json.number(n.median_error);
      json.key("max_error");
      json.number(n.max_error);
      json.key("summary_count");
      json.number(n.summary_count);
      json.end_object();
    }
    json.end_array();
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
    // The channels' speed (a cap on every protocol's bus bandwidth): fitted, or null when none.
    json.key("channels_bandwidth_Bps");
    if (c.nccl.channels_bw > 0) {
      json.number(c.nccl.channels_bw);
    } else {
      json.null();
    }
    json.key("channels_fitted_bandwidth_Bps");
    json.number(c.nccl_channels_fitted_bw);
    json.key("channels_gain");
    json.number(c.nccl_channels_gain);
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

namespace {

/// {min, max, count} of a grid axis.
void write_axis(JsonWriter& json, const std::set<int64_t>& values) {
  json.begin_object();
  json.key("min");
  json.integer(*values.begin());
  json.key("max");
  json.integer(*values.rbegin());
  json.key("count");
  json.integer(values.size());
  json.end_object();
}

void optional_number(JsonWriter& json, const std::optional<double>& value) {
  if (value) {
    json.number(*value);
  } else {
    json.null();
  }
}

}  // namespace

void write_json(std::ostream& out, const GemmCalibrationReport& report) {
  const calibrate::GemmCalibration& c = report.calibration;
  JsonWriter json(out, JsonWriter::Layout::OneLine);
  json.begin_object();
  json.key("table");
  json.begin_object();
  json.key("file");
  json.string(c.table.file);
  json.key("header");
  json.begin_array();
  for (const std::string& line : c.header) json.string(line);
  json.end_array();
  json.key("grids");
  json.begin_array();
  for (const calibrate::GemmGrid& g : calibrate::gemm_grids(c.table)) {
    json.begin_object();
    json.key("dtype");
    json.string(name_of(g.dtype));
    json.key("rows");
    json.integer(g.rows);
    json.key("m");
    write_axis(json, g.m);
    json.key("n");
    write_axis(json, g.n);
    json.key("k");
    write_axis(json, g.k);
    json.end_object();
  }
  json.end_array();
  json.end_object();
  json.key("attention_flops_per_s");
  optional_number(json, c.attention_flops);
  json.key("memory_bandwidth_Bps");
  optional_number(json, c.memory_bw);
  json.key("check_file");
  if (c.check_file.empty()) {
    json.null();
  } else {
    json.string(c.check_file);
  }
  json.key("held_back");
  json.begin_array();
  for (const calibrate::GemmCheck& check : c.held_back) {
    const cluster::GemmRow& r = check.measured;
    json.begin_object();
    json.key("m");
    json.integer(r.m);
    json.key("n");
    json.integer(r.n);
    json.key("k");
    json.integer(r.k);
    json.key("dtype");
    json.string(name_of(r.dtype));
    json.key("line");
    json.integer(r.line);
    json.key("measured_s");
    json.number(r.seconds);
    json.key("predicted_s");
    json.number(check.predicted);
    json.key("error");
    json.number(check.error);
    json.key("clamped");
    json.boolean(check.clamped);
    json.end_object();
  }
  json.end_array();
  json.key("summary");
  if (c.check_file.empty()) {
    json.null();
  } else {
    json.begin_object();
    json.key("count");
    json.integer(c.held_back.size());
    json.key("median_error");
    json.number(c.median_error);
    json.key("mean_error");
    json.number(c.mean_error);
    json.key("max_error");
    json.number(c.max_error);
    json.end_object();
  }
  json.key("output");
  if (report.output.empty()) {
    json.null();
  } else {
    json.string(report.output);
  }
  json.end_object();
}

void write_table(std::ostream& out, const GemmCalibrationReport& report) {
  std::string text = calibrate::gemm_calibration_text(report.calibration);
  if (!report.output.empty()) text += fmt::format("wrote {}\n", report.output);
  out << text;
}

}  // namespace stepcast::report
