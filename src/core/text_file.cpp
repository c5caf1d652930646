#include "stepcast/detail/text_file.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "stepcast/error.hpp"

namespace stepcast {

std::string read_text_file(const std::string& path, std::string_view what, uint64_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error({path, 0, ""}, fmt::format("cannot read {}: it is a directory", what));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error({path, 0, ""}, fmt::format("cannot read {}: {}", what, std::strerror(errno)));
  std::string text;
  char chunk[1 << 16];
  // Chunks, not the file's size: pipes and devices have none.
  while (in) {
    in.read(chunk, sizeof chunk);
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      throw Error({path, 0, ""}, fmt::format("cannot read {}: more than {} MiB, which no {} is", what,
                                             max_bytes >> 20, what));
    }
  }
  if (in.bad()) throw Error({path, 0, ""}, fmt::format("cannot read {}: read error", what));
  return text;
}

std::string_view trim_space(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) text.remove_suffix(1);
  return text;
}

std::optional<std::string_view> next_table_line(std::string_view& text, int& line_number) {
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = trim_space(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    if (!line.empty() && line.front() != '#') return line;
  }
  return std::nullopt;
}

std::vector<std::string_view> split_commas(std::string_view line) {
  std::vector<std::string_view> fields;
  for (;;) {
    const size_t comma = line.find(',');
    fields.push_back(trim_space(line.substr(0, comma)));
    if (comma == std::string_view::npos) return fields;
    line.remove_prefix(comma + 1);
  }
}

}  // namespace stepcast
