// Private to sweep/: a Result (and an Error) as bytes and back, exactly (doubles bit for bit), so
// that predictions made by other MPI ranks reach rank 0 unchanged. The trace is not carried
// (rank 0 makes the traced prediction itself).
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/error.hpp"
#include "stepcast/predict/result.hpp"

namespace stepcast::sweep::wire {

/// Either the results of one configuration or the error it ended in.
struct Outcome {
  bool failed = false;
  std::vector<predict::Result> results;
  SourceLocation where;  ///< of the error
  std::string message;   ///< of the error
};

[[nodiscard]] std::string encode(const Outcome& outcome);
/// The outcome of a configuration that ended in `error` (an Error keeps its location).
[[nodiscard]] Outcome failure(const std::exception_ptr& error);
/// Throws std::runtime_error on a truncated or malformed buffer (a bug, not bad input).
[[nodiscard]] Outcome decode(std::string_view bytes);

}  // namespace stepcast::sweep::wire
