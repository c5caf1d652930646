// Reading a whole text input (scenario, custom topology, layer table, ASTRA-sim workload,
// nccl-tests log) with a size limit: such files are kilobytes, and without a limit a device
// such as /dev/zero given by mistake is read until memory runs out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepcast {

/// Text inputs above this are not what they claim to be.
inline constexpr uint64_t kMaxTextInputBytes = uint64_t{64} << 20;

/// The file's bytes. Throws Error({path, 0, ""}) naming `what` when it cannot be opened or read
/// or holds more than `max_bytes` (a directory cannot be opened).
[[nodiscard]] std::string read_text_file(const std::string& path, std::string_view what,
                                         uint64_t max_bytes = kMaxTextInputBytes);

/// `text` without the white space at either end.
[[nodiscard]] std::string_view trim_space(std::string_view text);

/// The next line of a table's `text` that is neither blank nor a '#' comment, trimmed, consumed
/// from `text`; `line_number` counts every line read (1-based). nullopt at the end.
[[nodiscard]] std::optional<std::string_view> next_table_line(std::string_view& text, int& line_number);

/// The comma-separated fields of one line of a CSV table without quoting, each trimmed.
[[nodiscard]] std::vector<std::string_view> split_commas(std::string_view line);

}  // namespace stepcast
