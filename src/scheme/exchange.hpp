// Private to scheme/: what a step simulation is made of. The worker runtime (worker_runtime.hpp)
// runs every worker's op graph; an exchange moves the gradients and parameters between workers
// the way one scheme does (parameter_server_exchange.hpp, allreduce_exchange.hpp). Both run on
// one sim::Engine and share a StepContext. Adding a scheme is adding one Exchange and one case in
// make_exchange's switch (step_simulation.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/detail/sim/engine.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/sim/trace.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {

// Events. Flow completions come from the network model, not the queue.
struct OpDone {  ///< worker runtime: an op ended
  int worker;
  int op;
};
struct OptimizerDone {  ///< worker runtime: a worker's optimizer step ended
  int worker;
};
struct HostWorkDone {  ///< worker runtime: the host work on a worker's first lane ended
  int worker;
};
struct StartStep {  ///< worker runtime: a worker begins a step (its next, or its first late: async offsets)
  int worker;
};
struct Delivered {  ///< parameter server: a message's last byte reached the far end
  int connection;
  int piece;
  int span = -1;  ///< its trace span, if recorded
};
struct ApplyDone {  ///< parameter server: a shard finished applying a gradient
  int shard;
};
struct MessagePrepared {  ///< parameter server: the sender's message overhead ended; transmit now
  int connection;
};
struct MessageHandled {  ///< parameter server: the receiving end's message overhead ended
  int connection;
  int piece;
  int span = -1;
};
struct StageDone {  ///< collectives: a stage of the collective in `slot` of owner's PlanRunner ended, latency included
  int owner = 0;
  int slot = 0;
};
using Event = std::variant<OpDone, StartStep, OptimizerDone, HostWorkDone, Delivered, ApplyDone, StageDone,
                           MessagePrepared, MessageHandled>;
using StepEngine = sim::Engine<Event>;

inline constexpr int kNone = -1;

/// Trace threads and processes shared by the runtime and the exchanges, and what the trace keeps
/// (SimulationOptions::trace_selection).
struct TraceLayout {
  int steps = 0;
  int first_pull = 0, first_push = 0;   ///< + shard: a worker's connection tracks to each shard
  int broadcast = 0, local_gather = 0;  ///< node-local aggregation's connections
  int allreduce = 0, apply = 0;
  int gather = 0, reduce = 0;  ///< sharded data parallelism's two collective streams
  int first_ps_process = 0;
  int network_process = 0;
  std::vector<uint8_t> kept_workers;  ///< worker -> 1 when its spans are recorded
  int first_step = 0, last_step = 0;  ///< steps whose spans are recorded
  [[nodiscard]] bool keeps_step(int step) const { return step >= first_step && step <= last_step; }
  [[nodiscard]] bool keeps(int worker, int step) const {
    return worker >= 0 && static_cast<size_t>(worker) < kept_workers.size() && kept_workers[worker] != 0 &&
           keeps_step(step);
  }
};

/// One parameter-server client standing for `clients` interchangeable ones (the fast path,
/// step_paths.hpp): its connections run in a reduced network that holds only its own links, each
/// crossed by as many members as clients cross it in the whole cluster.
struct RepresentativeClient {
  int clients = 1;
  std::vector<std::vector<net::LinkUse>> pull_paths, push_paths;  ///< per shard, reduced link indices
  std::vector<double> pull_latency, push_latency;                 ///< per shard, s
};

struct FsdpPlans;  // fsdp_exchange.hpp

/// What the runtime and an exchange of one simulation share; borrowed, outlives both.
struct StepContext {
  const workload::Workload& workload;
  const SchemeConfig& scheme;
  const SimulationOptions& options;
  const cluster::Cluster& cluster;
  StepEngine& engine;
  sim::Trace* trace;  ///< null unless options.record_trace
  TraceLayout layout;
  /// Set on the parameter-server fast path: only worker 0 is simulated.
  const RepresentativeClient* representative = nullptr;
  /// Set on the sharded-data-parallel fast path (fsdp_fast_path.cpp): its collective plans on a
  /// reduced network, worker 0 simulated for all.
  const FsdpPlans* fsdp_plans = nullptr;
  /// Workers simulated (all of the cluster's, or one standing for all).
  [[nodiscard]] int workers() const {
    return representative != nullptr || fsdp_plans != nullptr ? 1 : cluster.spec.workers;
  }
  /// Records a span (trace must be set); returns its index in trace->spans.
  int span(sim::TraceSpan s) const {
    trace->spans.push_back(std::move(s));
    return static_cast<int>(trace->spans.size()) - 1;
  }
  /// An arrow between two recorded spans; nothing when either was not recorded (kNone).
  void flow(int from, int to, const char* name) const {
    if (from >= 0 && to >= 0)
      trace->flows.push_back({static_cast<size_t>(from), static_cast<size_t>(to), name});
  }
};

class WorkerRuntime;

/// One way of exchanging gradients (and parameters) between workers.
class Exchange {
 public:
  virtual ~Exchange() = default;
  /// Inputs op `op` waits for each step besides its dependencies (parameters to receive).
  [[nodiscard]] virtual int inputs_needed(int op) const = 0;
  /// Items (transfers, collectives) that must finish before a worker's step can end.
  [[nodiscard]] virtual int items_per_step() const = 0;
  /// Starts every worker's first step (now, or at offsets).
  virtual void begin(WorkerRuntime& runtime) = 0;
  /// Worker w began a step (its counters are reset); request what the step needs.
  virtual void step_started(int w) = 0;
  /// Worker w's op produced the gradient of tensor t.
  virtual void gradient_ready(int w, int tensor) = 0;
  /// Worker w's op began, or ended (before the gradients it produced are reported). Schemes
  /// that issue transfers as the computation goes (sharded data parallelism's prefetch) listen.
  virtual void op_started(int /*w*/, int /*op*/) {}
  virtual void op_finished(int /*w*/, int /*op*/) {}
  /// Items of a step that follow the worker's optimizer step (ZeRO-1's gathers of the updated
  /// parameters): when the optimizer step takes time, it starts once the step's ops are done and
  /// only these items are left, and optimizer_done says when it ended.
  [[nodiscard]] virtual int items_after_optimizer() const { return 0; }
  virtual void optimizer_done(int /*w*/) {}
  virtual void flow_done(net::FlowId flow) = 0;
  /// Events of the exchange's own kinds (Delivered, ApplyDone, StageDone, MessagePrepared, MessageHandled).
  virtual void handle(const Event& event) = 0;
  /// Adds the exchange's own resources' loads over the measured window [window_start, now].
  virtual void add_loads(SimulationResult& result, double window_start) const = 0;
};

}  // namespace stepcast::scheme
