// JSON string escaping, number formatting and JsonWriter: the one JSON writer of report/ (the
// Chrome trace writer shares the string and number pieces).
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

void JsonWriter::key(std::string_view name) {
  separate();
  append_json_string(buf_, name);
  buf_.append(std::string_view(": "));
  after_key_ = true;
}

void JsonWriter::flush() {
  out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
}

// Before any value or key: a comma after the previous sibling, then a newline and indent (or,
// on one line, a space). A value right after its key goes on the key's line.
void JsonWriter::separate() {
  if (buf_.size() >= kFlushBytes) flush();
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (empty_.empty()) return;
  const bool first = empty_.back();
  empty_.back() = false;
  switch (layout_) {
    case Layout::Indented:
      if (!first) buf_.push_back(',');
      newline(empty_.size());
      break;
    case Layout::OneLine:
      if (!first) buf_.append(std::string_view(", "));
      break;
  }
}

void JsonWriter::open(char bracket) {
  separate();
  buf_.push_back(bracket);
  empty_.push_back(true);
}

void JsonWriter::close(char bracket) {
  const bool was_empty = empty_.back();
  empty_.pop_back();
  switch (layout_) {
    case Layout::Indented:
      if (!was_empty) newline(empty_.size());
      break;
    case Layout::OneLine:
      break;
  }
  buf_.push_back(bracket);
  if (empty_.empty()) buf_.push_back('\n');
}

void JsonWriter::newline(std::size_t depth) {
  buf_.push_back('\n');
  for (std::size_t i = 0; i < depth; ++i) buf_.append(std::string_view("  "));
}

}  // namespace detail

std::string json_quote(std::string_view text) {
  fmt::memory_buffer buf;
  detail::append_json_string(buf, text);
  return fmt::to_string(buf);
}

}  // namespace stepcast::report
