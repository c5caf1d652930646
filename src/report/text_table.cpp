#include "report/text_table.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>

#include "stepcast/units.hpp"

namespace stepcast::report::detail {

void append_row(fmt::memory_buffer& buf, const std::vector<bool>& right_aligned, const Row& row,
                const std::vector<std::size_t>& width) {
  auto it = std::back_inserter(buf);
  for (std::size_t c = 0; c < right_aligned.size(); ++c) {
    if (c > 0) buf.append(std::string_view("  "));
    if (c + 1 == right_aligned.size()) {
      // Last column unpadded: no trailing blanks, and a long bottleneck does not widen the table.
      buf.append(row[c]);
    } else if (right_aligned[c]) {
      fmt::format_to(it, "{:>{}}", row[c], width[c]);
    } else {
      fmt::format_to(it, "{:<{}}", row[c], width[c]);
    }
  }
  buf.push_back('\n');
}

void append_aligned(fmt::memory_buffer& buf, const Row& header, const std::vector<bool>& right_aligned,
                    const std::vector<Row>& rows) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  append_row(buf, right_aligned, header, width);
  for (const auto& row : rows) append_row(buf, right_aligned, row, width);
}

std::string format_span(double seconds) {
  if (!(seconds >= 60) || !std::isfinite(seconds)) return format_duration(seconds);
  const auto total = static_cast<long long>(std::llround(seconds));
  const long long days = total / 86400, hours = total % 86400 / 3600, minutes = total % 3600 / 60,
                  secs = total % 60;
  if (days > 0) return fmt::format("{} d {} h", days, hours);
  if (hours > 0) return fmt::format("{} h {} min", hours, minutes);
  return fmt::format("{} min {} s", minutes, secs);
}

std::string format_amount(double amount) {
  if (!(std::fabs(amount) >= 1000) || !std::isfinite(amount) || std::fabs(amount) >= 1e15)
    return format_number(amount);
  const std::string digits = fmt::format("{:.0f}", std::fabs(amount));
  std::string out = amount < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_money(double amount, const std::string& currency) {
  return currency.empty() ? format_amount(amount) : format_amount(amount) + " " + currency;
}

}  // namespace stepcast::report::detail
