// Test helpers shared by the suites that read the project's shared data set (../shared/data, as
// STEPCAST_SHARED_DATA names it): a table's path and its CSV rows.
#pragma once

#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace stepcast::testing {

/// One CSV row: header cell -> value.
using CsvRow = std::map<std::string, std::string>;

/// The path of `file` in the shared data set's tables/.
inline std::string shared_table(const std::string& file) {
  return std::string(STEPCAST_SHARED_DATA) + "/tables/" + file;
}

/// The rows of a shared-data CSV ('#' lines are comments, the first other line the header; a
/// double-quoted cell may hold commas). Empty when the file cannot be read.
inline std::vector<CsvRow> read_csv(const std::string& path) {
  std::vector<CsvRow> rows;
  std::ifstream in(path);
  std::vector<std::string> header;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (const char c : line) {
      if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        cells.emplace_back();
      } else if (c != '\r') {
        cells.back() += c;
      }
    }
    if (header.empty()) {
      header = cells;
      continue;
    }
    CsvRow row;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace stepcast::testing
