// Private to scheme/: what a step simulation is made of. The worker runtime (worker_runtime.hpp)
// runs every worker's op graph; an exchange moves the gradients and parameters between workers
// the way one scheme does (parameter_server_exchange.hpp, allreduce_exchange.hpp). Both run on
// one sim::Engine and share a StepContext. Adding a scheme is adding one Exchange and one case in
// make_exchange's switch (step_simulation.cpp).
//
// A composed layout (tensor, context, pipeline parallelism, micro-batches: composed_step.cpp)
// runs a stage program per worker instead (StageProgram: compute ops and communication ops), and
// one exchange per parallel dimension side by side (group_exchange.hpp, pipeline_exchange.hpp):
// each flow and event carries its owner (the dimension's index), and the run loop routes it there.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <variant>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/enum_names.hpp"
#include "stepcast/scheme/rank_layout.hpp"
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
struct Retransmitted {  ///< parameter server: a message's tail lost to incast was resent after TCP's RTO_min
  int connection;
};
struct MessageHandled {  ///< parameter server: the receiving end's message overhead ended
  int connection;
  int piece;
  int span = -1;
};
struct TransferArrived {  ///< pipeline: a point-to-point message's last byte and latency are in
  int owner = 0;
  int message = 0;
};
struct StageDone {  ///< collectives: a stage of the collective in `slot` of owner's PlanRunner ended, latency included
  int owner = 0;
  int slot = 0;
};
using Event = std::variant<OpDone, StartStep, OptimizerDone, HostWorkDone, Delivered, ApplyDone, StageDone,
                           MessagePrepared, MessageHandled, TransferArrived, Retransmitted>;
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
  /// A parallel layout's communication tracks: a dimension's collectives (the data-parallel ones
  /// on their two streams), and the pipeline messages a rank sends each way.
  int tensor = 0, context = 0, data_gathers = 0, data_reductions = 0, to_next_stage = 0,
      to_previous_stage = 0, experts = 0;
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

/// What a communication op of a stage program asks of its dimension's exchange.
enum class CommKind : uint8_t {
  AllReduce,      ///< the buffer summed over the group
  AllGather,      ///< the buffer (the whole output) gathered from the group's shards
  ReduceScatter,  ///< the buffer (the whole input) summed and scattered over the group
  RingShift,      ///< one step of a ring: each member sends the buffer to the next (ring attention's K, V)
  Send,           ///< a message to the member of another pipeline stage (activations, gradients)
  Recv,           ///< the matching message from another stage: ends when it arrived
  /// An expert group's all-to-all of token rows towards the experts (the forward's dispatch, the
  /// backward of the combine): the buffer is what each member sends, spread over the members by
  /// routing, the busiest member receiving its share times the GPU imbalance.
  ToExperts,
  /// The all-to-all back from the experts (the forward's combine, the backward of the dispatch):
  /// the busiest member sends its share times the GPU imbalance.
  FromExperts,
};
constexpr std::string_view name_of(CommKind v) {
  switch (v) {
    case CommKind::AllReduce:
      return "all-reduce";
    case CommKind::AllGather:
      return "all-gather";
    case CommKind::ReduceScatter:
      return "reduce-scatter";
    case CommKind::RingShift:
      return "ring step";
    case CommKind::Send:
      return "send";
    case CommKind::Recv:
      return "receive";
    case CommKind::ToExperts:
      return "all-to-all to experts";
    case CommKind::FromExperts:
      return "all-to-all from experts";
  }
  return {};
}
[[nodiscard]] const char* to_string(CommKind kind);

struct CommOp {
  ParallelDimension dimension = ParallelDimension::Data;
  CommKind kind = CommKind::AllReduce;
  double bytes = 0;  ///< per member: a collective's buffer, a message's bytes
  /// The exchange's stream the op runs on: a group's collectives of one stream run one at a time,
  /// in the order its members issue them (every member issues them in the same order).
  int stream = 0;
  int peer_chunk = 0;  ///< Send and Recv: the model chunk (virtual stage) at the other end
  /// Send and Recv: the message, the same at both ends; ToExperts and FromExperts: the plan
  /// variant (expert_load_variants) of the block's busiest GPU.
  int64_t tag = 0;
};

/// One pipeline stage's step as its ranks run it: compute ops on lanes (lane order, dependencies,
/// as a Workload) and communication ops, which take no lane: a communication op is issued to its
/// exchange once its dependencies are done, and ends when the exchange says so.
/// Which pass of the schedule an op belongs to (a recomputed forward is part of the backward).
enum class ProgramPass : uint8_t { Forward, Backward, Weight, Step };

struct StageProgram {
  workload::Workload ops;
  std::vector<int> comm_of_op;  ///< op -> index into comms; kNone for a compute op
  std::vector<CommOp> comms;
  std::vector<ProgramPass> pass_of_op;  ///< op -> its pass (Step: the gradient reduction, the optimizer)
  std::vector<int> micro_batch_of_op;   ///< op -> its micro-batch, kNone for Step ops
  std::vector<int> chunk_of_op;         ///< op -> the stage's chunk (0 .. v - 1) of its pass, kNone for Step ops
  int stage = 0;                        ///< pipeline stage
  int micro_batches = 1;                ///< m
  double parameters = 0;         ///< elements of the stage's parameters on one rank
  [[nodiscard]] bool is_comm(int op) const { return comm_of_op[static_cast<size_t>(op)] >= 0; }
};

/// A composed run (composed_step.cpp): which program each simulated worker runs and which rank
/// it is; the simulated workers are all ranks, or one per stage on the fast path.
struct ComposedRun {
  const RankLayout* layout = nullptr;
  std::vector<StageProgram> programs;  ///< per pipeline stage
  std::vector<int> rank_of_worker;     ///< simulated worker -> rank
  /// rank -> simulated worker: itself on the full engine, the one standing for it on the fast path
  std::vector<int> worker_of_rank;
  bool one_per_stage = false;  ///< the fast path: one simulated worker per class (choose_representatives)
  [[nodiscard]] const StageProgram& program_of(int worker) const {
    return programs[static_cast<size_t>(
        layout->coordinates(rank_of_worker[static_cast<size_t>(worker)])[ParallelDimension::Pipeline])];
  }
};

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
  /// reduced network; worker 0 simulated for all, or with straggler noise (each worker its own
  /// compute times) every worker, joined to those collectives.
  const FsdpPlans* fsdp_plans = nullptr;
  /// Set for a composed layout: the stage programs the workers run (composed_step.cpp).
  const ComposedRun* composed = nullptr;
  /// Workers simulated (all of the cluster's, or one standing for all).
  [[nodiscard]] int workers() const {
    if (composed != nullptr) return static_cast<int>(composed->rank_of_worker.size());
    if (fsdp_plans != nullptr && options.compute_cv > 0) return cluster.spec.workers;
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
  /// Worker w's communication op `op` of its stage program is due (its dependencies are done):
  /// run it, and call WorkerRuntime::comm_done(w, op) when it ended for w.
  virtual void start_comm(int /*w*/, int /*op*/, const CommOp& /*comm*/) {}
  virtual void flow_done(net::FlowId flow) = 0;
  /// Events of the exchange's own kinds (Delivered, ApplyDone, StageDone, MessagePrepared, MessageHandled).
  virtual void handle(const Event& event) = 0;
  /// Adds the exchange's own resources' loads over the measured window [window_start, now].
  virtual void add_loads(SimulationResult& result, double window_start) const = 0;
};

}  // namespace stepcast::scheme
