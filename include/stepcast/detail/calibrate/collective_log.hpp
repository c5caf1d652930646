// Readers for measured all-reduce sweeps: the text log of nccl-tests' all_reduce_perf and XLA's
// collective performance table (CSV). Both become a CollectiveLog: one (bytes, seconds) point
// per message size, sorted by size, with the line each came from. Depends on error.hpp and
// units.hpp (the physical limits a point must meet).
//
// nccl-tests rows are `size count type redop [root] time algbw busbw #wrong time algbw busbw
// #wrong` (out-of-place, then in-place; time in us). Lines starting with '#' and lines that do
// not start with a number (NCCL INFO output, banners) are skipped; a line that starts with a
// size but is not a well-formed row throws. The XLA table is a CSV with a header naming the
// columns; only rows whose `collective` is `all-reduce` are read.
//
//   CollectiveLog log = read_collective_log("all_reduce.txt", LogFormat::Auto);
//   for (const Measurement& m : log.points) fmt::print("{} B: {} s\n", m.bytes, m.time);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/enum_names.hpp"

namespace stepcast::calibrate {

enum class LogFormat : uint8_t { Auto, NcclTests, XlaTable };
constexpr std::string_view name_of(LogFormat v) {
  switch (v) {
    case LogFormat::Auto:
      return "auto";
    case LogFormat::NcclTests:
      return "nccl-tests";
    case LogFormat::XlaTable:
      return "xla";
  }
  return {};
}

/// nccl-tests times each size twice: into a separate buffer (out-of-place) and in place.
enum class Placement : uint8_t { OutOfPlace, InPlace };
constexpr std::string_view name_of(Placement v) {
  switch (v) {
    case Placement::OutOfPlace:
      return "out-of-place";
    case Placement::InPlace:
      return "in-place";
  }
  return {};
}

/// One measured collective.
struct Measurement {
  double bytes = 0;  ///< message size per rank, bytes (nccl-tests' `size`)
  double time = 0;   ///< s, measured duration
  int line = 0;      ///< 1-based line of the file it was read from

  bool operator==(const Measurement&) const = default;
};

struct CollectiveLog {
  std::string file;                         ///< as given to the reader, for messages
  LogFormat format = LogFormat::NcclTests;  ///< never Auto after reading
  std::vector<Measurement> points;          ///< sorted by bytes, sizes distinct, at least one
  int group_size = 0;                       ///< ranks taking part when the file says so (XLA), else 0

  bool operator==(const CollectiveLog&) const = default;
};

/// "nccl-tests" or "xla".
[[nodiscard]] std::string_view to_string(LogFormat format);

/// Parses the text of an all_reduce_perf log. `file_name` is only used in messages. Throws
/// stepcast::Error (file, line) on a malformed row, a duplicate size, a non-positive time, a size
/// above 1 PB or a time outside [1 ns, 1e6 s] (once in seconds), or when no data row is found.
[[nodiscard]] CollectiveLog parse_nccl_tests_log(std::string_view text, const std::string& file_name,
                                                 Placement placement = Placement::OutOfPlace);

/// Parses the all-reduce rows of an XLA collective perf table (CSV with a header). The time is
/// bytes / network_throughput_bytes_per_sec, or time_us when the throughput column is absent.
/// Throws stepcast::Error (file, line, column) as parse_nccl_tests_log does, and when the rows
/// disagree on group_size.
[[nodiscard]] CollectiveLog parse_xla_table(std::string_view text, const std::string& file_name);

/// Reads `path` in `format`; Auto picks the XLA table when the first non-comment line is a CSV
/// header with a `collective` column, else nccl-tests. Throws stepcast::Error when the file
/// cannot be read, and whatever the parser throws.
[[nodiscard]] CollectiveLog read_collective_log(const std::string& path, LogFormat format = LogFormat::Auto,
                                                Placement placement = Placement::OutOfPlace);

}  // namespace stepcast::calibrate
