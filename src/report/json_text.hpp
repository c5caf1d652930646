// Private to report/: the one JSON writer. The text pieces (strings, numbers) and JsonWriter,
// which every JSON output of report/ goes through, so that escaping and non-finite numbers
// (null) are handled in one place. Appends to an fmt buffer that is flushed to the stream as it
// fills, so writers stream through one small buffer instead of building a string per value.
//
//   JsonWriter json(out, JsonWriter::Layout::OneLine);
//   json.begin_object();
//   json.key("time_s");
//   json.number(r.time);  // NaN -> null
//   json.end_object();    // {"time_s": 0.25}\n
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <ostream>
#include <string_view>
#include <vector>

#include "stepcast/report/report.hpp"

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

/// JSON emitter over an fmt buffer: tracks commas (and indentation) so a writer reads like
/// the document it produces. The document ends with a newline. Borrows `out`, which must
/// outlive it; what is buffered is written at the latest by the destructor.
class JsonWriter {
 public:
  enum class Layout : uint8_t {
    Indented,  ///< one member per line, two spaces per level (predictions: read by people too)
    OneLine,   ///< the whole document on one line, ", " and ": " between items (grep, jq -c)
  };

  explicit JsonWriter(std::ostream& out, Layout layout = Layout::Indented) : out_(out), layout_(layout) {}
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;
  ~JsonWriter() { flush(); }

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }

  void key(std::string_view name);
  /// A double: null when not finite, since JSON has no NaN or infinity.
  void number(double value) {
    separate();
    append_json_number(buf_, value);
  }
  /// A count of bytes: the nearest whole number, in digits (never an exponent), so that readers
  /// get an integer; null when not finite. The value given stays a double: only the text rounds.
  void bytes(double value) {
    separate();
    if (!std::isfinite(value)) {
      buf_.append(std::string_view("null"));
      return;
    }
    fmt::format_to(std::back_inserter(buf_), "{:.0f}", std::round(value) + 0.0);  // + 0.0: no "-0"
  }
  template <typename Integer>
  void integer(Integer value) {
    separate();
    fmt::format_to(std::back_inserter(buf_), "{}", value);
  }
  /// An integer, or null when absent (a rank the trace does not record).
  template <typename Integer>
  void integer(const std::optional<Integer>& value) {
    if (value) {
      integer(*value);
    } else {
      null();
    }
  }
  void string(std::string_view text) {
    separate();
    append_json_string(buf_, text);
  }
  void boolean(bool value) { raw(value ? "true" : "false"); }
  void null() { raw("null"); }
  /// Text already known to be a valid JSON value (checked by the caller).
  void raw(std::string_view json) {
    separate();
    buf_.append(json);
  }

  void flush();

 private:
  void separate();
  void open(char bracket);
  void close(char bracket);
  void newline(std::size_t depth);

  std::ostream& out_;
  Layout layout_;
  fmt::memory_buffer buf_;
  std::vector<bool> empty_;  ///< per open container: nothing written in it yet
  bool after_key_ = false;
};

/// A swept configuration as one object: each key with its value as given, numbers unquoted.
void write_config_json(JsonWriter& json, const Config& config);

/// "links": the first `shown` of `links` as [{"name", "busy", "bytes"}], then "links_left_out":
/// how many links that carried bytes are not in the list (those not shown, plus `left_out`
/// already dropped upstream). The one shape of links in every command's JSON.
void write_links_json(JsonWriter& json, const std::vector<sim::LinkLoad>& links, std::size_t shown,
                      std::size_t left_out);

/// One prediction as write_json writes it (with its swept configuration when not null).
void write_prediction_json(JsonWriter& json, const predict::Result& result, const Config* config);

}  // namespace stepcast::report::detail
