// A GPU's measured GEMM times: rows (m, n, k, dtype) -> seconds, as tools/gemm_sweep.py measures
// them on one GPU, and the time of any shape read from them (workload.compute: shapes). A GEMM
// (m, n, k) multiplies an m x k matrix by a k x n one: 2 m n k FLOPs.
//
// The rows of one dtype form a grid (every combination of its m, n and k values, so that
// nothing between them is guessed from fewer than eight neighbours). A shape is read as its
// achieved FLOP rate 2 m n k / time, interpolated linearly in (log m, log n, log k) between
// the eight grid points around it (trilinear), then turned back into a time: a table that is
// compute-bound at one rate everywhere gives 2 m n k / rate at every shape, and along each
// dimension the time moves between neighbouring rows as monotonically as the rows do. A shape
// beyond the grid is never extrapolated: its coordinates are clamped to the grid's edge (the
// rate of the nearest measured shape) and the result says so, for a warning naming the shape
// and the table.
//
//   GemmTable table = parse_gemm_table(text, "h100-gemm.csv");
//   GemmLookup t = gemm_time(table, 8192, 4096, 4096, GemmDtype::BF16);  // t.seconds, t.clamped
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/enum_names.hpp"

namespace stepcast::cluster {

/// Element type of a GEMM's inputs (accumulation in FP32 throughout).
enum class GemmDtype : uint8_t { BF16, FP16, FP32, FP8 };
constexpr std::string_view name_of(GemmDtype v) {
  switch (v) {
    case GemmDtype::BF16:
      return "bf16";
    case GemmDtype::FP16:
      return "fp16";
    case GemmDtype::FP32:
      return "fp32";
    case GemmDtype::FP8:
      return "fp8";
  }
  return {};
}
[[nodiscard]] const char* to_string(GemmDtype dtype);
/// "bf16", "fp16", "fp32", "fp8" (case-insensitive); nullopt otherwise.
[[nodiscard]] std::optional<GemmDtype> parse_gemm_dtype(std::string_view text);

struct GemmRow {
  int64_t m = 0, n = 0, k = 0;
  GemmDtype dtype = GemmDtype::BF16;
  double seconds = 0;  ///< one GEMM's time on the GPU, s
  int line = 0;        ///< line of the table file it came from (0: built in code)
  bool operator==(const GemmRow&) const = default;
};

struct GemmTable {
  std::string file;  ///< where it was read from, for messages ("" for none)
  std::vector<GemmRow> rows;
  [[nodiscard]] bool empty() const { return rows.empty(); }
  [[nodiscard]] bool has(GemmDtype dtype) const;
  bool operator==(const GemmTable&) const = default;
};

/// Reads a table as CSV: lines starting with '#' are comments (the GPU, driver and library
/// versions tools/gemm_sweep.py writes), then a header naming the columns m, n, k, dtype and the
/// time with its unit (time_us, time_ms or time_s), in any order (other columns are ignored),
/// then one row per GEMM. Throws Error naming `file` and the line for a missing header or unit,
/// a malformed or non-positive number, an unknown dtype, a repeated shape, a table without rows,
/// or rows of one dtype that do not form a grid (the first missing combination is named).
[[nodiscard]] GemmTable parse_gemm_table(std::string_view text, const std::string& file);

/// The same checks for a table built in code (lines 0 in messages).
void check_gemm_table(const GemmTable& table);

struct GemmLookup {
  double seconds = 0;
  bool clamped = false;  ///< a coordinate was beyond the grid and was held at its edge
};

/// The time of GEMM (m, n, k) of `dtype` from the table (see the file comment). The table must
/// pass check_gemm_table and hold rows of `dtype`; m, n, k >= 1.
[[nodiscard]] GemmLookup gemm_time(const GemmTable& table, int64_t m, int64_t n, int64_t k, GemmDtype dtype);

/// The spec-sheet roofline of one GEMM: the longer of its FLOPs at `peak_flops` (FLOP/s) and its
/// bytes (both inputs read and the output written once, `element_bytes` each) at `memory_bw`
/// (bytes/s).
[[nodiscard]] double gemm_roofline_time(int64_t m, int64_t n, int64_t k, double element_bytes,
                                        double peak_flops, double memory_bw);

}  // namespace stepcast::cluster
