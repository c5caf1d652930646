// Private to report/: aligned text tables (numbers right-aligned, words left), shared by the
// writers of predict's table and plan's.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <vector>

namespace stepcast::report::detail {

using Row = std::vector<std::string>;

/// One row, each cell padded to its column's width; the last column unpadded (no trailing
/// blanks, and a long bottleneck does not widen the table).
void append_row(fmt::memory_buffer& buf, const std::vector<bool>& right_aligned, const Row& row,
                const std::vector<std::size_t>& width);
/// The header and the rows, each column as wide as its widest cell.
void append_aligned(fmt::memory_buffer& buf, const Row& header, const std::vector<bool>& right_aligned,
                    const std::vector<Row>& rows);

}  // namespace stepcast::report::detail
