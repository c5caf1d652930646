#include "cli/calibrate_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/detail/calibrate/collective_log.hpp"
#include "stepcast/detail/calibrate/ring_calibration.hpp"
#include "stepcast/enum_names.hpp"
#include "stepcast/error.hpp"
#include "stepcast/sweep/calibrate.hpp"
#include "stepcast/sweep/sweep.hpp"
#include "stepcast/units.hpp"

namespace stepcast::cli {

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
  nccl_tests_
      ->add_option("log", logs_,
                   "all_reduce_perf output, or an XLA collective perf table (CSV); several: the same nodes "
                   "at several node counts, fitted together by --fit nccl")
      ->required();
  nccl_tests_
      ->add_option("--workers", workers_,
                   "Ranks in the measured all-reduce (N); with several logs one per log: 16,32,64")
      ->required();
  nccl_tests_->add_option("--workers-per-node", workers_per_node_, "Ranks (GPUs) per node (G)")
      ->capture_default_str();
  nccl_tests_
      ->add_option("--gpu-generation", gpu_generation_, "--fit nccl: volta, ampere or hopper (NCCL's tables)")
      ->capture_default_str();
  nccl_tests_
      ->add_option("--cpu-vendor", cpu_vendor_, "--fit nccl: intel or amd (NCCL's LL table between nodes)")
      ->capture_default_str();
  nccl_tests_->add_option("--nics-per-node", nics_per_node_, "--fit nccl: network ports per node")
      ->capture_default_str();
  nccl_tests_
      ->add_option(
          "--nic-bandwidth", nic_bandwidth_,
          "--fit nccl: each NIC's line rate when known, e.g. 200Gbps (then not fitted; the channels' "
          "speed is)")
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
  gemm_->add_flag("--json", gemm_json_,
                  "Print the table's grids and the error at every held-back row as one JSON object");
}

bool CalibrateCommand::parsed() const { return nccl_tests_->parsed() || gemm_->parsed(); }

namespace {

/// "workers_per_node" -> "--workers-per-node": the option of a request's field.
std::string calibrate_option(std::string_view option) {
  std::string flag = "--" + std::string(option);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

}  // namespace

int CalibrateCommand::run_gemm() const {
  sweep::GemmRequest request{
      .table = gemm_table_, .check = gemm_check_, .output = gemm_output_, .option_name = calibrate_option};
  const sweep::GemmTableCalibration result = sweep::calibrate_gemm_table(request);
  if (gemm_json_) {
    sweep::write_json(std::cout, result);
  } else {
    sweep::write_table(std::cout, result);
  }
  return 0;
}

int CalibrateCommand::run() const {
  if (gemm_->parsed()) return run_gemm();
  sweep::NcclTestsRequest request;
  const std::vector<int> workers = sweep::parse_worker_list(workers_, "--workers");
  if (workers.size() != logs_.size()) {
    throw Error({"", 0, "--workers"},
                fmt::format("expected one rank count per log: {} logs, {} counts in '{}'", logs_.size(),
                            workers.size(), workers_));
  }
  request.log = logs_.front();
  request.workers = workers.front();
  request.more_logs.assign(logs_.begin() + 1, logs_.end());
  request.more_workers.assign(workers.begin() + 1, workers.end());
  request.workers_per_node = workers_per_node_;
  request.gpu_generation = gpu_generation_;
  request.cpu_vendor = cpu_vendor_;
  request.nics_per_node = nics_per_node_;
  request.nic_bandwidth = nic_bandwidth_;
  request.format = format_;
  request.in_place = in_place_;
  if (nccl_tests_->count("--fit") > 0) request.fit = fit_;
  request.max_regimes = max_regimes_;
  request.min_size = min_size_;
  request.max_size = max_size_;
  request.output = output_;
  request.option_name = calibrate_option;
  const sweep::NcclTestsCalibration result = sweep::calibrate_nccl_tests(request);
  // An option the fit does not use is not an error (the fit is still right), but the user meant it
  // to change something.
  const auto given = [this](std::string_view option) {
    return nccl_tests_->count(calibrate_option(option)) > 0;
  };
  for (const std::string& warning : sweep::unused_options(request, given)) {
    fmt::print(stderr, "stepcast: warning: {}\n", warning);
  }
  if (json_) {
    sweep::write_json(std::cout, result);
  } else {
    sweep::write_table(std::cout, result);
  }
  if (const auto& s = result.suggestion) {
    std::cerr << fmt::format(
        "stepcast: note: the {} fit is {:.0f}% off (median over sizes >= {}); --fit {} is {:.0f}% off{}\n",
        s->method, 100 * s->error, format_bytes(s->min_bytes), s->better, 100 * s->better_error,
        s->in_sample ? " (in sample: it fits every size)" : " (leave-one-out)");
  }
  return 0;
}

}  // namespace stepcast::cli
