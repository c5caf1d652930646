// The one rule of every output file a command or library call writes (--csv, --trace-out,
// calibrate --output, export --chakra, and the same arguments from Python): missing parent
// directories are created, as mkdir -p would; anything that still keeps the file from being
// written (a parent that is a file, no permission, a directory given as the file) is an error
// naming the option.
#pragma once

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "stepcast/error.hpp"

namespace stepcast {

inline void create_parent_directories(const std::string& path, const std::string& option) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) {
    throw Error({path, 0, option},
                fmt::format("cannot create the directory {}: {}", parent.string(), ec.message()));
  }
}

inline std::ofstream open_output(const std::string& path, const std::string& option) {
  create_parent_directories(path, option);
  std::ofstream out(path);
  if (!out) throw Error({path, 0, option}, "cannot open file for writing");
  return out;
}

}  // namespace stepcast
