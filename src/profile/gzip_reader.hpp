// Private: a file read sequentially, gunzipped on the fly when it starts with the gzip magic.
// Used by the trace readers so that .json and .json.gz go through the same streaming path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace stepcast::profile::detail {

/// Sequential reader of a plain or gzipped file. Not copyable; owns the open file.
class InputFile {
 public:
  /// Opens `path`; throws stepcast::Error naming it when it cannot be opened.
  explicit InputFile(const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  /// Reads up to `n` (decompressed) bytes into `dst`; returns 0 at the end of the data.
  /// Throws stepcast::Error for a truncated or corrupt gzip stream or a read error.
  size_t read(char* dst, size_t n);

  [[nodiscard]] bool gzip() const noexcept { return gz_ != nullptr; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// Decompressed bytes returned so far.
  [[nodiscard]] uint64_t bytes_read() const noexcept { return bytes_read_; }

 private:
  std::string path_;
  void* gz_ = nullptr;  // gzFile, kept opaque so that zlib.h stays in the .cpp
  std::FILE* plain_ = nullptr;
  uint64_t bytes_read_ = 0;
};

}  // namespace stepcast::profile::detail
