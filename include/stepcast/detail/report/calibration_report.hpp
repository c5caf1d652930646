// The report of `stepcast calibrate nccl-tests`: a ring all-reduce calibration and where its
// sweep came from, as a value, written as JSON for programs or as text for people. Depends on
// calibrate/ (Calibration, CalibrationSource); SI units inside, units in the printed names
// ("step_latency_s", "bandwidth_Bps"; errors are fractions, 0.01 = 1%).
//
//   const calibrate::Calibration c = calibrate::calibrate_ring(log.points, 16, {});
//   report::write_json(std::cout, {.calibration = c, .source = {.file = log.file}});
#pragma once

#include <ostream>
#include <string>

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
/// A title line, calibrate::calibration_header (source, model, fit, per-size errors) and, when
/// the keys were written, where.
void write_table(std::ostream& out, const CalibrationReport& report);

}  // namespace stepcast::report
