// `stepcast calibrate nccl-tests LOG --workers N [--workers-per-node G] [-o calib.yaml] [--json]`: fits the
// ring all-reduce's latency and bandwidth to a measured sweep (calibrate/), or with `--fit regimes
// [--max-regimes K]` one pair per size range, prints the error at every size and writes the
// fitted cluster keys as a scenario fragment.
// `stepcast calibrate gemm TABLE.csv [--check HELD_BACK.csv] [-o compute.yaml] [--json]`: checks a GEMM
// table measured on one GPU (tools/gemm_sweep.py) against held-back rows, prints the error, and
// writes the keys of workload.compute: shapes on it. Both are one call to sweep/calibrate.hpp,
// which Python's stepcast.calibrate_nccl_tests() and stepcast.calibrate_gemm() call too.
//
//   stepcast::cli::CalibrateCommand calibrate(app);      // before app.parse
//   if (calibrate.parsed()) return calibrate.run();      // throws stepcast::Error on bad input
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace stepcast::cli {

class CalibrateCommand {
 public:
  /// Registers the `calibrate` subcommand (and its `nccl-tests` source) on `app`, which must
  /// outlive this object.
  explicit CalibrateCommand(CLI::App& app);
  CalibrateCommand(const CalibrateCommand&) = delete;
  CalibrateCommand& operator=(const CalibrateCommand&) = delete;

  [[nodiscard]] bool parsed() const;
  /// Runs the parsed command; returns the exit code. Throws stepcast::Error on bad input.
  int run() const;

 private:
  int run_gemm() const;

  CLI::App* nccl_tests_ = nullptr;
  CLI::App* gemm_ = nullptr;
  std::string gemm_table_;
  std::string gemm_check_;
  std::string gemm_output_;
  bool gemm_json_ = false;
  std::vector<std::string> logs_;
  std::string workers_;  // a count per log: "16" or "16,32,64"
  int workers_per_node_ = 1;
  std::string gpu_generation_ = "hopper";
  std::string cpu_vendor_ = "intel";
  int nics_per_node_ = 1;
  std::string nic_bandwidth_;  // empty: fitted
  std::string format_ = "auto";
  bool in_place_ = false;
  std::string fit_ = "endpoints";
  int max_regimes_ = 4;
  std::string min_size_ = "0";
  std::string max_size_;  // empty: no upper bound
  std::string output_;
  bool json_ = false;
};

}  // namespace stepcast::cli
