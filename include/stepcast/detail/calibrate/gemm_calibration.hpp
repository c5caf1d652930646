// `stepcast calibrate gemm`: checks a GEMM table measured on one GPU (tools/gemm_sweep.py) against
// held-back rows measured beside it, and writes the cluster keys that use it. The table is used as
// it is (its rows are measurements, interpolated in log space by cluster::gemm_time); what is
// reported is how far the interpolation lands from GEMMs it did not see.
//
//   GemmCalibration c = calibrate_gemm("h100-gemm.csv", "h100-gemm-check.csv");
//   std::cout << gemm_calibration_text(c);   // the error on the held-back rows
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "stepcast/cluster/gemm_table.hpp"

namespace stepcast::calibrate {

struct GemmCheck {
  cluster::GemmRow measured;
  double predicted = 0;  ///< s, from the table
  double error = 0;      ///< predicted / measured - 1
  bool clamped = false;  ///< outside the table's grid
};

struct GemmCalibration {
  cluster::GemmTable table;
  std::string check_file;  ///< "" when no held-back rows were given
  std::vector<GemmCheck> held_back;
  double median_error = 0, mean_error = 0, max_error = 0;  ///< of |error| over held_back
  std::vector<std::string> header;  ///< the table file's '#' lines (GPU, driver, versions)
  /// From the table file's '# attention_flops: ...' and '# memory_bandwidth: ...' lines.
  std::optional<double> attention_flops;  ///< FLOP/s
  std::optional<double> memory_bw;        ///< bytes/s
};

/// The shapes a table measured for one dtype: each axis's values and the rows.
struct GemmGrid {
  cluster::GemmDtype dtype = cluster::GemmDtype::BF16;
  std::size_t rows = 0;
  std::set<int64_t> m, n, k;
};
/// One grid per dtype the table has, in the dtypes' declared order; what the text and the JSON
/// of `calibrate gemm` list.
[[nodiscard]] std::vector<GemmGrid> gemm_grids(const cluster::GemmTable& table);

/// Reads the table (a grid, parse_gemm_table) and, if `check_path` is not empty, the held-back
/// rows (any shapes; their dtypes must be in the table), and predicts each held-back row from the
/// table. Throws Error naming the file and line on bad input.
[[nodiscard]] GemmCalibration calibrate_gemm(const std::string& table_path, const std::string& check_path);

/// The keys that use the table, as a YAML fragment for `include:` (the table's path relative to
/// `output_path`'s directory).
[[nodiscard]] std::string gemm_calibration_yaml(const GemmCalibration& calibration,
                                                const std::string& output_path);

/// What the command prints: the table's grid per dtype, each held-back row and the error.
[[nodiscard]] std::string gemm_calibration_text(const GemmCalibration& calibration);

}  // namespace stepcast::calibrate
