// JSON string escaping and number formatting shared by the JSON and Chrome trace writers.
#include "report/json_text.hpp"

#include <cmath>
#include <iterator>

#include "stepcast/report/report.hpp"

namespace stepcast::report {
namespace detail {

void append_json_string(fmt::memory_buffer& buf, std::string_view text) {
  auto out = std::back_inserter(buf);
  buf.push_back('"');
  // Copy runs of ordinary bytes at once; only quotes, backslashes and control characters
  // (RFC 8259 section 7) need escaping. Bytes >= 0x80 pass through, so UTF-8 stays UTF-8.
  std::size_t run = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    buf.append(text.data() + run, text.data() + i);
    run = i + 1;
    switch (c) {
      case '"':
        buf.append(std::string_view("\\\""));
        break;
      case '\\':
        buf.append(std::string_view("\\\\"));
        break;
      case '\b':
        buf.append(std::string_view("\\b"));
        break;
      case '\f':
        buf.append(std::string_view("\\f"));
        break;
      case '\n':
        buf.append(std::string_view("\\n"));
        break;
      case '\r':
        buf.append(std::string_view("\\r"));
        break;
      case '\t':
        buf.append(std::string_view("\\t"));
        break;
      default:
        fmt::format_to(out, "\\u{:04x}", static_cast<unsigned>(c));
        break;
    }
  }
  buf.append(text.data() + run, text.data() + text.size());
  buf.push_back('"');
}

void append_json_number(fmt::memory_buffer& buf, double value) {
  if (!std::isfinite(value)) {
    // A NaN step time (e.g. a predictor that never finished a step) must not make the whole
    // file unreadable: JSON has no NaN or Infinity literal.
    buf.append(std::string_view("null"));
    return;
  }
  // fmt's "{}" is the shortest text that reads back to the same double.
  fmt::format_to(std::back_inserter(buf), "{}", value);
}

bool is_json_number(std::string_view text) {
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? -- "+5", ".5", "5.", "0x10", "inf" fail.
  std::size_t i = 0;
  const std::size_t n = text.size();
  auto digit = [&](std::size_t k) { return k < n && text[k] >= '0' && text[k] <= '9'; };
  auto digits = [&] {
    std::size_t start = i;
    while (digit(i)) ++i;
    return i > start;
  };
  if (i < n && text[i] == '-') ++i;
  if (i < n && text[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < n && text[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == n;
}

}  // namespace detail

std::string json_quote(std::string_view text) {
  fmt::memory_buffer buf;
  detail::append_json_string(buf, text);
  return fmt::to_string(buf);
}

}  // namespace stepcast::report
