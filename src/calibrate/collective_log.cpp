#include "stepcast/detail/calibrate/collective_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "stepcast/detail/text_file.hpp"
#include "stepcast/error.hpp"
#include "stepcast/units.hpp"

namespace stepcast::calibrate {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_whitespace(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}


std::optional<double> to_number(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

bool is_unsigned_integer(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// Calls `f(line_number, line)` for every line of `text` (without the newline).
template <typename F>
void for_each_line(std::string_view text, F&& f) {
  int number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    f(++number, text.substr(pos, end - pos));
    pos = end + 1;
  }
}

/// The least time a measurement may give: nccl-tests prints microseconds with two decimals, and
/// no collective completes in under a nanosecond. Below it, a time that is positive in the file can
/// be 0 s or subnormal once converted (4004.9e-324 us), and the fitted bandwidth is infinite.
constexpr double kMinTime = 1e-9;

/// A point of a real sweep: a size in (0, 1 PB] and a time in [1 ns, 1e6 s] (limits in units.hpp).
void check_point(const std::string& file, int line, double bytes, std::string_view bytes_text, double time,
                 const std::string& time_key, std::string_view time_text) {
  if (!(bytes > 0 && bytes <= limits::kMaxBytes)) {
    throw Error({file, line, "size"}, fmt::format("expected a size in (0, {:g}] bytes, got '{}'", limits::kMaxBytes,
                                                  bytes_text));
  }
  if (!(time >= kMinTime && time <= limits::kMaxDuration)) {
    throw Error({file, line, time_key}, fmt::format("'{}' is a time of {:g} s, outside [1 ns, {:g} s]", time_text,
                                                    time, limits::kMaxDuration));
  }
}

/// Sorts by size and rejects a size measured twice (two sweeps pasted into one file would
/// otherwise be silently mixed) and an empty result.
void finish(CollectiveLog& log, const std::string& what) {
  if (log.points.empty()) {
    throw Error({log.file, 0, ""}, fmt::format("no {} data rows found", what));
  }
  std::stable_sort(log.points.begin(), log.points.end(),
                   [](const Measurement& a, const Measurement& b) { return a.bytes < b.bytes; });
  for (size_t i = 1; i < log.points.size(); ++i) {
    if (log.points[i].bytes == log.points[i - 1].bytes) {
      throw Error({log.file, log.points[i].line, "size"},
                  fmt::format("size {} B already measured on line {}; split sweeps into separate files",
                              log.points[i].bytes, log.points[i - 1].line));
    }
  }
}

}  // namespace

std::string_view to_string(LogFormat format) {
  return is_named(format) ? name_of(format) : "?";
}

CollectiveLog parse_nccl_tests_log(std::string_view text, const std::string& file_name, Placement placement) {
  CollectiveLog log;
  log.file = file_name;
  log.format = LogFormat::NcclTests;
  for_each_line(text, [&](int number, std::string_view raw) {
    const std::string_view line = trim(raw);
    // Comments, the column header, "# Avg bus bandwidth", and anything that is not a row of the
    // table (NCCL INFO lines start with a host name, banners with words) are skipped.
    if (line.empty() || line.front() == '#') return;
    const std::vector<std::string_view> f = split_whitespace(line);
    if (!is_unsigned_integer(f.front())) {
      // A row of the table with a size that is not a count of bytes ('1e3', 'abc') is a damaged
      // row, not a line to skip: it would silently drop a size from the fit.
      const bool table_shaped =
          (f.size() == 8 || f.size() == 9 || f.size() == 12 || f.size() == 13) &&
          (f[3] == "sum" || f[3] == "prod" || f[3] == "max" || f[3] == "min" || f[3] == "avg");
      if (table_shaped) {
        throw Error({file_name, number, "size"},
                    fmt::format("expected a size in bytes (a whole number), got '{}'", f.front()));
      }
      return;
    }
    // size count type redop [root] then 4 out-of-place and 4 in-place columns. `root` was added
    // in nccl-tests 2.10; older logs have 12 fields, newer 13. Either half may be the only one
    // (e.g. a log cut after the out-of-place columns), which the chosen placement must match.
    const SourceLocation where{file_name, number, ""};
    const size_t n = f.size();
    const bool has_root = n == 13 || n == 9;
    if (!(n == 12 || n == 13 || n == 8 || n == 9)) {
      throw Error(where,
                  fmt::format("expected an all_reduce_perf row (size count type redop [root] time algbw "
                              "busbw #wrong time algbw busbw #wrong), got {} fields",
                              n));
    }
    if (to_number(f[2]) || to_number(f[3])) {
      throw Error(
          {file_name, number, "type"},
          fmt::format("expected a data type and a reduction (e.g. 'float sum'), got '{} {}'", f[2], f[3]));
    }
    const size_t first = has_root ? 5 : 4;
    const size_t half = placement == Placement::OutOfPlace ? first : first + 4;
    if (half + 3 >= n) {
      throw Error({file_name, number, "time"}, "the row has no in-place columns");
    }
    const auto bytes = to_number(f[0]);
    const auto time_us = to_number(f[half]);
    if (!bytes || !time_us) {
      throw Error({file_name, number, "time"},
                  fmt::format("expected a time in microseconds, got '{}'", f[half]));
    }
    if (*time_us <= 0) {
      throw Error({file_name, number, "time"}, fmt::format("expected a time > 0 us, got '{}'", f[half]));
    }
    if (*bytes <= 0) {
      throw Error({file_name, number, "size"}, fmt::format("expected a size > 0 bytes, got '{}'", f[0]));
    }
    check_point(file_name, number, *bytes, f[0], *time_us * 1e-6, "time", f[half]);
    log.points.push_back({*bytes, *time_us * 1e-6, number});
  });
  finish(log, "all_reduce_perf");
  return log;
}

CollectiveLog parse_xla_table(std::string_view text, const std::string& file_name) {
  CollectiveLog log;
  log.file = file_name;
  log.format = LogFormat::XlaTable;
  std::map<std::string, size_t, std::less<>> column;
  int header_line = 0;
  for_each_line(text, [&](int number, std::string_view raw) {
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') return;
    const std::vector<std::string_view> f = split_commas(line);
    if (header_line == 0) {
      header_line = number;
      for (size_t i = 0; i < f.size(); ++i) {
        // A repeated name would leave the header wider than its columns, and rows of the
        // columns' count would then be read past their end.
        if (!column.emplace(std::string(f[i]), i).second) {
          throw Error({file_name, number, std::string(f[i])},
                      fmt::format("column '{}' appears twice in the CSV header", f[i]));
        }
      }
      for (const char* required : {"collective", "bytes"}) {
        if (!column.contains(required)) {
          throw Error({file_name, number, required},
                      fmt::format("expected a CSV header with columns collective, bytes and "
                                  "network_throughput_bytes_per_sec or time_us; '{}' is missing",
                                  required));
        }
      }
      if (!column.contains("network_throughput_bytes_per_sec") && !column.contains("time_us")) {
        throw Error({file_name, number, "time_us"},
                    "expected a network_throughput_bytes_per_sec or a time_us column");
      }
      return;
    }
    if (f.size() != column.size()) {
      throw Error({file_name, number, ""},
                  fmt::format("expected {} comma-separated fields as in the header (line {}), got {}",
                              column.size(), header_line, f.size()));
    }
    if (f[column.at("collective")] != "all-reduce") return;
    auto number_at = [&](const char* name) {
      const std::string_view cell = f[column.at(name)];
      const auto value = to_number(cell);
      if (!value || *value <= 0) {
        throw Error({file_name, number, name}, fmt::format("expected a number > 0, got '{}'", cell));
      }
      return *value;
    };
    const double bytes = number_at("bytes");
    // The throughput is the measurement (bytes / runtime); time_us is derived from it and
    // rounded to 10 ns, which is 0.03% at the smallest sizes.
    const char* time_column =
        column.contains("network_throughput_bytes_per_sec") ? "network_throughput_bytes_per_sec" : "time_us";
    const double time = column.contains("network_throughput_bytes_per_sec")
                            ? bytes / number_at("network_throughput_bytes_per_sec")
                            : number_at("time_us") * 1e-6;
    check_point(file_name, number, bytes, f[column.at("bytes")], time, time_column, f[column.at(time_column)]);
    if (column.contains("group_size")) {
      const double group_cell = number_at("group_size");
      if (group_cell > 1e6 || group_cell != std::floor(group_cell)) {
        throw Error({file_name, number, "group_size"},
                    fmt::format("expected a whole number of ranks <= 1e6, got {}", group_cell));
      }
      const int group = static_cast<int>(group_cell);
      if (log.group_size != 0 && group != log.group_size) {
        throw Error({file_name, number, "group_size"},
                    fmt::format("all-reduce rows of group sizes {} and {} in one table; keep one",
                                log.group_size, group));
      }
      log.group_size = group;
    }
    log.points.push_back({bytes, time, number});
  });
  finish(log, "all-reduce");
  return log;
}

CollectiveLog read_collective_log(const std::string& path, LogFormat format, Placement placement) {
  const std::string text = read_text_file(path, "collective log");
  if (format == LogFormat::Auto) {
    // The first line that is not a comment decides: the XLA table's CSV header names a
    // `collective` column; an nccl-tests log has no such line.
    format = LogFormat::NcclTests;
    bool decided = false;
    for_each_line(text, [&](int, std::string_view raw) {
      const std::string_view line = trim(raw);
      if (decided || line.empty() || line.front() == '#') return;
      decided = true;
      for (std::string_view name : split_commas(line)) {
        if (name == "collective") format = LogFormat::XlaTable;
      }
    });
  }
  return format == LogFormat::XlaTable ? parse_xla_table(text, path)
                                       : parse_nccl_tests_log(text, path, placement);
}

}  // namespace stepcast::calibrate
