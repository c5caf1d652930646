// Private to cli/: what `predict --trace-out` keeps, from --trace-workers and --trace-steps.
#pragma once

#include <string>
#include <vector>

#include "stepcast/sim/trace.hpp"

namespace stepcast::cli {

/// Workers a trace keeps when --trace-workers is not given and the cluster has more: the first
/// ones, or for a pipeline as many spread over its stages. (At 64 workers every worker's spans
/// would make a file of hundreds of MB.)
inline constexpr int kDefaultTraceWorkers = 8;

/// `workers_text`: "" (not given), "all", or indices and ranges such as "0-3", "0,2,5", "0-3,8";
/// `steps`: --trace-steps (0: not given); `workers`: the traced prediction's worker count.
/// Throws Error naming the option for bad text, an index >= workers, or either option without
/// --trace-out (`tracing` false).
[[nodiscard]] sim::TraceSelection trace_selection(const std::string& workers_text, int steps, int workers,
                                                  bool tracing);

/// The workers `trace` of `workers` holds, increasing: those whose process is named (the
/// simulation leaves the others' unnamed, at their index).
[[nodiscard]] std::vector<int> traced_workers(const sim::Trace& trace, int workers);

/// "0-1, 64-65, 128": increasing worker indices as ranges.
[[nodiscard]] std::string describe_workers(const std::vector<int>& kept);

}  // namespace stepcast::cli
