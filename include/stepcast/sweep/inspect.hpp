// What a trace holds, as `stepcast inspect` and Python's `stepcast.inspect()` both read it: a
// PyTorch profiler (Kineto) trace (framework, devices, ranks, steps, step time, GPU time split,
// collectives) or a TensorFlow timeline (its device's ops, the parameter server's messages and
// what one costs). The command and the module only print what this returns, so that the two
// cannot disagree (python/tests compares their JSON).
//
//   sweep::Inspection i = sweep::inspect("examples/traces/small-cnn-ddp-rank0.pt.trace.json");
//   sweep::write_json(std::cout, i);
#pragma once

#include <memory>
#include <ostream>
#include <string>

namespace stepcast::sweep {

/// The summary of one trace (an internal type: profile's Kineto or TensorFlow summary).
struct InspectedTrace;

struct Inspection {
  std::shared_ptr<const InspectedTrace> summary;
};

/// Reads the trace at `path` (.json or .json.gz; a pipe is read as Kineto). Throws Error naming
/// the file on an unreadable or invalid trace.
[[nodiscard]] Inspection inspect(const std::string& path);

/// What `stepcast inspect --json` prints.
void write_json(std::ostream& out, const Inspection& inspection);
/// What `stepcast inspect` prints.
void write_table(std::ostream& out, const Inspection& inspection);

}  // namespace stepcast::sweep
