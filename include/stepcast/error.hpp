// stepcast error handling: the one exception for bad user input, and assertions for bugs.
//
// Bad input (a scenario key, a file, a command-line value) throws stepcast::Error, whose
// what() reads "file:line: key: message". The command line catches it once and exits with 2.
// Bugs use STEPCAST_ASSERT, which aborts with the failed condition.
//
//   throw stepcast::Error({"job.yaml", 14, "cluster.workers"}, "expected an integer >= 1, got 0");
#pragma once

#include <stdexcept>
#include <string>

namespace stepcast {

/// Where a bad input was found. Any field may be empty (line 0 means unknown).
struct SourceLocation {
  std::string file;
  int line = 0;
  std::string key;  ///< dotted scenario key or command-line option, e.g. "cluster.workers"

  bool operator==(const SourceLocation&) const = default;
};

/// "file:line: key" with the empty parts left out.
[[nodiscard]] std::string to_string(const SourceLocation& where);

/// Invalid user input; what() = "cluster.yaml:14: links[2].bw: expected ..., got ...".
class Error : public std::runtime_error {
 public:
  Error(SourceLocation where, const std::string& message);
  [[nodiscard]] const SourceLocation& where() const noexcept { return where_; }
  /// The message without the location prefix.
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

 private:
  SourceLocation where_;
  std::string message_;
};

[[noreturn]] void assertion_failed(const char* condition, const char* file, int line);

}  // namespace stepcast

#define STEPCAST_ASSERT(condition) \
  ((condition) ? static_cast<void>(0) : ::stepcast::assertion_failed(#condition, __FILE__, __LINE__))
