#include "cli/calibrate_command.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "cli/output_file.hpp"
#include "stepcast/detail/calibrate/collective_log.hpp"
#include "stepcast/detail/calibrate/gemm_calibration.hpp"
#include "stepcast/detail/calibrate/ring_calibration.hpp"
#include "stepcast/detail/report/calibration_report.hpp"
#include "stepcast/enum_names.hpp"
#include "stepcast/error.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/units.hpp"

namespace stepcast::cli {

using limits::kMaxWorkers;

namespace {
// The values an option takes: the enum's names (CLI11 lists them in --help and its errors).
template <NamedEnum E>
std::vector<std::string> all_names() {
  std::vector<std::string> names;
  for (E value : enum_values<E>()) names.emplace_back(name_of(value));
  return names;
}
}  // namespace

CalibrateCommand::CalibrateCommand(CLI::App& app) {
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "Fit network parameters to a measured collective sweep, or check a GEMM table");
  calibrate->require_subcommand(1);
  nccl_tests_ = calibrate->add_subcommand(
      "nccl-tests",
      "Fit the ring all-reduce's latency and bandwidth to an all_reduce_perf log (or XLA table)");
  nccl_tests_->add_option("log", log_, "all_reduce_perf output, or an XLA collective perf table (CSV)")
      ->required();
  nccl_tests_->add_option("--workers", workers_, "Ranks in the measured all-reduce (N)")->required();
  nccl_tests_->add_option("--workers-per-node", workers_per_node_, "Ranks (GPUs) per node (G)")
      ->capture_default_str();
  nccl_tests_->add_option("--format", format_, "Input format: auto, nccl-tests or xla")
      ->check(CLI::IsMember(all_names<calibrate::LogFormat>()))
      ->capture_default_str();
  nccl_tests_->add_flag("--in-place", in_place_, "Use nccl-tests' in-place times (default: out-of-place)");
  nccl_tests_
      ->add_option("--fit", fit_,
                   "endpoints (smallest and largest size), least-squares (all sizes, relative error) or "
                   "regimes (one line per size range, the number of ranges chosen by leave-one-out) or nccl "
                   "(NCCL's tuning model: node NIC bandwidth and a scale of its latency constants; predicts "
                   "other node counts)")
      ->check(CLI::IsMember(all_names<calibrate::FitMethod>()))
      ->capture_default_str();
  nccl_tests_
      ->add_option("--max-regimes", max_regimes_,
                   fmt::format("--fit regimes: the most size ranges tried, 1 to {}", calibrate::kMaxRegimes))
      ->capture_default_str();
  nccl_tests_->add_option("--min-size", min_size_, "Ignore sizes below this for the fit, e.g. 1MiB")
      ->capture_default_str();
  nccl_tests_->add_option("--max-size", max_size_, "Ignore sizes above this for the fit, e.g. 16MiB");
  nccl_tests_->add_option("-o,--output", output_,
                          "Write the fitted cluster keys as a YAML scenario fragment");
  nccl_tests_->add_flag("--json", json_, "Print the fit and the error at every size as one JSON object");
  gemm_ = calibrate->add_subcommand(
      "gemm",
      "Check a GEMM table measured on one GPU (tools/gemm_sweep.py) on held-back rows and write the "
      "keys of workload.compute: shapes");
  gemm_->add_option("table", gemm_table_, "the GEMM grid (CSV: m, n, k, dtype, time_us)")->required();
  gemm_->add_option("--check", gemm_check_,
                    "held-back GEMMs measured beside it (default: TABLE-check.csv when it exists)");
  gemm_->add_option("-o,--output", gemm_output_, "Write the keys as a YAML scenario fragment (for include:)");
}

bool CalibrateCommand::parsed() const { return nccl_tests_->parsed() || gemm_->parsed(); }

int CalibrateCommand::run_gemm() const {
  std::string check = gemm_check_;
  if (check.empty()) {
    // tools/gemm_sweep.py writes the held-back rows beside the table.
    const std::filesystem::path beside =
        std::filesystem::path(gemm_table_).replace_extension("").string() + "-check.csv";
    std::error_code ec;
    if (std::filesystem::is_regular_file(beside, ec)) check = beside.string();
  }
  const calibrate::GemmCalibration result = calibrate::calibrate_gemm(gemm_table_, check);
  if (!gemm_output_.empty()) {
    std::ofstream out = open_output(gemm_output_, "--output");
    out << calibrate::gemm_calibration_yaml(result, gemm_output_);
    if (!out.flush()) throw Error({gemm_output_, 0, "--output"}, "cannot write file");
  }
  std::cout << calibrate::gemm_calibration_text(result);
  if (!gemm_output_.empty()) std::cout << fmt::format("wrote {}\n", gemm_output_);
  return 0;
}

