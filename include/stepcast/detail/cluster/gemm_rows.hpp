// Private to cluster/ and calibrate/: the rows of a GEMM table file without the grid rule, for
// the held-back rows `stepcast calibrate gemm` checks a table against (they lie between the grid's
// points by design). The file format and every other check are parse_gemm_table's
// (stepcast/cluster/gemm_table.hpp).
#pragma once

#include <string>
#include <string_view>

#include "stepcast/cluster/gemm_table.hpp"

namespace stepcast::cluster::detail {

/// parse_gemm_table without the grid check: throws Error naming `file` and the line for a missing
/// header or unit, a malformed or non-positive number, an unknown dtype, a repeated shape or no rows.
[[nodiscard]] GemmTable parse_gemm_rows(std::string_view text, const std::string& file);

}  // namespace stepcast::cluster::detail
