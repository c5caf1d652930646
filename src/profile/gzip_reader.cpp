#include "profile/gzip_reader.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "stepcast/error.hpp"

namespace stepcast::profile::detail {

namespace {
// zlib's own buffer: large enough that inflate works on big blocks, small next to a trace.
constexpr unsigned kGzipBufferBytes = 256u << 10;
}  // namespace

InputFile::InputFile(const std::string& path) : path_(path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    throw Error({path, 0, ""}, fmt::format("cannot open trace file: {}", std::strerror(errno)));
  }
  // A pipe (inspect <(zcat t.json.gz)) cannot be rewound after the magic is sniffed: zlib reads
  // it instead, from the first byte, inflating gzip and passing anything else through as is.
  struct stat info {};
  if (fstat(fileno(f), &info) == 0 && !S_ISREG(info.st_mode)) {
    const int fd = dup(fileno(f));
    std::fclose(f);
    gzFile gz = fd >= 0 ? gzdopen(fd, "rb") : nullptr;
    if (gz == nullptr) {
      if (fd >= 0) close(fd);
      throw Error({path, 0, ""}, "cannot read trace stream");
    }
    gzbuffer(gz, kGzipBufferBytes);
    gz_ = gz;
    return;
  }
  unsigned char magic[2] = {0, 0};
  const size_t got = std::fread(magic, 1, 2, f);
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    std::fclose(f);
    gzFile gz = gzopen(path.c_str(), "rb");
    if (gz == nullptr) throw Error({path, 0, ""}, "cannot open gzip trace file");
    gzbuffer(gz, kGzipBufferBytes);
    gz_ = gz;
    return;
  }
  std::rewind(f);
  plain_ = f;
}

InputFile::~InputFile() {
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
  if (plain_ != nullptr) std::fclose(plain_);
}

size_t InputFile::read(char* dst, size_t n) {
  if (n == 0) return 0;
  if (plain_ != nullptr) {
    const size_t got = std::fread(dst, 1, n, plain_);
    if (got == 0 && std::ferror(plain_)) {
      throw Error({path_, 0, ""}, fmt::format("read error after {} bytes", bytes_read_));
    }
    bytes_read_ += got;
    return got;
  }
  auto* gz = static_cast<gzFile>(gz_);
  // gzread takes an unsigned count; stay far below its limit.
  const unsigned ask = static_cast<unsigned>(std::min<size_t>(n, size_t{1} << 30));
  const int got = gzread(gz, dst, ask);
  int errnum = Z_OK;
  const char* message = gzerror(gz, &errnum);
  if (got < 0 || (errnum != Z_OK && errnum != Z_BUF_ERROR)) {
    throw Error({path_, 0, ""}, fmt::format("corrupt gzip data after {} decompressed bytes: {}", bytes_read_,
                                            message != nullptr ? message : "?"));
  }
  // zlib reports a stream that ends before its trailer as Z_BUF_ERROR ("unexpected end of
  // file"), possibly after returning the bytes it could still inflate.
  if (got == 0 && errnum == Z_BUF_ERROR) {
    throw Error({path_, 0, ""},
                fmt::format("truncated gzip stream: the file ends after {} decompressed bytes "
                            "(unexpected end of file)",
                            bytes_read_));
  }
  bytes_read_ += static_cast<uint64_t>(got);
  return static_cast<size_t>(got);
}

}  // namespace stepcast::profile::detail
