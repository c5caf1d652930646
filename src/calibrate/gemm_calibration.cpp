#include "stepcast/detail/calibrate/gemm_calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <utility>

#include "stepcast/detail/cluster/gemm_rows.hpp"
#include "stepcast/detail/text_file.hpp"
#include "stepcast/enum_names.hpp"
#include "stepcast/error.hpp"
#include "stepcast/units.hpp"

namespace stepcast::calibrate {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\r'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

/// The '#' lines of a table file, without the '#'; and the rates tools/gemm_sweep.py writes there.
void read_header(const std::string& text, const std::string& file, GemmCalibration& out) {
  size_t start = 0;
  int line = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view row = trim(std::string_view(text).substr(start, end - start));
    start = end + 1;
    ++line;
    if (row.empty()) continue;
    if (row.front() != '#') break;
    const std::string_view comment = trim(row.substr(1));
    out.header.emplace_back(comment);
    // "attention_flops: 450.0TFLOPS (how it was measured)": the value is the first word.
    auto value_of = [&](std::string_view key) -> std::optional<std::string> {
      if (!comment.starts_with(key)) return std::nullopt;
      std::string_view rest = trim(comment.substr(key.size()));
      return std::string(rest.substr(0, rest.find(' ')));
    };
    const SourceLocation where{file, line, "cluster.gpu.gemm"};
    if (auto v = value_of("attention_flops:")) out.attention_flops = parse_flops(*v, where);
    if (auto v = value_of("memory_bandwidth:")) out.memory_bw = parse_bandwidth(*v, where);
  }
}

}  // namespace

GemmCalibration calibrate_gemm(const std::string& table_path, const std::string& check_path) {
  GemmCalibration out;
  const std::string text = read_text_file(table_path, "GEMM table");
  out.table = cluster::parse_gemm_table(text, table_path);
  read_header(text, table_path, out);
  if (check_path.empty()) return out;
  out.check_file = check_path;
  const cluster::GemmTable checks =
      cluster::detail::parse_gemm_rows(read_text_file(check_path, "held-back GEMM rows"), check_path);
  std::vector<double> errors;
  for (const cluster::GemmRow& row : checks.rows) {
    if (!out.table.has(row.dtype)) {
      throw Error({check_path, row.line, "cluster.gpu.gemm"},
                  fmt::format("the table {} has no {} rows to check this row against", table_path,
                              cluster::to_string(row.dtype)));
    }
    const cluster::GemmLookup lookup = cluster::gemm_time(out.table, row.m, row.n, row.k, row.dtype);
    const GemmCheck check{row, lookup.seconds, lookup.seconds / row.seconds - 1, lookup.clamped};
    out.held_back.push_back(check);
    errors.push_back(std::fabs(check.error));
  }
  std::sort(errors.begin(), errors.end());
  const size_t n = errors.size();
  out.median_error = n % 2 == 1 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2]);
  for (double e : errors) out.mean_error += e / static_cast<double>(n);
  out.max_error = errors.back();
  return out;
}

std::string gemm_calibration_yaml(const GemmCalibration& c, const std::string& output_path) {
  namespace fs = std::filesystem;
  const fs::path directory = fs::absolute(fs::path(output_path)).parent_path();
  const fs::path table = fs::absolute(fs::path(c.table.file)).lexically_normal();
  fs::path relative = table.lexically_relative(directory);
  if (relative.empty()) relative = table;
  std::string yaml = fmt::format("# stepcast calibrate gemm {}: the GEMM table of", c.table.file);
  for (const std::string& line : c.header) yaml += fmt::format("\n#   {}", line);
  if (!c.check_file.empty()) {
    yaml += fmt::format("\n# held back ({}): {} rows, median |error| {:.1f}%, max {:.1f}%", c.check_file,
                        c.held_back.size(), 100 * c.median_error, 100 * c.max_error);
  }
  yaml += "\nworkload:\n  compute: shapes\ncluster:\n  gpu:\n";
  yaml += fmt::format("    gemm: {}\n", relative.string());
  if (c.attention_flops) yaml += fmt::format("    attention_flops: {}TFLOPS\n", *c.attention_flops / 1e12);
  if (c.memory_bw) yaml += fmt::format("    memory_bandwidth: {}GB/s\n", *c.memory_bw / 1e9);
  return yaml;
}

std::vector<GemmGrid> gemm_grids(const cluster::GemmTable& table) {
  std::vector<GemmGrid> grids;
  for (const cluster::GemmDtype dtype : enum_values<cluster::GemmDtype>()) {
    GemmGrid g;
    g.dtype = dtype;
    for (const cluster::GemmRow& row : table.rows) {
      if (row.dtype != dtype) continue;
      g.m.insert(row.m);
      g.n.insert(row.n);
      g.k.insert(row.k);
      ++g.rows;
    }
    if (g.rows > 0) grids.push_back(std::move(g));
  }
  return grids;
}

std::string gemm_calibration_text(const GemmCalibration& c) {
  std::string text = fmt::format("GEMM table {}", c.table.file);
  for (const std::string& line : c.header) text += fmt::format("\n  {}", line);
  text += "\n";
  for (const GemmGrid& g : gemm_grids(c.table)) {
    text += fmt::format("{}: {} rows, a grid of m {}..{} ({}) x n {}..{} ({}) x k {}..{} ({})\n",
                        cluster::to_string(g.dtype), g.rows, *g.m.begin(), *g.m.rbegin(), g.m.size(),
                        *g.n.begin(), *g.n.rbegin(), g.n.size(), *g.k.begin(), *g.k.rbegin(), g.k.size());
  }
  if (c.attention_flops) text += fmt::format("attention: {}\n", format_flops(*c.attention_flops));
  if (c.memory_bw) text += fmt::format("memory bandwidth: {}/s\n", format_bytes(*c.memory_bw));
  if (c.check_file.empty()) {
    text += "no held-back rows (--check): the table's error between its rows is not known\n";
    return text;
  }
  text += fmt::format("\nheld back ({}), predicted from the table:\n", c.check_file);
  text += fmt::format("{:>8} {:>8} {:>8} {:>6} {:>12} {:>12} {:>8}\n", "m", "n", "k", "dtype", "measured",
                      "predicted", "error");
  for (const GemmCheck& check : c.held_back) {
    const cluster::GemmRow& r = check.measured;
    text +=
        fmt::format("{:>8} {:>8} {:>8} {:>6} {:>12} {:>12} {:>+7.1f}%{}\n", r.m, r.n, r.k,
                    cluster::to_string(r.dtype), format_duration(r.seconds), format_duration(check.predicted),
                    100 * check.error, check.clamped ? " (outside the grid: clamped)" : "");
  }
  text += fmt::format("{} held-back rows: median |error| {:.1f}%, mean {:.1f}%, max {:.1f}%\n",
                      c.held_back.size(), 100 * c.median_error, 100 * c.mean_error, 100 * c.max_error);
  return text;
}

}  // namespace stepcast::calibrate
