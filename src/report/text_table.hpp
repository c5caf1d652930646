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

/// A long time as people say it: "2 h 59 min", "1 min 59 s", "35.2 s", "120 ms".
[[nodiscard]] std::string format_span(double seconds);
/// An amount of money: below 1,000 format_number's 3 significant digits ("2.56"), from 1,000 on
/// whole units with thousands separated ("11,405,494", not "11400000", which reads as exact and
/// makes two totals 0.2% apart look alike).
[[nodiscard]] std::string format_amount(double amount);
/// An amount of money in the scenario's currency: "2.56 USD", "11,405,494 USD", without the
/// currency when it is unnamed.
[[nodiscard]] std::string format_money(double amount, const std::string& currency);

}  // namespace stepcast::report::detail
