// Calibration of the ring all-reduce from a measured size sweep: fits the alpha-beta model
//   t(S) = 2(N-1) a + 2(N-1)/N S / B
// (a: fixed cost of one of the 2(N-1) ring steps, s; B: rate at which a step moves its S/N bytes,
// bytes/s, which is nccl-tests' bus bandwidth at large sizes), reports the error at every size,
// and turns (a, B) into the scenario keys with which the fine simulator's ring reproduces t(S).
// FitMethod::Regimes fits one (a_j, B_j) per contiguous size range instead (NCCL switches
// protocol and algorithm with the size), the number of ranges chosen by leave-one-out
// cross-validation, and writes them as cluster.collective_regimes.
// Depends on calibrate/collective_log.hpp and cluster/ (ClusterSpec); SI units throughout. Values
// only: the text, JSON and YAML forms of a Calibration are report/'s (calibration_report.hpp).
//
//   CollectiveLog log = read_collective_log("all_reduce.txt");
//   Calibration c = calibrate_ring(log.points, /*workers=*/16, {});   // smallest + largest size
//   cluster::ClusterSpec spec = apply_fit(c.fit, /*workers_per_node=*/8);
//   std::string yaml = report::calibration_yaml(c, {.file = log.file, .workers_per_node = 8});
//
//   Calibration r = calibrate_ring(log.points, 16, {.method = FitMethod::Regimes});
//   cluster::ClusterSpec regimes = apply_regime_fit(r.regimes, 8);   // links + collective_regimes
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/calibrate/collective_log.hpp"
#include "stepcast/enum_names.hpp"

namespace stepcast::calibrate {

/// A regime's range holds at least this many sizes: two determine (a, B), a third checks it.
inline constexpr size_t kMinRegimeSizes = 3;

/// Which sizes determine (a, B).
enum class FitMethod : uint8_t {
  Endpoints,     ///< the smallest and the largest eligible size, solved exactly
  LeastSquares,  ///< every eligible size, minimising the sum of squared relative errors
  /// every eligible size, split into 1..max_regimes contiguous size ranges with one (a, B) each
  /// (least squares of the relative error per range, at least 3 sizes per range); the number
  /// of ranges is the smallest whose leave-one-out mean |relative error| is within 5% of the best
  Regimes,
  /// NCCL's tuning model (NcclFit): every eligible size, least squares of the relative error over
  /// the node NIC's bandwidth and one scale of NCCL's latency constants
  Nccl,
};
constexpr std::string_view name_of(FitMethod v) {
  switch (v) {
    case FitMethod::Endpoints:
      return "endpoints";
    case FitMethod::LeastSquares:
      return "least-squares";
    case FitMethod::Regimes:
      return "regimes";
    case FitMethod::Nccl:
      return "nccl";
  }
  return {};
}
/// The name the command line takes (--fit): "endpoints", "least-squares", "regimes".
[[nodiscard]] const char* to_string(FitMethod method);

struct FitOptions {
  FitMethod method = FitMethod::Endpoints;
  double min_bytes = 0;  ///< sizes below are not used to fit (still reported)
  double max_bytes = std::numeric_limits<double>::infinity();  ///< nor sizes above
  double report_min_bytes = 1 << 20;  ///< the held-out summary covers sizes >= this (1 MiB)
  int max_regimes = 4;                ///< Regimes: the most ranges tried, 1 .. kMaxRegimes
  int workers_per_node = 1;           ///< Nccl: GPUs per node of the measurement
  /// Nccl: what picks NCCL's bandwidth tables and channel rule (cluster.gpu.generation,
  /// cluster.cpu_vendor, cluster.nics_per_node of the measured nodes)
  cluster::GpuGeneration gpu_generation = cluster::GpuGeneration::Hopper;
  cluster::CpuVendor cpu_vendor = cluster::CpuVendor::Intel;
  int nics_per_node = 1;
  /// Nccl: each NIC's bandwidth when known (bytes/s; B is then not fitted); 0: fitted.
  double nic_bw = 0;
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

/// The largest FitOptions::max_regimes accepted.
inline constexpr int kMaxRegimes = 8;

/// One size range of a regime fit: the ring alpha-beta model with its own (a, B).
struct Regime {
  double from_bytes = 0;         ///< applies to sizes >= this, up to the next regime's from_bytes
  double first_bytes = 0;        ///< smallest size fitted in this range
  double last_bytes = 0;         ///< largest
  int count = 0;                 ///< sizes fitted in this range
  double step_latency = 0;       ///< s, a_j
  double bw = 0;                 ///< bytes/s, B_j
  bool latency_clamped = false;  ///< the range's fit asked for a < 0; a set to 0 and B refitted
  bool operator==(const Regime&) const = default;
};

/// The ring all-reduce of `workers` ranks in size regimes: regimes[0].from_bytes is 0, each
/// later one starts at the geometric mean of the previous range's last size and its own first.
struct RegimeFit {
  int workers = 2;
  std::vector<Regime> regimes;  ///< ascending from_bytes, at least one
  bool operator==(const RegimeFit&) const = default;

