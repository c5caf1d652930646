// Layer table CSV reader; see the header for the format and the Workload it gives.
#include "stepcast/detail/profile/layer_table.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "stepcast/detail/text_file.hpp"
#include "stepcast/error.hpp"
#include "stepcast/units.hpp"

namespace stepcast::profile {
namespace {

constexpr std::array<std::string_view, 4> kColumns = {"layer", "forward_time", "backward_time",
                                                      "parameter_bytes"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

/// Splits one CSV line; double quotes protect commas, "" is a quote inside quotes.
std::vector<std::string> split_cells(std::string_view line, const SourceLocation& where) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell.push_back(c);
      }
    } else if (c == '"' && trim(cell).empty()) {
      cell.clear();
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back(trim(cell));
      cell.clear();
    } else {
      cell.push_back(c);
    }
  }
  if (quoted) throw Error(where, "unterminated double quote");
  cells.emplace_back(trim(cell));
  return cells;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

workload::Workload parse_layer_table(std::string_view text, const std::string& file_name) {
  std::string name = std::filesystem::path(file_name).stem().string();
  workload::Workload w;
  w.name = name.empty() ? "layer-table" : name;
  w.lanes = {"gpu"};

  struct Row {
    std::string layer;
    double forward = 0;
    double backward = 0;
    double bytes = 0;
  };
  std::vector<Row> rows;
  std::set<std::string> seen;
  std::optional<std::array<int, 4>> column_of;  // kColumns index -> cell index
  size_t num_cells = 0;
  int line_number = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_number;
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string> cells = split_cells(line, {file_name, line_number, ""});
    if (!column_of) {
      std::array<int, 4> cols{-1, -1, -1, -1};
      for (size_t c = 0; c < cells.size(); ++c) {
        const std::string key = lower(cells[c]);
        size_t k = 0;
        while (k < kColumns.size() && kColumns[k] != key) ++k;
        if (k == kColumns.size()) {
          throw Error({file_name, line_number, cells[c]},
                      "unknown column; the header is layer,forward_time,backward_time,parameter_bytes");
        }
        if (cols[k] >= 0) throw Error({file_name, line_number, cells[c]}, "duplicate column");
        cols[k] = static_cast<int>(c);
      }
      for (size_t k = 0; k < kColumns.size(); ++k) {
        if (cols[k] < 0) {
          throw Error({file_name, line_number, std::string(kColumns[k])},
                      "missing column; the header is layer,forward_time,backward_time,parameter_bytes");
        }
      }
      column_of = cols;
      num_cells = cells.size();
      continue;
    }
    if (cells.size() != num_cells) {
      throw Error({file_name, line_number, ""},
                  fmt::format("expected {} cells as in the header, got {}", num_cells, cells.size()));
    }
    auto cell = [&](size_t k) -> const std::string& { return cells[static_cast<size_t>((*column_of)[k])]; };
    auto at = [&](size_t k) { return SourceLocation{file_name, line_number, std::string(kColumns[k])}; };
    Row row;
    row.layer = cell(0);
    if (row.layer.empty()) throw Error(at(0), "empty layer name");
    if (!seen.insert(row.layer).second) throw Error(at(0), fmt::format("duplicate layer '{}'", row.layer));
    row.forward = parse_duration(cell(1), at(1));
    row.backward = parse_duration(cell(2), at(2));
    row.bytes = parse_bytes(cell(3), at(3));
    rows.push_back(std::move(row));
  }
  if (!column_of)
    throw Error({file_name, 0, ""}, "empty layer table: expected a header and one row per layer");
  if (rows.empty()) throw Error({file_name, line_number, ""}, "layer table has a header but no layers");

  const int n = static_cast<int>(rows.size());
  for (int l = 0; l < n; ++l) {
    workload::Op op{.name = "fwd:" + rows[l].layer,
                    .kind = workload::OpKind::Forward,
                    .duration = rows[l].forward,
                    .lane = 0,
                    .layer = l,
                    .deps = {}};
    if (l > 0) op.deps.push_back(l - 1);
    w.ops.push_back(std::move(op));
  }
  for (int l = n - 1; l >= 0; --l) {
    const int index = static_cast<int>(w.ops.size());
    w.ops.push_back({.name = "bwd:" + rows[l].layer,
                     .kind = workload::OpKind::Backward,
                     .duration = rows[l].backward,
                     .lane = 0,
                     .layer = l,
                     .deps = {index - 1}});
  }
  for (int l = 0; l < n; ++l) {
    if (rows[l].bytes <= 0) continue;  // a layer without parameters has no gradient to exchange
    w.tensors.push_back(
        {.name = rows[l].layer, .bytes = rows[l].bytes, .producer = 2 * n - 1 - l, .consumers = {l}});
  }
  return w;
}

workload::Workload read_layer_table(const std::string& path) {
  return parse_layer_table(read_text_file(path, "layer table"), path);
}

}  // namespace stepcast::profile
