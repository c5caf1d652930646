// Calibration, as `stepcast calibrate nccl-tests` / `stepcast calibrate gemm` and Python's
// `stepcast.calibrate_nccl_tests()` / `stepcast.calibrate_gemm()` all run it: the front ends only
// read their arguments into a request and print what these return, so that they cannot disagree
// (python/tests compares their JSON).
//
//   sweep::NcclTestsRequest r{.log = "ar.log", .workers = 16, .workers_per_node = 8};
//   sweep::NcclTestsCalibration c = sweep::calibrate_nccl_tests(r);
//   sweep::write_json(std::cout, c);
//
//   sweep::GemmRequest g{.table = "h100-gemm.csv", .output = "h100-compute.yaml"};
//   sweep::write_table(std::cout, sweep::calibrate_gemm_table(g));
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace stepcast::sweep {

/// The options of `calibrate nccl-tests`. Errors name an option through `option_name`, from its
/// name here ("workers_per_node"): the command's "--workers-per-node", Python's keyword unchanged.
struct NcclTestsRequest {
  std::string log;  ///< an all_reduce_perf log, or an XLA collective perf table (CSV)
  int workers = 0;  ///< ranks in the measured all-reduce, 2 .. limits::kMaxWorkers
  /// Sweeps of the same nodes at other node counts, each with its ranks in more_workers (the
  /// command's `LOG LOG2 .. --workers N,N2,..`): fitted together by --fit nccl (the default
  /// then; no other fit takes several), which then fits the network hops' latency apart.
  std::vector<std::string> more_logs;
  std::vector<int> more_workers;
  int workers_per_node = 1;
  /// nccl: what picks NCCL's tables for the measured nodes: GPU generation (volta, ampere,
  /// hopper), host CPU (intel, amd) and NICs per node (1 .. workers_per_node)
  std::string gpu_generation = "hopper";
  std::string cpu_vendor = "intel";
  int nics_per_node = 1;
  /// nccl: each NIC's line rate when known ("200Gbps", "25GB/s"); B is then not fitted. "": fitted.
  std::string nic_bandwidth;
  std::string format = "auto";  ///< auto, nccl-tests or xla
  bool in_place = false;        ///< nccl-tests' in-place times (only nccl-tests logs have them)
  /// endpoints, least-squares, regimes or nccl; not given: endpoints, and a suggestion of a better
  /// fit when it is more than 10% off.
  std::optional<std::string> fit;
  int max_regimes = 4;
  std::string min_size = "0";  ///< sizes below are not fitted, with a unit ("1MiB")
  std::string max_size;        ///< sizes above are not fitted; "": no bound
  std::string output;          ///< where the cluster keys go as YAML; "": nowhere
  std::string (*option_name)(std::string_view option) = nullptr;
};

/// The fit (report::CalibrationReport, an internal type).
struct NcclTestsReport;

/// The default fit was more than 10% off (median over the reported sizes) and another does better.
struct FitSuggestion {
  std::string method;    ///< the fit used ("endpoints")
  double error = 0;      ///< its median |error|, a fraction
  double min_bytes = 0;  ///< the sizes the median covers (>=)
  std::string better;    ///< the better fit ("regimes" or "nccl")
  double better_error = 0;
  bool in_sample = false;  ///< the better one's error is in sample (nccl fits every size)
};

struct NcclTestsCalibration {
  std::shared_ptr<const NcclTestsReport> report;
  std::optional<FitSuggestion> suggestion;  ///< only when `fit` was not given
};

/// Reads the log, fits it and, with `output`, writes the cluster keys there (before returning,
/// so a bad path fails before anything is printed). Throws Error naming the option, the file or
/// the line on bad input.
[[nodiscard]] NcclTestsCalibration calibrate_nccl_tests(const NcclTestsRequest& request);

/// One warning for each option given that the request's fit does not use, naming it and the fit
/// (the fit runs as if it were not given): `max_regimes` outside --fit regimes; `gpu_generation`,
/// `cpu_vendor` and `nics_per_node` outside --fit nccl (`nic_bandwidth` there is an error of
/// calibrate_nccl_tests, and picks nccl when no fit is given). `given(option)` says whether an
/// option, by its name here, was given; without it, an option is given when it differs from its
/// default. Nothing when the fit is no fit's name (calibrate_nccl_tests' error says so).
[[nodiscard]] std::vector<std::string> unused_options(
    const NcclTestsRequest& request, const std::function<bool(std::string_view option)>& given = {});

/// What `stepcast calibrate nccl-tests --json` prints: one JSON object on one line.
void write_json(std::ostream& out, const NcclTestsCalibration& calibration);
/// What `stepcast calibrate nccl-tests` prints.
void write_table(std::ostream& out, const NcclTestsCalibration& calibration);

/// The options of `calibrate gemm`; option names as in NcclTestsRequest.
struct GemmRequest {
  std::string table;  ///< the GEMM grid (CSV: m, n, k, dtype, time_us)
  /// Held-back rows measured beside it; "": TABLE-check.csv when that file exists, else none.
  std::string check;
  std::string output;  ///< where the keys of workload.compute: shapes go as YAML; "": nowhere
  std::string (*option_name)(std::string_view option) = nullptr;
};

/// The check (calibrate::GemmCalibration, an internal type) and where the keys were written.
struct GemmReport;

struct GemmTableCalibration {
  std::shared_ptr<const GemmReport> report;
};

/// Reads the table and the held-back rows, predicts each held-back row from the table and, with
/// `output`, writes the keys there. Throws Error naming the file and line on bad input.
[[nodiscard]] GemmTableCalibration calibrate_gemm_table(const GemmRequest& request);

/// What `stepcast calibrate gemm --json` prints: one JSON object on one line.
void write_json(std::ostream& out, const GemmTableCalibration& calibration);
/// What `stepcast calibrate gemm` prints.
void write_table(std::ostream& out, const GemmTableCalibration& calibration);

}  // namespace stepcast::sweep
