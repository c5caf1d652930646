// Private to report/: the JSON text pieces every writer shares, appended to an fmt buffer so
// that writers stream through one small buffer instead of building a string per value.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace stepcast::report::detail {

/// Appends `text` as a JSON string literal, quotes included (see json_quote).
void append_json_string(fmt::memory_buffer& buf, std::string_view text);
/// Appends a JSON number: shortest round-trip form, or null for NaN/Inf (JSON has neither).
void append_json_number(fmt::memory_buffer& buf, double value);
/// True when `text` matches the JSON number grammar, so it may be written without quotes.
[[nodiscard]] bool is_json_number(std::string_view text);

/// Buffers that grow past this are handed to the stream: large enough to amortise
/// ostream::write, small enough that a million-span trace never sits in memory as text.
inline constexpr std::size_t kFlushBytes = 64 * 1024;

}  // namespace stepcast::report::detail
