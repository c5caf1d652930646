#include "stepcast/cluster/gemm_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "stepcast/detail/cluster/gemm_rows.hpp"
#include "stepcast/detail/text_file.hpp"
#include "stepcast/error.hpp"

namespace stepcast::cluster {

namespace {

constexpr const char* kKey = "cluster.gpu.gemm";

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// The grid axes of one dtype's rows, ascending, and the rows by coordinates.
struct Grid {
  std::vector<int64_t> m, n, k;
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> seconds;
};

Grid grid_of(const GemmTable& table, GemmDtype dtype) {
  Grid grid;
  std::set<int64_t> m, n, k;
  for (const GemmRow& row : table.rows) {
    if (row.dtype != dtype) continue;
    m.insert(row.m);
    n.insert(row.n);
    k.insert(row.k);
    grid.seconds[{row.m, row.n, row.k}] = row.seconds;
  }
  grid.m.assign(m.begin(), m.end());
  grid.n.assign(n.begin(), n.end());
  grid.k.assign(k.begin(), k.end());
  return grid;
}

/// Where `value` falls on `axis`: the two neighbouring grid values' indices and the weight of
/// the upper one, linear in log(value); a value beyond the axis is held at its end.
struct Bracket {
  size_t lower = 0, upper = 0;
  double weight = 0;
  bool clamped = false;
};

Bracket bracket(const std::vector<int64_t>& axis, int64_t value) {
  if (value <= axis.front()) return {0, 0, 0, value < axis.front()};
  if (value >= axis.back()) return {axis.size() - 1, axis.size() - 1, 0, value > axis.back()};
  const auto upper = static_cast<size_t>(std::upper_bound(axis.begin(), axis.end(), value) - axis.begin());
  const size_t lower = upper - 1;
  const double lo = std::log(static_cast<double>(axis[lower]));
  const double hi = std::log(static_cast<double>(axis[upper]));
  return {lower, upper, (std::log(static_cast<double>(value)) - lo) / (hi - lo), false};
}

double gemm_flops(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

}  // namespace

const char* to_string(GemmDtype dtype) {
  return name_c_str(dtype);
}

std::optional<GemmDtype> parse_gemm_dtype(std::string_view text) {
  const std::string name = lower(trim_space(text));
  return parse_name<GemmDtype>(name);
}

bool GemmTable::has(GemmDtype dtype) const {
  return std::any_of(rows.begin(), rows.end(), [dtype](const GemmRow& row) { return row.dtype == dtype; });
}

GemmTable parse_gemm_table(std::string_view text, const std::string& file) {
  GemmTable table = detail::parse_gemm_rows(text, file);
  check_gemm_table(table);
  return table;
}

namespace detail {

GemmTable parse_gemm_rows(std::string_view text, const std::string& file) {
  GemmTable table;
  table.file = file;
  // Column of each field in the header; -1 until the header is read.
  int col_m = -1, col_n = -1, col_k = -1, col_dtype = -1, col_time = -1;
  double time_unit = 0;  // s per unit of the time column
  bool header = false;
  int line_number = 0;
  while (const std::optional<std::string_view> line = next_table_line(text, line_number)) {
    const std::vector<std::string_view> fields = split_commas(*line);
    const SourceLocation where{file, line_number, kKey};
    if (!header) {
      for (int i = 0; i < static_cast<int>(fields.size()); ++i) {
        const std::string name = lower(fields[static_cast<size_t>(i)]);
        if (name == "m") col_m = i;
        if (name == "n") col_n = i;
        if (name == "k") col_k = i;
        if (name == "dtype") col_dtype = i;
        const std::array<std::pair<const char*, double>, 3> units{
            {{"time_us", 1e-6}, {"time_ms", 1e-3}, {"time_s", 1}}};
        for (const auto& [unit_name, unit] : units) {
          if (name == unit_name) {
            col_time = i;
            time_unit = unit;
          }
        }
        if (name == "time") {
          throw Error(where, "the time column needs its unit in its name: time_us, time_ms or time_s");
        }
      }
      if (col_m < 0 || col_n < 0 || col_k < 0 || col_dtype < 0 || col_time < 0) {
        throw Error(where, fmt::format("expected a header naming the columns m, n, k, dtype and time_us (or "
                                       "time_ms, time_s), got '{}'",
                                       *line));
      }
      header = true;
      continue;
    }
    const int needed = std::max({col_m, col_n, col_k, col_dtype, col_time}) + 1;
    if (static_cast<int>(fields.size()) < needed) {
      throw Error(where, fmt::format("expected at least {} comma-separated fields, got {}: '{}'", needed,
                                     fields.size(), *line));
    }
    auto dimension = [&](int column, const char* name) {
      const std::string_view field = fields[static_cast<size_t>(column)];
      int64_t value = 0;
      const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
      if (ec != std::errc() || ptr != field.data() + field.size() || value < 1 ||
          value > (int64_t{1} << 40)) {
        throw Error(where, fmt::format("{}: expected an integer in [1, 2^40], got '{}'", name, field));
      }
      return value;
    };
    GemmRow row{.m = dimension(col_m, "m"),
                .n = dimension(col_n, "n"),
                .k = dimension(col_k, "k"),
                .dtype = GemmDtype::BF16,
                .seconds = 0,
                .line = line_number};
    const std::string_view dtype_text = fields[static_cast<size_t>(col_dtype)];
    const std::optional<GemmDtype> dtype = parse_gemm_dtype(dtype_text);
    if (!dtype)
      throw Error(where, fmt::format("dtype: expected bf16, fp16, fp32 or fp8, got '{}'", dtype_text));
    row.dtype = *dtype;
    const std::string time_text(fields[static_cast<size_t>(col_time)]);
    char* stop = nullptr;
    const double time = std::strtod(time_text.c_str(), &stop);
    if (time_text.empty() || stop != time_text.c_str() + time_text.size() || !std::isfinite(time) ||
        !(time > 0)) {
      throw Error(where, fmt::format("time: expected a finite time > 0, got '{}'", time_text));
    }
    row.seconds = time * time_unit;
    table.rows.push_back(row);
  }
  if (!header) throw Error({file, line_number, kKey}, "the table is empty: expected a header and GEMM rows");
  if (table.rows.empty()) throw Error({file, line_number, kKey}, "the table has a header and no GEMM rows");
  // Repeated shapes, checked here for held-back rows too (check_gemm_table adds the grid).
  std::map<std::tuple<int64_t, int64_t, int64_t, GemmDtype>, int> seen;
  for (const GemmRow& row : table.rows) {
    auto [it, inserted] = seen.emplace(std::make_tuple(row.m, row.n, row.k, row.dtype), row.line);
    if (!inserted) {
      throw Error({file, row.line, kKey},
                  fmt::format("GEMM m={} n={} k={} {} is given twice (also on line {})", row.m, row.n, row.k,
                              to_string(row.dtype), it->second));
    }
  }
  return table;
}

}  // namespace detail

void check_gemm_table(const GemmTable& table) {
  std::map<std::tuple<int64_t, int64_t, int64_t, GemmDtype>, int> seen;
  for (const GemmRow& row : table.rows) {
    const SourceLocation where{table.file, row.line, kKey};
    if (row.m < 1 || row.n < 1 || row.k < 1) {
      throw Error(where, fmt::format("expected m, n, k >= 1, got {} x {} x {}", row.m, row.n, row.k));
    }
    if (!(row.seconds > 0) || !std::isfinite(row.seconds)) {
      throw Error(where, fmt::format("expected a finite time > 0 s, got {}", row.seconds));
    }
    auto [it, inserted] = seen.emplace(std::make_tuple(row.m, row.n, row.k, row.dtype), row.line);
    if (!inserted) {
      throw Error(where, fmt::format("GEMM m={} n={} k={} {} is given twice (also on line {})", row.m, row.n,
                                     row.k, to_string(row.dtype), it->second));
    }
  }
  for (GemmDtype dtype : {GemmDtype::BF16, GemmDtype::FP16, GemmDtype::FP32, GemmDtype::FP8}) {
    if (!table.has(dtype)) continue;
    const Grid grid = grid_of(table, dtype);
    for (int64_t m : grid.m) {
      for (int64_t n : grid.n) {
        for (int64_t k : grid.k) {
          if (grid.seconds.count({m, n, k}) == 0) {
            throw Error(
                {table.file, 0, kKey},
                fmt::format("the {} rows do not form a grid: m={} n={} k={} is missing (each dtype needs "
                            "every combination of its m, n and k values: {} x {} x {} rows, got {})",
                            to_string(dtype), m, n, k, grid.m.size(), grid.n.size(), grid.k.size(),
                            grid.seconds.size()));
          }
        }
      }
    }
  }
}

GemmLookup gemm_time(const GemmTable& table, int64_t m, int64_t n, int64_t k, GemmDtype dtype) {
  STEPCAST_ASSERT(m >= 1 && n >= 1 && k >= 1);
  STEPCAST_ASSERT(table.has(dtype));
  const Grid grid = grid_of(table, dtype);
  const std::array<Bracket, 3> at{bracket(grid.m, m), bracket(grid.n, n), bracket(grid.k, k)};
  // Trilinear in the logs of the coordinates, of the log of the achieved rate.
  double log_rate = 0;
  for (int corner = 0; corner < 8; ++corner) {
    double weight = 1;
    std::array<size_t, 3> index{};
    for (size_t d = 0; d < 3; ++d) {
      const bool upper = ((corner >> d) & 1) != 0;
      weight *= upper ? at[d].weight : 1 - at[d].weight;
      index[d] = upper ? at[d].upper : at[d].lower;
    }
    if (weight == 0) continue;
    const int64_t gm = grid.m[index[0]], gn = grid.n[index[1]], gk = grid.k[index[2]];
    log_rate += weight * std::log(gemm_flops(gm, gn, gk) / grid.seconds.at({gm, gn, gk}));
  }
  const bool clamped = at[0].clamped || at[1].clamped || at[2].clamped;
  // Beyond the grid a shape runs at its edge's rate; below it, no faster than its edge: a GEMM
  // smaller than the smallest measured is bound by launch and latency, not by its FLOPs, so it
  // takes the edge's time along the dimensions it falls short in.
  const int64_t floor_m = std::max(m, grid.m.front()), floor_n = std::max(n, grid.n.front()),
                floor_k = std::max(k, grid.k.front());
  return {gemm_flops(floor_m, floor_n, floor_k) / std::exp(log_rate), clamped};
}

double gemm_roofline_time(int64_t m, int64_t n, int64_t k, double element_bytes, double peak_flops,
                          double memory_bw) {
  const auto dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k);
  const double bytes = element_bytes * (dm * dk + dk * dn + dm * dn);
  return std::max(gemm_flops(m, n, k) / peak_flops, bytes / memory_bw);
}

}  // namespace stepcast::cluster
