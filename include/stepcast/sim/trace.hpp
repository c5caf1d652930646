// The synthetic execution trace a simulation can record: named processes (workers, servers, the
// network), named threads, spans on them (with their arguments), flow arrows between spans,
// instant markers and counters. Plain values; report/ writes them as Chrome trace JSON
// (write_chrome_trace), which Perfetto and chrome://tracing open. Times in seconds.
//
// What the fine engine records (src/scheme/), each track holding spans that are disjoint or
// nested, never partially overlapping (Perfetto draws only properly nested slices):
// - a worker's compute lanes: one span per op (category "compute");
// - a worker's "steps" track: one span per step, "warm-up N" or "step N" (category "step");
// - parameter server: one track per connection, "pull from ps S" and "push to ps S" on the
//   worker's process (with node-local aggregation also "broadcast from leader" and "gather to
//   leader"), each message one span covering its transmission (a connection sends one message
//   at a time; the path's latency follows the span); the shard's "apply" track on its process;
// - all-reduce: "allreduce" on every worker, one span per bucket's collective;
// - sharded data parallelism: "all-gather" and "reduce-scatter" on every worker;
// - the "network" process: counters of the busiest links' utilisation and flows, and of the
//   NICs' mean utilisation (src/scheme/trace_network.hpp says how they are sampled);
// - an instant "measured window opens" where the measured steps begin.
// Flows: a pull (or broadcast, or all-gather) to the op that waited for it (the op's last
// missing input, drawn when the op started the instant it arrived); a push to its apply at the
// shard; the op that filled an all-reduce bucket (or produced an FSDP unit's last gradient) to
// that bucket's collective on the same worker.
//
//   Trace t; int p = t.add_process("worker 0"); int th = t.add_thread("compute");
//   t.spans.push_back({p, th, "fwd:conv1", "compute", 0.0, 1e-3});
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace stepcast::sim {

/// One span of the trace (a Chrome "X" event). The fields after `duration` are the span's
/// arguments, written only where set.
struct TraceSpan {
  int process = 0;  ///< index into Trace::processes
  int thread = 0;   ///< index into Trace::threads
  std::string name;
  std::string category;  ///< "compute", "step", "pull", "push", "apply", "allreduce", "fsdp", ...
  double start = 0;      ///< s
  double duration = 0;   ///< s
  int step = -1;         ///< the step it belongs to (0-based, warm-up steps included); -1: none
  double bytes = -1;     ///< bytes moved or applied; < 0: none
  int shard = -1;        ///< parameter-server shard
  int worker = -1;       ///< the worker whose gradient a shard applies
  int bucket = -1;       ///< all-reduce bucket
  int unit = -1;         ///< sharded-data-parallel unit
  int path = -1;         ///< index into Trace::paths: the links a transfer crosses
  bool operator==(const TraceSpan&) const = default;
};

/// An arrow from one span to another (indices into Trace::spans, from < to in time).
struct TraceFlow {
  std::size_t from = 0;
  std::size_t to = 0;
  std::string name;  ///< "pull", "push", "bucket ready", ...
  bool operator==(const TraceFlow&) const = default;
};

/// A marker at one instant: on a process (process >= 0) or on the whole trace (-1).
struct TraceInstant {
  int process = -1;
  std::string name;
  double time = 0;  ///< s
  bool operator==(const TraceInstant&) const = default;
};

/// A counter track: values of `series` at `times` (each held until the next time).
struct TraceCounter {
  int process = 0;
  std::string name;                 ///< "node0.nic.up"
  std::vector<std::string> series;  ///< "utilisation", "flows"
  std::vector<double> times;        ///< s, increasing
  std::vector<double> values;       ///< times.size() x series.size(), row by row
  bool operator==(const TraceCounter&) const = default;
};

/// What a trace keeps (predict --trace-workers, --trace-steps), so that traces of large
/// clusters stay small. Spans of other workers or steps are not recorded at all.
struct TraceSelection {
  std::vector<int> workers;  ///< worker indices kept, increasing; empty: every worker
  /// With `workers` empty: only workers 0..first_workers-1, or for a pipeline (p > 1) this many
  /// spread over its stages (at least one a stage); 0: no limit.
  int first_workers = 0;
  int steps = 0;             ///< the first `steps` measured steps only (no warm-up); 0: all steps
  bool operator==(const TraceSelection&) const = default;
};

struct Trace {
  std::vector<std::string> processes;  ///< "worker 0", "ps 1", "network"; "" is not traced
  std::vector<std::string> threads;    ///< "compute", "pull from ps 0", ...
  std::vector<TraceSpan> spans;
  std::vector<TraceFlow> flows;
  std::vector<TraceInstant> instants;
  std::vector<TraceCounter> counters;
  std::vector<std::string> paths;  ///< "node0.nic.up > node1.nic.down"
  bool operator==(const Trace&) const = default;

  int add_process(std::string name) {
    processes.push_back(std::move(name));
    return static_cast<int>(processes.size()) - 1;
  }
  int add_thread(std::string name) {
    threads.push_back(std::move(name));
    return static_cast<int>(threads.size()) - 1;
  }
  int add_path(std::string links) {
    paths.push_back(std::move(links));
    return static_cast<int>(paths.size()) - 1;
  }
};

}  // namespace stepcast::sim
