// Calibration of the ring all-reduce from a measured size sweep: fits the alpha-beta model
//   t(S) = 2(N-1) a + 2(N-1)/N S / B
// (a: fixed cost of one of the 2(N-1) ring steps, s; B: rate at which a step moves its S/N bytes,
// bytes/s, which is nccl-tests' bus bandwidth at large sizes), reports the error at every size,
// and turns (a, B) into the scenario keys with which the fine simulator's ring reproduces t(S).
// Depends on calibrate/collective_log.hpp and cluster/ (ClusterSpec); SI units throughout.
//
//   CollectiveLog log = read_collective_log("all_reduce.txt");
//   Calibration c = calibrate_ring(log.points, /*workers=*/16, {});   // smallest + largest size
//   cluster::ClusterSpec spec = apply_fit(c.fit, /*workers_per_node=*/8);
//   std::string yaml = calibration_yaml(c, {.file = log.file, .workers_per_node = 8});
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "stepcast/calibrate/collective_log.hpp"
#include "stepcast/cluster/cluster.hpp"

namespace stepcast::calibrate {

/// Which sizes determine (a, B).
enum class FitMethod : uint8_t {
  Endpoints,     ///< the smallest and the largest eligible size, solved exactly
  LeastSquares,  ///< every eligible size, minimising the sum of squared relative errors
};

struct FitOptions {
  FitMethod method = FitMethod::Endpoints;
  double min_bytes = 0;  ///< sizes below are not used to fit (still reported)
  double max_bytes = std::numeric_limits<double>::infinity();  ///< nor sizes above
  double report_min_bytes = 1 << 20;  ///< the held-out summary covers sizes >= this (1 MiB)
  bool operator==(const FitOptions&) const = default;
};

/// The alpha-beta ring all-reduce of `workers` ranks.
struct RingFit {
  int workers = 2;
  double step_latency = 0;  ///< s, a
  double bw = 0;            ///< bytes/s, B
  bool operator==(const RingFit&) const = default;

  /// s, 2(N-1) a + 2(N-1)/N bytes / B.
  [[nodiscard]] double time(double bytes) const;
};

/// Measured against predicted at one size.
struct SizeError {
  double bytes = 0;
  double measured = 0;   ///< s
  double predicted = 0;  ///< s
  double error = 0;      ///< (predicted - measured) / measured
  bool used = false;     ///< this size determined the fit
  int line = 0;          ///< where it was read
  bool operator==(const SizeError&) const = default;
};

struct Calibration {
  RingFit fit;
  FitOptions options;
  std::vector<SizeError> sizes;  ///< every measured size, ascending
  /// |error| over the sizes >= options.report_min_bytes that were not used to fit; with
  /// LeastSquares every eligible size is used, so these fall back to the in-sample sizes.
  int summary_count = 0;
  double median_error = 0;
  double max_error = 0;
  bool summary_in_sample = false;  ///< true when the summary covers fitted sizes
  /// The fit asked for a < 0 (the small sizes run faster than the line through the large
  /// ones); a was set to 0 and B refitted.
  bool latency_clamped = false;
  bool operator==(const Calibration&) const = default;
};

/// Fits (a, B) to `points` (from a CollectiveLog) for `workers` >= 2 ranks and scores every
/// size. Throws stepcast::Error when fewer than two distinct sizes are eligible for the fit or
/// when the time does not grow with size (no positive bandwidth fits).
[[nodiscard]] Calibration calibrate_ring(const std::vector<Measurement>& points, int workers,
                                         const FitOptions& options);

/// `base` with the fitted ring: the simulator runs each ring step at the slowest member's link
/// (min of nic_bw and intra_node_bw over the hops the ring uses) plus the slowest hop's latency,
/// so one node (workers_per_node == workers) puts (a, B) on the intra-node links, several nodes
/// on the NIC and node-to-node latency, with intra_node_bw raised to at least B and
/// intra_node_latency lowered to at most a so that the node-to-node hop is the bottleneck.
[[nodiscard]] cluster::ClusterSpec apply_fit(const RingFit& fit, int workers_per_node,
                                             cluster::ClusterSpec base = {});

/// Where the sweep came from, for the header of the written file.
struct CalibrationSource {
  std::string file;
  LogFormat format = LogFormat::NcclTests;
  Placement placement = Placement::OutOfPlace;
  int workers_per_node = 1;
};

/// The per-size table (size, measured, predicted, error, used) and the held-out summary, as
/// plain text lines; `prefix` starts every line (e.g. "# " for YAML comments).
[[nodiscard]] std::string error_table(const Calibration& calibration, const std::string& prefix = "");

/// Source, model, fit, (a, B) and error_table, as lines starting with `prefix`.
[[nodiscard]] std::string calibration_header(const Calibration& calibration, const CalibrationSource& source,
                                             const std::string& prefix = "");

/// A YAML scenario fragment with the `cluster:` keys of apply_fit, headed by comments naming the
/// source, the model, the fit and the error table. Values carry units ("339.797GB/s", "4.5us").
[[nodiscard]] std::string calibration_yaml(const Calibration& calibration, const CalibrationSource& source);

}  // namespace stepcast::calibrate