int CalibrateCommand::run() const {
  if (gemm_->parsed()) return run_gemm();
  using calibrate::FitMethod;
  using calibrate::LogFormat;
  using calibrate::Placement;
  if (workers_ < 2 || workers_ > kMaxWorkers) {
    throw Error({"", 0, "--workers"},
                fmt::format("expected an integer in [2, {}], got {}", kMaxWorkers, workers_));
  }
  if (workers_per_node_ < 1 || workers_per_node_ > workers_) {
    throw Error(
        {"", 0, "--workers-per-node"},
        fmt::format("expected an integer in [1, --workers = {}], got {}", workers_, workers_per_node_));
  }
  if (max_regimes_ < 1 || max_regimes_ > calibrate::kMaxRegimes) {
    throw Error({"", 0, "--max-regimes"},
                fmt::format("expected an integer in [1, {}], got {}", calibrate::kMaxRegimes, max_regimes_));
  }
  const LogFormat format = parse_name<LogFormat>(format_).value_or(LogFormat::Auto);
  const Placement placement = in_place_ ? Placement::InPlace : Placement::OutOfPlace;
  const calibrate::CollectiveLog log = calibrate::read_collective_log(log_, format, placement);
  if (in_place_ && log.format != LogFormat::NcclTests) {
    throw Error({log_, 0, "--in-place"}, "only nccl-tests logs have in-place times");
  }
  if (log.group_size != 0 && log.group_size != workers_) {
    throw Error({log_, log.points.front().line, "--workers"},
                fmt::format("the table measured {} ranks, --workers says {}", log.group_size, workers_));
  }
  calibrate::FitOptions options;
  options.method = parse_name<FitMethod>(fit_).value_or(FitMethod::Endpoints);
  options.max_regimes = max_regimes_;
  options.workers_per_node = workers_per_node_;
  options.min_bytes = parse_bytes_with_unit(min_size_, {"", 0, "--min-size"});
  if (!max_size_.empty()) options.max_bytes = parse_bytes_with_unit(max_size_, {"", 0, "--max-size"});
  const calibrate::Calibration result = calibrate::calibrate_ring(log.points, workers_, options);
  const calibrate::CalibrationSource source{log.file, log.format, placement, workers_per_node_};

  // Write first: a bad output path fails before anything is printed.
  if (!output_.empty()) {
    std::ofstream out = open_output(output_, "--output");
    out << report::calibration_yaml(result, source);
    if (!out.flush()) throw Error({output_, 0, "--output"}, "cannot write file");
  }
  const report::CalibrationReport report{.calibration = result, .source = source, .output = output_};
  if (json_) {
    report::write_json(std::cout, report);
  } else {
    report::write_table(std::cout, report);
  }
  // The default fit more than 10% off where it was not fitted: say which other fit does better.
  constexpr double kPoorFit = 0.10;
  if (nccl_tests_->count("--fit") == 0 && result.median_error > kPoorFit) {
    std::string better;
    double best = result.median_error;
    for (const FitMethod other : {FitMethod::Regimes, FitMethod::Nccl}) {
      calibrate::FitOptions alternative = options;
      alternative.method = other;
      try {
        const calibrate::Calibration c = calibrate::calibrate_ring(log.points, workers_, alternative);
        if (c.median_error < best) {
          best = c.median_error;
          better = calibrate::to_string(other);
        }
      } catch (const Error&) {
        // That fit does not apply to this sweep: nothing to suggest from it.
      }
    }
    if (!better.empty()) {
      std::cerr << fmt::format(
          "stepcast: note: the {} fit is {:.0f}% off (median over sizes >= {}); --fit {} is {:.0f}% off{}\n",
          calibrate::to_string(options.method), 100 * result.median_error,
          format_bytes(options.report_min_bytes), better, 100 * best,
          better == "nccl" ? " (in sample: it fits every size)" : " (leave-one-out)");
    }
  }
  return 0;
}

}  // namespace stepcast::cli
