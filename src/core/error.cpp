#include "stepcast/error.hpp"

#include <cstdio>
#include <cstdlib>

namespace stepcast {

std::string to_string(const SourceLocation& where) {
  std::string out = where.file;
  if (where.line > 0) out += (out.empty() ? "line " : ":") + std::to_string(where.line);
  if (!where.key.empty()) out += (out.empty() ? "" : ": ") + where.key;
  return out;
}

namespace {
std::string compose(const SourceLocation& where, const std::string& message) {
  std::string prefix = to_string(where);
  return prefix.empty() ? message : prefix + ": " + message;
}
}  // namespace

Error::Error(SourceLocation where, const std::string& message)
    : std::runtime_error(compose(where, message)), where_(std::move(where)), message_(message) {}

void assertion_failed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "stepcast: internal error: assertion '%s' failed at %s:%d\n", condition, file, line);
  std::abort();
}

}  // namespace stepcast
