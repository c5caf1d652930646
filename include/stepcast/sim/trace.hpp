// The synthetic execution trace a simulation can record: named processes (workers, servers),
// named threads (compute, network), and spans on them. Plain values; report/ writes them as
// Chrome trace JSON. Times in seconds.
//
//   Trace t; int p = t.add_process("worker 0"); int th = t.add_thread("compute");
//   t.spans.push_back({p, th, "fwd:conv1", "compute", 0.0, 1e-3});
#pragma once

#include <string>
#include <vector>

namespace stepcast::sim {

/// One span of the trace (a Chrome "X" event).
struct TraceSpan {
  int process = 0;  ///< index into Trace::processes
  int thread = 0;   ///< index into Trace::threads
  std::string name;
  std::string category;  ///< "compute", "pull", "push", "allreduce", "apply"
  double start = 0;      ///< s
  double duration = 0;   ///< s
  bool operator==(const TraceSpan&) const = default;
};

struct Trace {
  std::vector<std::string> processes;  ///< "worker 0", "ps 1"
  std::vector<std::string> threads;    ///< "compute", "pull", ...
  std::vector<TraceSpan> spans;
  bool operator==(const Trace&) const = default;

  int add_process(std::string name) {
    processes.push_back(std::move(name));
    return static_cast<int>(processes.size()) - 1;
  }
  int add_thread(std::string name) {
    threads.push_back(std::move(name));
    return static_cast<int>(threads.size()) - 1;
  }
};

}  // namespace stepcast::sim
