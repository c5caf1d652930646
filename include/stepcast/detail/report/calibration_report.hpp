// The report of `stepcast calibrate nccl-tests`: a ring all-reduce calibration and where its
// sweep came from, as a value, written as JSON for programs, as text for people, or as the YAML
// scenario fragment of the fitted cluster keys (calibration_yaml, headed by the same text as
// comments). calibrate/ computes; every word and number it prints is written here. Depends on
// calibrate/ (Calibration, CalibrationSource); SI units inside, units in the printed names
// ("step_latency_s", "bandwidth_Bps"; errors are fractions, 0.01 = 1%).
//
//   const calibrate::Calibration c = calibrate::calibrate_ring(log.points, 16, {});
//   report::write_json(std::cout, {.calibration = c, .source = {.file = log.file}});
#pragma once

#include <ostream>
#include <string>

#include "stepcast/detail/calibrate/gemm_calibration.hpp"
#include "stepcast/detail/calibrate/ring_calibration.hpp"

namespace stepcast::report {

struct CalibrationReport {
  calibrate::Calibration calibration;
  calibrate::CalibrationSource source;
  std::string output;  ///< where the cluster keys were written (calibration_yaml); "" for nowhere
  bool operator==(const CalibrationReport&) const = default;
};

/// One JSON object on one line: source {file, format, placement, workers, workers_per_node},
/// method, step_latency_s and bandwidth_Bps (the fit; with regimes their envelope, what the
/// links are set to), latency_clamped, regimes (with regimes: from_bytes, first_bytes,
/// last_bytes, count, step_latency_s, bandwidth_Bps, latency_clamped; else []), regime_scores
/// (leave-one-out mean |error| per number of regimes), sizes (bytes, measured_s, predicted_s,
/// error, used, line, loo_predicted_s, loo_error), summary {min_bytes, count, median_error,
/// max_error, in_sample}, output (null when none). Non-finite numbers are written as null.
void write_json(std::ostream& out, const CalibrationReport& report);
/// A title line, calibration_header (source, model, fit, per-size errors) and, when
/// the keys were written, where.
void write_table(std::ostream& out, const CalibrationReport& report);

/// The per-size table (size, measured, predicted, error, used; Regimes adds the regime and the
/// leave-one-out error) and the held-out summary, as plain text lines; `prefix` starts every line
/// (e.g. "# " for YAML comments).
[[nodiscard]] std::string error_table(const calibrate::Calibration& calibration, const std::string& prefix = "");

/// Source, model, fit, (a, B) (Regimes: the cross-validation scores and every regime's range, a,
/// 2(N-1) a and B) and error_table, as lines starting with `prefix`.
[[nodiscard]] std::string calibration_header(const calibrate::Calibration& calibration, const calibrate::CalibrationSource& source,
                                             const std::string& prefix = "");

/// A YAML scenario fragment with the `cluster:` keys of apply_fit (Regimes: apply_regime_fit,
/// the regimes as `collective_regimes:`, a list of "SIZE LATENCY BANDWIDTH" strings such as
/// "724.077KiB 5.04us 37.7GB/s"), headed by comments naming the source, the model, the fit and
/// the error table. Values carry units ("339.797GB/s", "4.5us") and 6 significant digits.
[[nodiscard]] std::string calibration_yaml(const calibrate::Calibration& calibration, const calibrate::CalibrationSource& source);

/// The report of `stepcast calibrate gemm`: the table checked on held-back rows, and where its
/// keys were written.
struct GemmCalibrationReport {
  calibrate::GemmCalibration calibration;
  std::string output;  ///< where the keys were written (gemm_calibration_yaml); "" for nowhere
};

/// One JSON object on one line: table {file, header (its '#' lines), grids (per dtype: dtype,
/// rows, m, n, k each {min, max, count})}, attention_flops_per_s and memory_bandwidth_Bps (null
/// when the table does not say), check_file (null without held-back rows), held_back (m, n, k,
/// dtype, line, measured_s, predicted_s, error, clamped), summary {count, median_error,
/// mean_error, max_error} (null without held-back rows), output (null when none).
void write_json(std::ostream& out, const GemmCalibrationReport& report);
/// calibrate::gemm_calibration_text and, when the keys were written, where.
void write_table(std::ostream& out, const GemmCalibrationReport& report);

}  // namespace stepcast::report