  /// The regime with the largest from_bytes <= bytes.
  [[nodiscard]] const Regime& regime_for(double bytes) const;
  /// s, 2(N-1) a_j + 2(N-1)/N bytes / B_j with j = regime_for(bytes).
  [[nodiscard]] double time(double bytes) const;
  /// (min_j a_j, max_j B_j): the fastest ring step any regime allows, what the links are set to.
  [[nodiscard]] RingFit envelope() const;
};

/// Intra-node links of an NCCL fit run at this many times its NIC bandwidth: one all-reduce sweep
/// cannot tell the two apart, and NCCL's collectives on NVLink machines are bound by the network.
inline constexpr double kNcclIntraToNic = 8;

/// An NCCL fit takes a fitted LL cap (NcclFit::ll_bw) over NCCL's table only when it lowers the
/// summed squared relative error by more than this fraction: a sweep whose LL sizes do not reach
/// the cap leaves it undetermined, and the table then keeps following the node count.
inline constexpr double kNcclCapGain = 0.05;

/// NCCL's tuning model fitted to a sweep: the all-reduce runs as `training.allreduce.algorithm:
/// auto` runs it (ring or tree, LL, LL128 or Simple, the fastest for each size), on nodes of
/// workers_per_node GPUs with one NIC of `nic_bw` each way and intra-node links of
/// kNcclIntraToNic x nic_bw, with every latency constant of NCCL's tables (cluster.nccl: base and
/// per-hop, ring and tree, all protocols) multiplied by `latency_scale`. Two numbers, so a sweep
/// at one scale determines them; the model's structure (hops per node count) predicts others.
/// The protocols' bandwidth caps are NCCL's tables (cluster::nccl_bus_bw_cap, with the channel
/// count NCCL's rule gives for B), except LL's cap on the whole collective when the sweep
/// determines it (`ll_bw`): a third number, fitted only where it pays (kNcclCapGain).
struct NcclFit {
  int workers = 2;
  int workers_per_node = 1;
  double nic_bw = 0;         ///< bytes/s, B
  double latency_scale = 1;  ///< lambda, x NCCL 2.18's constants (all, or all but the network hops')
  /// bytes/s: LL's cap on the bus bandwidth of the all-reduce, ring and tree (NCCL's llMaxBw),
  /// as fitted; 0: NCCL's table, which follows the node count (cluster.nccl.*.ll.max_bw unset).
  double ll_bw = 0;
  /// bytes/s: the channels' own speed, as fitted: every candidate's bus bandwidth (ring and tree,
  /// every protocol) at most channels_bw x its protocol's efficiency, at every node count (NCCL's
  /// busBw = channels x the per-channel speed its search found, before the protocols' caps; written
  /// as cluster.nccl.*.max_bw, under NCCL's tables' caps); 0: none (the NICs and NCCL's tables).
  double channels_bw = 0;
  cluster::GpuGeneration gpu_generation = cluster::GpuGeneration::Hopper;
  cluster::CpuVendor cpu_vendor = cluster::CpuVendor::Intel;
  int nics_per_node = 1;  ///< nic_bw is each NIC's; the node has nics_per_node of them
  /// lambda_net, x NCCL's hop latencies between nodes (cluster.nccl.*.hop_latency.net), fitted apart
  /// from lambda only on sweeps at two node counts or more; unset: latency_scale.
  std::optional<double> net_latency_scale{};
  bool operator==(const NcclFit&) const = default;
  /// The calibrated cluster with `ranks` workers (workers_per_node per node).
  [[nodiscard]] cluster::ClusterSpec spec(int ranks) const;
  /// s, the all-reduce of `bytes` on `ranks` (default: the measured workers) as simulated.
  [[nodiscard]] double time(double bytes, int ranks = 0) const;
};

/// Measured against predicted at one size.
struct SizeError {
  double bytes = 0;
  double measured = 0;   ///< s
  double predicted = 0;  ///< s
  double error = 0;      ///< (predicted - measured) / measured
  bool used = false;     ///< this size determined the fit
  int line = 0;          ///< where it was read
  /// Regimes: predicted by the fit (same number of regimes) to every eligible size but this
  /// one; a size the fit did not use keeps `predicted`. Other methods: equal to `predicted`.
  double loo_predicted = 0;  ///< s
  double loo_error = 0;      ///< (loo_predicted - measured) / measured
  bool operator==(const SizeError&) const = default;
};

/// One node count's sweep, for a fit across several (calibrate_nccl_sweeps).
struct NodeCountSweep {
  std::vector<Measurement> points;
  int workers = 2;  ///< ranks of the measurement (workers_per_node per node, FitOptions)
  bool operator==(const NodeCountSweep&) const = default;
};

/// One node count's sizes as an NCCL fit predicts them.
struct NodeCountScore {
  int workers = 2;
  int nodes = 1;
  std::vector<SizeError> sizes;  ///< ascending; `used`: the fit saw this size
  int summary_count = 0;         ///< sizes >= the report's minimum (1 MiB)
  double median_error = 0;       ///< |error| over them
  double max_error = 0;
  bool operator==(const NodeCountScore&) const = default;
};

struct Calibration {
  /// Endpoints, LeastSquares: the fit. Regimes: regimes.envelope(), what the links are set to.
  RingFit fit;
  FitOptions options;
  std::vector<SizeError> sizes;  ///< every measured size, ascending
  /// Regimes only (else no regimes): the chosen fit, and the leave-one-out mean |relative error|
  /// over the eligible sizes for 1, 2, .. max_regimes regimes (infinity where that many ranges
  /// of at least 3 sizes with a positive bandwidth do not fit).
  RegimeFit regimes;
  std::vector<double> regime_scores;
  NcclFit nccl;  ///< Nccl only (else nic_bw 0)
  /// Nccl only: LL's cap as the sweep alone puts it (bytes/s), and the fraction of the summed
  /// squared relative error it removes against NCCL's table; nccl.ll_bw takes it only when that
  /// fraction exceeds kNcclCapGain.
  double nccl_ll_fitted_bw = 0;
  double nccl_ll_gain = 0;
  /// Nccl only: the channels' speed as the sweeps put it (bytes/s) and the fraction of the summed
  /// squared relative error it removes; nccl.channels_bw takes it only when that exceeds kNcclCapGain.
  double nccl_channels_fitted_bw = 0;
  double nccl_channels_gain = 0;
  /// |error| over the sizes >= options.report_min_bytes that were not used to fit; with
  /// LeastSquares every eligible size is used, so these fall back to the in-sample sizes.
  /// Regimes: |loo_error| over every size >= report_min_bytes (never in sample).
  int summary_count = 0;
  double median_error = 0;
  double max_error = 0;
  bool summary_in_sample = false;  ///< true when the summary covers fitted sizes
  /// The fit asked for a < 0 (the small sizes run faster than the line through the large
  /// ones); a was set to 0 and B refitted. Regimes: some regime's fit was clamped.
  bool latency_clamped = false;
  /// Nccl over sweeps at several node counts (calibrate_nccl_sweeps): each sweep as the one fit
  /// predicts it, in the order given; empty for one sweep (`sizes` is the first sweep's).
  std::vector<NodeCountScore> node_counts;
  bool operator==(const Calibration&) const = default;
};

/// Fits (a, B) to `points` (from a CollectiveLog) for `workers` >= 2 ranks and scores every
/// size. Throws stepcast::Error when fewer than two distinct sizes are eligible for the fit or
/// when the time does not grow with size (no positive bandwidth fits); for Regimes, when
/// max_regimes is outside 1..kMaxRegimes or no number of regimes can be cross-validated (fewer
/// than 4 eligible sizes, or no range with a positive bandwidth).
[[nodiscard]] Calibration calibrate_ring(const std::vector<Measurement>& points, int workers,
                                         const FitOptions& options);

/// FitMethod::Nccl fitted to sweeps of one cluster at one or several node counts (same GPUs per
/// node, options.workers_per_node): one B, one lambda and, where the sweeps span two node counts
/// or more, lambda_net for the hops between nodes (the term that grows with the node count: the
/// ring's 2(M-1) network hops, the tree's 2 floor(log2 M)); NCCL's channel rule and its node-count
/// tables of caps are kept, not fitted. The Calibration's `sizes` and summary are the first
/// sweep's, `node_counts` every sweep's. Throws stepcast::Error as calibrate_ring does.
[[nodiscard]] Calibration calibrate_nccl_sweeps(const std::vector<NodeCountSweep>& sweeps,
                                                const FitOptions& options);

/// `points` measured on `workers` ranks as `fit` predicts them (fit.time(bytes, workers)); the
/// summary covers the sizes >= report_min_bytes. Nothing is marked used.
[[nodiscard]] NodeCountScore score_node_count(const NcclFit& fit, const std::vector<Measurement>& points,
                                              int workers, double report_min_bytes = 1 << 20);

/// `base` with the fitted ring: the simulator runs each ring step at the slowest member's link
/// (min of nic_bw and intra_node_bw over the hops the ring uses) plus the slowest hop's latency,
/// so one node (workers_per_node == workers) puts (a, B) on the intra-node links, several nodes
/// on the NIC and node-to-node latency, with intra_node_bw raised to at least B and
/// intra_node_latency lowered to at most a so that the node-to-node hop is the bottleneck.
[[nodiscard]] cluster::ClusterSpec apply_fit(const RingFit& fit, int workers_per_node,
                                             cluster::ClusterSpec base = {});

/// apply_fit(fit.envelope(), ...) (so no link is slower than any regime's B_j, and no path's
/// latency above any a_j) with collective_regimes = {from_bytes_j, a_j, B_j}: the simulator caps
/// a collective's transfers at its regime's B_j and makes each step last at least a_j after its
/// transfers end, so its ring gives fit.time(S) at every size.
[[nodiscard]] cluster::ClusterSpec apply_regime_fit(const RegimeFit& fit, int workers_per_node,
                                                    cluster::ClusterSpec base = {});

/// Where the sweep came from, for the header of the written file.
struct CalibrationSource {
  std::string file;
  LogFormat format = LogFormat::NcclTests;
  Placement placement = Placement::OutOfPlace;
  int workers_per_node = 1;
  bool operator==(const CalibrationSource&) const = default;
};

}  // namespace stepcast::calibrate
