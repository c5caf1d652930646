#include "stepcast/scheme/step_simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numbers>
#include <queue>
#include <stdexcept>
#include <variant>

#include "stepcast/error.hpp"
#include "stepcast/hash.hpp"
#include "stepcast/net/network_model.hpp"
#include "stepcast/scheme/collective_plan.hpp"
#include "stepcast/scheme/placement.hpp"
#include "stepcast/sim/event_queue.hpp"

namespace stepcast::scheme {
namespace {

using cluster::Cluster;
using cluster::Endpoint;
using workload::Workload;

std::unique_ptr<net::NetworkModel> make_network(const Cluster& c, NetworkKind kind) {
  std::vector<double> capacities;
  capacities.reserve(c.links.size());
  for (const cluster::Link& l : c.links) capacities.push_back(l.bw);
  return kind == NetworkKind::MaxMin ? net::make_maxmin_network(std::move(capacities))
                                     : net::make_no_contention_network(std::move(capacities));
}

std::vector<net::LinkUse> to_link_uses(const cluster::Path& path) {
  std::vector<net::LinkUse> uses;
  uses.reserve(path.links.size());
  for (uint32_t l : path.links) uses.push_back({l, 1});
  return uses;
}

// Events. Flow completions come from the network model, not the queue.
struct OpDone {
  int worker;
  int op;
};
struct Delivered {
  int connection;
  int piece;
};
struct ApplyDone {
  int shard;
};
struct StageDone {};
struct StartStep {
  int worker;
};
using Event = std::variant<OpDone, Delivered, ApplyDone, StageDone, StartStep>;

constexpr int kNone = -1;

class StepSimulation {
 public:
  StepSimulation(const Workload& w, const cluster::ClusterSpec& spec, const SchemeConfig& scheme,
                 const SimulationOptions& options);
  SimulationResult run();

 private:
  // --- setup ---
  void setup_parameter_server();
  void setup_allreduce();
  void setup_trace();

  // --- workers ---
  void start_step(int w);
  void try_start_ops(int w);
  void on_op_done(int w, int op);
  void maybe_finish_step(int w);
  void close_idle(int w);

  // --- parameter server ---
  void request_pull(int client, int piece);
  void gradient_gathered(int node, int piece);
  void enqueue(int connection, int piece, uint64_t priority);
  void send_next(int connection, bool reuse_flow);
  void on_message_sent(int connection);
  void on_delivered(int connection, int piece);
  void on_apply_done(int shard);
  void start_apply(int shard);
  void on_piece_applied(int piece);

  // --- all-reduce ---
  void join_collective(int w, int bucket);
  void maybe_start_collective();
  void start_stage();
  void on_stage_flow_done();
  void on_stage_done();

  void handle_flow_done(net::FlowId id);
  void set_owner(net::FlowId id, int owner);
  void dispatch(const Event& e);
  [[nodiscard]] bool all_workers_done() const;
  SimulationResult collect();
  void span(int process, int thread, std::string name, const char* category, double start);

  const Workload& w_;
  const SchemeConfig& scheme_;
  const SimulationOptions& options_;
  const bool is_ps_;
  const bool sync_;
  const int n_;
  const int num_ops_;
  const int target_steps_;
  Cluster cluster_;
  std::unique_ptr<net::NetworkModel> net_;
  sim::EventQueue<Event> queue_;
  double now_ = 0;
  uint64_t events_ = 0;

  // Static structure of one step.
  std::vector<std::vector<int>> dependents_;  // op -> ops that list it in deps
  std::vector<std::vector<int>> lane_ops_;    // lane -> ops in program order
  std::vector<std::vector<int>> produced_;    // op -> tensors whose gradient it produces

  // Per worker.
  struct Worker {
    int step = 0;
    double compute_scale = 1;    // this step's straggler factor on every op duration
    std::vector<int> unmet;      // op -> deps and parameter pieces still missing
    std::vector<int> lane_next;  // lane -> position in lane_ops_
    std::vector<uint8_t> lane_busy;
    int busy_lanes = 0;
    int ops_done = 0;
    int outstanding = 0;  // transfers or collectives of this step not finished
    double step_start = 0;
    double idle_since = 0;
    double release = 0;                  // latest time a barrier this worker waited on was released
    double communication = 0, wait = 0;  // idle time of the current step
    std::vector<double> step_ends;
    double measured_compute = 0, measured_communication = 0, measured_wait = 0;
    std::vector<int> bucket_missing;  // all-reduce: bucket -> gradients not yet produced
  };
  std::vector<Worker> workers_;

  // Parameter server.
  std::vector<Piece> pieces_;
  std::vector<std::vector<int>> pieces_of_tensor_;
  std::vector<int> pieces_needed_;  // op -> pieces it waits for
  // Pull: shard -> client; Push: client -> shard; with local aggregation, Broadcast: node leader
  // -> another GPU of the node, Gather: a GPU -> its node leader.
  enum class Kind : uint8_t { Pull, Push, Broadcast, Gather };
  struct Connection {
    std::vector<net::LinkUse> path;
    double latency = 0;
    int worker = 0;  ///< the worker end: the client's leader (pull, push) or the GPU (broadcast, gather)
    int shard = 0;
    Kind kind = Kind::Pull;
    std::priority_queue<std::pair<uint64_t, int>, std::vector<std::pair<uint64_t, int>>, std::greater<>>
        pending;
    int in_flight = kNone;  // piece being sent
    double send_start = 0;
    net::FlowId flow{};
    bool has_flow = false;
  };
  std::vector<Connection> connections_;
  uint64_t push_sequence_ = 0;
  // Clients of the servers: every worker, or with local aggregation every node (its first GPU
  // talks to the servers for the node).
  bool local_aggregation_ = false;
  int clients_ = 0;
  std::vector<int> gathered_;      // node * pieces + piece -> local gradients collected by the leader
  std::vector<int> node_started_;  // node -> GPUs that started their current step (local aggregation)
  [[nodiscard]] int client_of(int w) const {
    return local_aggregation_ ? w / cluster_.spec.workers_per_node : w;
  }
  [[nodiscard]] int leader_of_client(int client) const {
    return local_aggregation_ ? client * cluster_.spec.workers_per_node : client;
  }
  [[nodiscard]] int leader_of(int w) const { return leader_of_client(client_of(w)); }
  [[nodiscard]] int workers_on_node(int node) const {
    const int g = cluster_.spec.workers_per_node;
    return std::min(g, n_ - node * g);
  }
  [[nodiscard]] int pull_connection(int client, int shard) const { return client * scheme_.ps.count + shard; }
  [[nodiscard]] int push_connection(int client, int shard) const {
    return (clients_ + client) * scheme_.ps.count + shard;
  }
  [[nodiscard]] int broadcast_connection(int w) const { return 2 * clients_ * scheme_.ps.count + w; }
  [[nodiscard]] int gather_connection(int w) const { return 2 * clients_ * scheme_.ps.count + n_ + w; }
  std::vector<int> version_;     // piece -> updates completed (sync: steps aggregated)
  std::vector<int> aggregated_;  // piece -> gradients applied towards the next version
  std::vector<double> version_time_;
  std::vector<std::vector<int>> waiting_;  // piece -> clients waiting for its next version
  struct Shard {
    std::queue<int> applies;  // pieces
    bool busy = false;
    double busy_time_in_window = 0;
    double apply_start = 0;
  };
  std::vector<Shard> shards_;

  // All-reduce.
  std::vector<workload::Bucket> buckets_;
  std::vector<int> bucket_of_tensor_;
  CollectivePlan plan_;
  std::map<int64_t, int> joined_;  // collective (step * buckets + bucket) -> workers joined
  int64_t next_collective_ = 0;
  bool collective_running_ = false;
  size_t stage_ = 0;  // of the running collective
  int stage_flows_left_ = 0;
  double collective_start_ = 0;
  const cluster::CollectiveRegime* regime_ = nullptr;  ///< of the running collective, if any

  // Flow index -> connection sending on it, or kCollectiveOwner.
  std::vector<int> flow_owner_;
  static constexpr int kCollectiveOwner = -2;

  // Measurement.
  double window_start_ = -1;
  std::vector<double> link_bytes_at_window_;
  sim::Trace trace_;
  int thread_pull_ = 0, thread_push_ = 0, thread_allreduce_ = 0, thread_apply_ = 0;
  int first_ps_process_ = 0;
};

StepSimulation::StepSimulation(const Workload& w, const cluster::ClusterSpec& spec,
                               const SchemeConfig& scheme, const SimulationOptions& options)
    : w_(w),
      scheme_(scheme),
      options_(options),
      is_ps_(scheme.scheme == Scheme::ParameterServer),
      sync_(scheme.mode == Mode::Sync),
      n_(spec.workers),
      num_ops_(static_cast<int>(w.ops.size())),
      target_steps_(options.warmup_steps + options.measure_steps) {
  STEPCAST_ASSERT(workload::validate(w).empty());
  STEPCAST_ASSERT(options.measure_steps >= 1 && options.warmup_steps >= 0);
  const bool dedicated = is_ps_ && scheme.ps.placement == PsPlacement::Dedicated;
  cluster_ = cluster::build_cluster(spec, dedicated ? scheme.ps.count : 0);
  net_ = make_network(cluster_, options.network);

  dependents_.resize(num_ops_);
  lane_ops_.resize(w.lanes.size());
  produced_.resize(num_ops_);
  for (int op = 0; op < num_ops_; ++op) {
    for (int d : w.ops[op].deps) dependents_[d].push_back(op);
    lane_ops_[w.ops[op].lane].push_back(op);
  }
  for (int t = 0; t < static_cast<int>(w.tensors.size()); ++t) {
    if (w.tensors[t].producer >= 0) produced_[w.tensors[t].producer].push_back(t);
  }
  workers_.resize(n_);
  for (Worker& worker : workers_) {
    worker.unmet.resize(num_ops_);
    worker.lane_next.resize(w.lanes.size());
    worker.lane_busy.resize(w.lanes.size());
  }
  if (options_.record_trace) setup_trace();
  if (is_ps_) {
    setup_parameter_server();
  } else {
    setup_allreduce();
  }
}

void StepSimulation::setup_trace() {
  for (int i = 0; i < n_; ++i) trace_.add_process(fmt::format("worker {}", i));
  first_ps_process_ = n_;
  if (is_ps_) {
    for (int s = 0; s < scheme_.ps.count; ++s) trace_.add_process(fmt::format("ps {}", s));
  }
  for (const std::string& lane : w_.lanes) trace_.add_thread(lane);
  thread_pull_ = trace_.add_thread("pull");
  thread_push_ = trace_.add_thread("push");
  thread_allreduce_ = trace_.add_thread("allreduce");
  thread_apply_ = trace_.add_thread("apply");
}

void StepSimulation::setup_parameter_server() {
  const int p = scheme_.ps.count;
  pieces_ = place_parameters(w_, scheme_.ps);
  pieces_of_tensor_.resize(w_.tensors.size());
  for (int i = 0; i < static_cast<int>(pieces_.size()); ++i)
    pieces_of_tensor_[pieces_[i].tensor].push_back(i);
  pieces_needed_.assign(num_ops_, 0);
  for (size_t t = 0; t < w_.tensors.size(); ++t) {
    for (int consumer : w_.tensors[t].consumers) {
      pieces_needed_[consumer] += static_cast<int>(pieces_of_tensor_[t].size());
    }
  }
  version_.assign(pieces_.size(), 0);
  aggregated_.assign(pieces_.size(), 0);
  version_time_.assign(pieces_.size(), 0.0);
  waiting_.resize(pieces_.size());
  shards_.resize(p);
  const int worker_nodes = cluster_.spec.num_worker_nodes();
  auto shard_endpoint = [&](int s) {
    const bool dedicated = scheme_.ps.placement == PsPlacement::Dedicated;
    return Endpoint{dedicated ? worker_nodes + s : s, cluster::kHostDevice};
  };
  local_aggregation_ = scheme_.ps.local_aggregation && cluster_.spec.workers_per_node > 1;
  clients_ = local_aggregation_ ? worker_nodes : n_;
  if (local_aggregation_) {
    gathered_.assign(static_cast<size_t>(worker_nodes) * pieces_.size(), 0);
    node_started_.assign(worker_nodes, 0);
  }
  connections_.resize(static_cast<size_t>(2) * clients_ * p + (local_aggregation_ ? 2 * n_ : 0));
  auto connect = [&](int index, Kind kind, int worker, int shard, Endpoint from, Endpoint to) {
    Connection& c = connections_[index];
    const cluster::Path path = cluster_.path(from, to);
    c.path = to_link_uses(path);
    c.latency = path.latency;
    c.worker = worker;
    c.shard = shard;
    c.kind = kind;
  };
  for (int client = 0; client < clients_; ++client) {
    const int leader = leader_of_client(client);
    const Endpoint at = cluster_.worker_endpoint(leader);
    for (int s = 0; s < p; ++s) {
      connect(pull_connection(client, s), Kind::Pull, leader, s, shard_endpoint(s), at);
      connect(push_connection(client, s), Kind::Push, leader, s, at, shard_endpoint(s));
    }
  }
  if (local_aggregation_) {
    for (int w = 0; w < n_; ++w) {
      const Endpoint leader = cluster_.worker_endpoint(leader_of(w));
      connect(broadcast_connection(w), Kind::Broadcast, w, 0, leader, cluster_.worker_endpoint(w));
      connect(gather_connection(w), Kind::Gather, w, 0, cluster_.worker_endpoint(w), leader);
    }
  }
}

void StepSimulation::setup_allreduce() {
  buckets_ = workload::make_buckets(w_, scheme_.allreduce.bucket_bytes);
  bucket_of_tensor_.assign(w_.tensors.size(), kNone);
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) {
    for (int t : buckets_[b].tensors) bucket_of_tensor_[t] = b;
  }
  for (Worker& worker : workers_) worker.bucket_missing.resize(buckets_.size());
  plan_ = plan_collective(cluster_, CollectiveOp::AllReduce, scheme_.allreduce.algorithm);
}

// ---------------------------------------------------------------------------------------------
// Workers

void StepSimulation::start_step(int w) {
  Worker& worker = workers_[w];
  worker.compute_scale = straggler_factor(options_.seed, w, worker.step, options_.compute_cv);
  worker.step_start = now_;
  worker.idle_since = now_;
  worker.release = now_;
  worker.communication = worker.wait = 0;
  worker.ops_done = 0;
  std::fill(worker.lane_next.begin(), worker.lane_next.end(), 0);
  for (int op = 0; op < num_ops_; ++op) {
    worker.unmet[op] = static_cast<int>(w_.ops[op].deps.size()) + (is_ps_ ? pieces_needed_[op] : 0);
  }
  if (is_ps_) {
    // Every piece received (pulled, or broadcast by the node leader) and every gradient sent
    // (pushed, or gathered by the leader).
    worker.outstanding = 2 * static_cast<int>(pieces_.size());
    // With local aggregation the node is one client: it pulls once all its GPUs have started the
    // step, so that no broadcast reaches a GPU still finishing the previous step (whose counters
    // it would be taken for; async nodes would then wait forever for it).
    const int client = client_of(w);
    bool pull = true;
    if (local_aggregation_) {
      pull = ++node_started_[client] == workers_on_node(client);
      if (pull) node_started_[client] = 0;
    }
    if (pull) {
      for (int piece = 0; piece < static_cast<int>(pieces_.size()); ++piece) request_pull(client, piece);
    }
  } else {
    worker.outstanding = n_ > 1 ? static_cast<int>(buckets_.size()) : 0;
    for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) {
      worker.bucket_missing[b] = static_cast<int>(buckets_[b].tensors.size());
    }
  }
  try_start_ops(w);
}

void StepSimulation::close_idle(int w) {
  // Split the idle interval that ends now into waiting for others (until the last barrier this
  // worker depended on was released) and waiting for the network (the rest).
  Worker& worker = workers_[w];
  const double idle = now_ - worker.idle_since;
  if (idle <= 0) return;
  const double wait = std::clamp(worker.release - worker.idle_since, 0.0, idle);
  worker.wait += wait;
  worker.communication += idle - wait;
}

void StepSimulation::try_start_ops(int w) {
  Worker& worker = workers_[w];
  for (size_t lane = 0; lane < lane_ops_.size(); ++lane) {
    if (worker.lane_busy[lane] || worker.lane_next[lane] >= static_cast<int>(lane_ops_[lane].size()))
      continue;
    const int op = lane_ops_[lane][worker.lane_next[lane]];
    if (worker.unmet[op] > 0) continue;
    if (worker.busy_lanes == 0) close_idle(w);
    worker.lane_busy[lane] = 1;
    worker.busy_lanes++;
    worker.lane_next[lane]++;
    const double duration = w_.ops[op].duration * worker.compute_scale;
    if (options_.record_trace) {
      trace_.spans.push_back({w, static_cast<int>(lane), w_.ops[op].name, "compute", now_, duration});
    }
    queue_.push(now_ + duration, OpDone{w, op});
  }
}

void StepSimulation::on_op_done(int w, int op) {
  Worker& worker = workers_[w];
  const int lane = w_.ops[op].lane;
  worker.lane_busy[lane] = 0;
  worker.busy_lanes--;
  if (worker.busy_lanes == 0) worker.idle_since = now_;
  worker.ops_done++;
  for (int d : dependents_[op]) worker.unmet[d]--;
  for (int t : produced_[op]) {
    if (is_ps_) {
      for (int piece : pieces_of_tensor_[t]) {
        if (!local_aggregation_) {
          enqueue(push_connection(w, pieces_[piece].shard), piece, push_sequence_++);
        } else if (leader_of(w) == w) {
          gradient_gathered(client_of(w), piece);
        } else {
          enqueue(gather_connection(w), piece, push_sequence_++);
        }
      }
    } else if (n_ > 1) {
      const int b = bucket_of_tensor_[t];
      if (--worker.bucket_missing[b] == 0) join_collective(w, b);
    }
  }
  try_start_ops(w);
  maybe_finish_step(w);
}

void StepSimulation::maybe_finish_step(int w) {
  Worker& worker = workers_[w];
  if (worker.ops_done < num_ops_ || worker.outstanding > 0) return;
  close_idle(w);
  // The step is busy (some lane running an op) or idle, and every idle interval was split into
  // waiting and communication, so the busy wall time is what is left. (Summing op durations
  // would count overlapping lanes twice.)
  const double cycle = now_ - worker.step_start;
  const double compute = std::max(0.0, cycle - worker.wait - worker.communication);
  worker.step_ends.push_back(now_);
  worker.step++;
  if (worker.step > options_.warmup_steps && worker.step <= target_steps_) {
    worker.measured_compute += compute;
    worker.measured_communication += worker.communication;
    worker.measured_wait += worker.wait;
  }
  if (worker.step == options_.warmup_steps && window_start_ < 0 &&
      std::all_of(workers_.begin(), workers_.end(),
                  [&](const Worker& x) { return x.step >= options_.warmup_steps; })) {
    window_start_ = now_;
    link_bytes_at_window_ = net_->link_bytes();
  }
  start_step(w);
}

bool StepSimulation::all_workers_done() const {
  return std::all_of(workers_.begin(), workers_.end(),
                     [&](const Worker& x) { return x.step >= target_steps_; });
}

// ---------------------------------------------------------------------------------------------
// Parameter server

void StepSimulation::request_pull(int client, int piece) {
  const int step = workers_[leader_of_client(client)].step;
  // Sync: step k needs the parameters after k aggregated updates. Async: whatever is there.
  if (sync_ && version_[piece] < step) {
    waiting_[piece].push_back(client);
    return;
  }
  const Piece& p = pieces_[piece];
  uint64_t priority = static_cast<uint64_t>(piece);
  if (scheme_.ps.order == PsOrder::Random) {
    priority = mix64(options_.seed ^ mix64(static_cast<uint64_t>(client) * 0x100000001ULL + step) ^
                     mix64(static_cast<uint64_t>(piece) + 0x5bd1e995ULL));
  }
  enqueue(pull_connection(client, p.shard), piece, priority);
}

void StepSimulation::gradient_gathered(int node, int piece) {
  // The leader sums the node's gradients of a piece and pushes the sum once all are in.
  int& count = gathered_[static_cast<size_t>(node) * pieces_.size() + piece];
  if (++count < workers_on_node(node)) return;
  count = 0;
  enqueue(push_connection(node, pieces_[piece].shard), piece, push_sequence_++);
}

void StepSimulation::enqueue(int connection, int piece, uint64_t priority) {
  Connection& c = connections_[connection];
  c.pending.push({priority, piece});
  if (c.in_flight == kNone) send_next(connection, false);
}

void StepSimulation::send_next(int connection, bool reuse_flow) {
  Connection& c = connections_[connection];
  if (c.pending.empty()) {
    c.in_flight = kNone;
    c.has_flow = false;
    return;
  }
  const int piece = c.pending.top().second;
  c.pending.pop();
  c.in_flight = piece;
  c.send_start = now_;
  const double bytes = pieces_[piece].bytes;
  if (reuse_flow) {
    net_->restart_flow(c.flow, bytes);
  } else {
    c.flow = net_->start_flow({c.path, bytes}, now_);
    c.has_flow = true;
  }
  set_owner(c.flow, connection);
}

void StepSimulation::set_owner(net::FlowId id, int owner) {
  const uint32_t i = net::index(id);
  if (i >= flow_owner_.size()) flow_owner_.resize(i + 1, kNone);
  flow_owner_[i] = owner;
}

void StepSimulation::on_message_sent(int connection) {
  Connection& c = connections_[connection];
  const int piece = c.in_flight;
  if (options_.record_trace) {
    const bool inbound = c.kind == Kind::Pull || c.kind == Kind::Broadcast;
    const char* category = inbound ? "pull" : "push";
    const int process = c.kind == Kind::Push ? first_ps_process_ + c.shard : c.worker;
    span(process, inbound ? thread_pull_ : thread_push_, w_.tensors[pieces_[piece].tensor].name, category,
         c.send_start);
    trace_.spans.back().duration = now_ + c.latency - c.send_start;
    if (c.kind == Kind::Push) {  // the push as the worker sees it
      trace_.spans.push_back(trace_.spans.back());
      trace_.spans.back().process = c.worker;
    }
  }
  queue_.push(now_ + c.latency, Delivered{connection, piece});
  // Keep the connection's flow for the next message: its share of the links does not change.
  send_next(connection, true);
}

void StepSimulation::on_delivered(int connection, int piece) {
  const Connection& c = connections_[connection];
  Worker& worker = workers_[c.worker];
  worker.outstanding--;
  switch (c.kind) {
    case Kind::Pull:
      if (local_aggregation_) {
        const int node = client_of(c.worker);
        for (int v = c.worker + 1; v < c.worker + workers_on_node(node); ++v) {
          enqueue(broadcast_connection(v), piece, push_sequence_++);
        }
      }
      [[fallthrough]];
    case Kind::Broadcast:
      for (int consumer : w_.tensors[pieces_[piece].tensor].consumers) worker.unmet[consumer]--;
      try_start_ops(c.worker);
      break;
    case Kind::Gather:
      gradient_gathered(client_of(c.worker), piece);
      break;
    case Kind::Push: {
      Shard& shard = shards_[c.shard];
      shard.applies.push(piece);
      if (!shard.busy) start_apply(c.shard);
      break;
    }
  }
  maybe_finish_step(c.worker);
}

void StepSimulation::start_apply(int s) {
  Shard& shard = shards_[s];
  while (!shard.applies.empty()) {
    const int piece = shard.applies.front();
    const double bytes = pieces_[piece].bytes;
    const double duration =
        scheme_.ps.apply_time + (scheme_.ps.apply_bw > 0 ? bytes / scheme_.ps.apply_bw : 0.0);
    if (duration <= 0) {  // free updates need no event
      shard.applies.pop();
      on_piece_applied(piece);
      continue;
    }
    shard.busy = true;
    shard.apply_start = now_;
    if (options_.record_trace) {
      span(first_ps_process_ + s, thread_apply_, w_.tensors[pieces_[piece].tensor].name, "apply", now_);
      trace_.spans.back().duration = duration;
    }
    queue_.push(now_ + duration, ApplyDone{s});
    return;
  }
}

void StepSimulation::on_apply_done(int s) {
  Shard& shard = shards_[s];
  shard.busy = false;
  if (window_start_ >= 0) shard.busy_time_in_window += now_ - std::max(shard.apply_start, window_start_);
  const int piece = shard.applies.front();
  shard.applies.pop();
  on_piece_applied(piece);
  start_apply(s);
}

void StepSimulation::on_piece_applied(int piece) {
  if (!sync_) {
    version_[piece]++;
    return;
  }
  if (++aggregated_[piece] < clients_) return;
  aggregated_[piece] = 0;
  version_[piece]++;
  version_time_[piece] = now_;
  std::vector<int> waiting;
  waiting.swap(waiting_[piece]);
  for (int client : waiting) {
    const int leader = leader_of_client(client);
    for (int w = leader; w < leader + (local_aggregation_ ? workers_on_node(client) : 1); ++w) {
      workers_[w].release = std::max(workers_[w].release, now_);
    }
    request_pull(client, piece);
  }
}

// ---------------------------------------------------------------------------------------------
// All-reduce

void StepSimulation::join_collective(int w, int bucket) {
  const int64_t id = static_cast<int64_t>(workers_[w].step) * static_cast<int64_t>(buckets_.size()) + bucket;
  if (++joined_[id] == n_) {
    // The last worker to get here releases the others: until now they waited for it (wait);
    // after now they wait for earlier collectives and this one (communication).
    for (Worker& worker : workers_) worker.release = std::max(worker.release, now_);
  }
  maybe_start_collective();
}

void StepSimulation::maybe_start_collective() {
  if (collective_running_) return;
  auto it = joined_.find(next_collective_);
  if (it == joined_.end() || it->second < n_) return;
  joined_.erase(it);
  collective_running_ = true;
  collective_start_ = now_;
  regime_ =
      cluster_.spec.regime_for(buckets_[next_collective_ % static_cast<int64_t>(buckets_.size())].bytes);
  stage_ = 0;
  start_stage();
}

void StepSimulation::start_stage() {
  if (stage_ == plan_.stages.size()) {
    on_stage_done();
    return;
  }
  const workload::Bucket& bucket = buckets_[next_collective_ % static_cast<int64_t>(buckets_.size())];
  const Stage& stage = plan_.stages[stage_];
  const Pattern& pattern = plan_.patterns[stage.pattern];
  stage_flows_left_ = static_cast<int>(pattern.groups.size());
  for (const FlowGroup& group : pattern.groups) {
    net::FlowId id = net_->start_flow(
        {group.path, bucket.bytes * stage.fraction * group.size_factor, transfer_bound(regime_)}, now_);
    set_owner(id, kCollectiveOwner);
  }
}

void StepSimulation::on_stage_flow_done() {
  if (--stage_flows_left_ > 0) return;
  queue_.push(now_ + stage_latency(plan_.patterns[plan_.stages[stage_].pattern], regime_), StageDone{});
}

void StepSimulation::on_stage_done() {
  if (stage_ < plan_.stages.size() && ++stage_ < plan_.stages.size()) {
    start_stage();
    return;
  }
  const int bucket = static_cast<int>(next_collective_ % static_cast<int64_t>(buckets_.size()));
  if (options_.record_trace) {
    for (int w = 0; w < n_; ++w) {
      span(w, thread_allreduce_, fmt::format("allreduce bucket {}", bucket), "allreduce", collective_start_);
      trace_.spans.back().duration = now_ - collective_start_;
    }
  }
  collective_running_ = false;
  next_collective_++;
  for (int w = 0; w < n_; ++w) {
    workers_[w].outstanding--;
    maybe_finish_step(w);
  }
  maybe_start_collective();
}

// ---------------------------------------------------------------------------------------------
// Loop

void StepSimulation::span(int process, int thread, std::string name, const char* category, double start) {
  trace_.spans.push_back({process, thread, std::move(name), category, start, 0});
}

void StepSimulation::handle_flow_done(net::FlowId id) {
  const int owner = flow_owner_[net::index(id)];
  if (owner == kCollectiveOwner) {
    on_stage_flow_done();
  } else {
    on_message_sent(owner);
  }
}

void StepSimulation::dispatch(const Event& e) {
  std::visit(
      [this](const auto& ev) {
        using T = std::decay_t<decltype(ev)>;
        if constexpr (std::is_same_v<T, OpDone>) {
          on_op_done(ev.worker, ev.op);
        } else if constexpr (std::is_same_v<T, Delivered>) {
          on_delivered(ev.connection, ev.piece);
        } else if constexpr (std::is_same_v<T, ApplyDone>) {
          on_apply_done(ev.shard);
        } else if constexpr (std::is_same_v<T, StartStep>) {
          start_step(ev.worker);
        } else if constexpr (std::is_same_v<T, StageDone>) {
          on_stage_done();
        }
      },
      e);
}

SimulationResult StepSimulation::run() {
  if (is_ps_ && !sync_) {
    // Asynchronous workers have no reason to start in step: identical workers started together
    // would move in convoys (all pulling, then all pushing) that leave each NIC direction idle
    // half the time. Start each at a seeded offset within one compute time instead.
    const double spread = w_.step_time_alone();
    for (int w = 0; w < n_; ++w) {
      const double offset =
          n_ > 1 ? spread * static_cast<double>(mix64(options_.seed ^ mix64(w + 1)) >> 11) * 0x1.0p-53 : 0.0;
      queue_.push(offset, StartStep{w});
    }
  } else {
    for (int w = 0; w < n_; ++w) start_step(w);
  }
  while (!all_workers_done()) {
    const double t = std::min(queue_.next_time(), net_->next_completion());
    if (std::isinf(t)) {
      throw std::logic_error("stepcast: simulation stalled with work left (a dependency never resolves)");
    }
    now_ = t;
    for (net::FlowId id : net_->advance_to(t)) {
      ++events_;
      handle_flow_done(id);
    }
    while (queue_.next_time() <= now_) {
      ++events_;
      dispatch(queue_.pop().event);
    }
  }
  return collect();
}

SimulationResult StepSimulation::collect() {
  SimulationResult r;
  r.events = events_;
  r.max_link_flows = net_->max_link_flows();
  const double window_start = window_start_ >= 0 ? window_start_ : 0.0;
  r.window = now_ - window_start;
  const int m = options_.measure_steps;
  double compute_busy = 0;
  for (const Worker& worker : workers_) {
    WorkerTimes times;
    const int w0 = options_.warmup_steps;
    const double begin = w0 == 0 ? 0.0 : worker.step_ends[w0 - 1];
    times.cycle = (worker.step_ends[w0 + m - 1] - begin) / m;
    times.compute = worker.measured_compute / m;
    times.communication = worker.measured_communication / m;
    times.wait = worker.measured_wait / m;
    compute_busy += times.cycle > 0 ? times.compute / times.cycle : 1.0;
    r.workers.push_back(times);
  }
  r.loads.push_back({"worker compute (mean)", compute_busy / n_});

  // Link loads over the window, grouped by role.
  std::vector<double> bytes = net_->link_bytes();
  if (!link_bytes_at_window_.empty()) {
    for (size_t l = 0; l < bytes.size(); ++l) bytes[l] -= link_bytes_at_window_[l];
  }
  auto busy = [&](uint32_t l) { return r.window > 0 ? bytes[l] / (cluster_.links[l].bw * r.window) : 0.0; };
  const int worker_nodes = cluster_.spec.num_worker_nodes();
  double worker_out = 0, worker_in = 0, server_out = 0, server_in = 0, bus = 0;
  for (size_t nic = 0; nic < cluster_.nic_up.size(); ++nic) {
    const int node = cluster_.links[cluster_.nic_up[nic]].from;
    const double out = busy(cluster_.nic_up[nic]);
    const double in = busy(cluster_.nic_down[nic]);
    if (node < worker_nodes) {
      worker_out = std::max(worker_out, out);
      worker_in = std::max(worker_in, in);
    } else {
      server_out = std::max(server_out, out);
      server_in = std::max(server_in, in);
    }
    r.bytes_sent += bytes[cluster_.nic_up[nic]];
    r.bytes_received += bytes[cluster_.nic_down[nic]];
  }
  for (size_t i = 0; i < cluster_.bus_up.size(); ++i) {
    bus = std::max({bus, busy(cluster_.bus_up[i]), busy(cluster_.bus_down[i])});
    r.bytes_sent += bytes[cluster_.bus_up[i]];
    r.bytes_received += bytes[cluster_.bus_down[i]];
  }
  for (size_t i = 0; i < cluster_.pcie_up.size(); ++i) {
    bus = std::max({bus, busy(cluster_.pcie_up[i]), busy(cluster_.pcie_down[i])});
  }
  const bool colocated = is_ps_ && scheme_.ps.placement == PsPlacement::Colocated;
  const char* node_nic = colocated ? "node NIC" : "worker NIC";
  r.loads.push_back({fmt::format("{} out", node_nic), worker_out});
  r.loads.push_back({fmt::format("{} in", node_nic), worker_in});
  if (cluster_.num_nodes > worker_nodes) {
    r.loads.push_back({"PS NIC out", server_out});
    r.loads.push_back({"PS NIC in", server_in});
  }
  if (bus > 0) r.loads.push_back({"intra-node link", bus});
  if (is_ps_) {
    double apply = 0;
    for (const Shard& shard : shards_) {
      double t = shard.busy_time_in_window;
      if (shard.busy) t += now_ - std::max(shard.apply_start, window_start);
      apply = std::max(apply, r.window > 0 ? t / r.window : 0.0);
    }
    if (scheme_.ps.apply_time > 0 || scheme_.ps.apply_bw > 0) r.loads.push_back({"PS apply", apply});
  }
  for (size_t l = 0; l < bytes.size(); ++l) {
    if (bytes[l] > 0) r.links.push_back({cluster_.links[l].name, busy(static_cast<uint32_t>(l)), bytes[l]});
  }
  std::sort(r.links.begin(), r.links.end(), [](const LinkLoad& a, const LinkLoad& b) {
    return a.busy != b.busy ? a.busy > b.busy : a.name < b.name;
  });
  if (r.links.size() > 10) r.links.resize(10);
  std::stable_sort(r.loads.begin(), r.loads.end(),
                   [](const ResourceLoad& a, const ResourceLoad& b) { return a.busy > b.busy; });
  r.trace = std::move(trace_);
  return r;
}

}  // namespace

double straggler_factor(uint64_t seed, int worker, int step, double cv) {
  if (!(cv > 0)) return 1;
  // Box-Muller from two seeded uniforms in (0, 1]; lognormal exp(mu + sigma z) has mean 1 and
  // coefficient of variation cv when sigma^2 = ln(1 + cv^2) and mu = -sigma^2 / 2.
  const uint64_t key =
      mix64(seed ^ mix64((static_cast<uint64_t>(worker) << 32) + static_cast<uint64_t>(step)) ^
            0x7374726167676c65ULL);
  const double u1 = (static_cast<double>(key >> 11) + 1) * 0x1.0p-53;
  const double u2 = static_cast<double>(mix64(key) >> 11) * 0x1.0p-53;
  const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  const double sigma2 = std::log1p(cv * cv);
  return std::exp(-sigma2 / 2 + std::sqrt(sigma2) * z);
}

SimulationResult simulate_steps(const Workload& workload, const cluster::ClusterSpec& cluster,
                                const SchemeConfig& scheme, const SimulationOptions& options) {
  StepSimulation simulation(workload, cluster, scheme, options);
  return simulation.run();
}

RingBottleneck ring_bottleneck(const cluster::Cluster& cluster) {
  const CollectivePlan plan = plan_collective(cluster, CollectiveOp::AllReduce, AllReduceAlgorithm::Ring);
  if (plan.patterns.empty()) return {net::kInfinity, 0};
  const Pattern& ring = plan.patterns.front();
  RingBottleneck r{net::kInfinity, ring.latency};
  for (const FlowGroup& g : ring.groups) {
    for (const net::LinkUse& u : g.path) r.bw = std::min(r.bw, cluster.links[u.link].bw / u.count);
  }
  return r;
}

CollectiveResult simulate_collective(const cluster::ClusterSpec& spec, double bytes, CollectiveOp op,
                                     AllReduceAlgorithm algorithm, NetworkKind network) {
  CollectiveResult r;
  if (spec.workers <= 1) return r;
  const Cluster c = cluster::build_cluster(spec);
  auto net = make_network(c, network);
  const CollectivePlan plan = plan_collective(c, op, algorithm);
  const cluster::CollectiveRegime* regime = spec.regime_for(bytes);
  const double bound = transfer_bound(regime);
  double now = 0;
  for (const Stage& stage : plan.stages) {
    const Pattern& pattern = plan.patterns[stage.pattern];
    for (const FlowGroup& g : pattern.groups)
      net->start_flow({g.path, bytes * stage.fraction * g.size_factor, bound}, now);
    size_t left = pattern.groups.size();
    while (left > 0) {
      now = net->next_completion();
      const size_t done = net->advance_to(now).size();
      r.events += done;
      left -= done;
    }
    now += stage_latency(pattern, regime);
    r.max_link_flows = std::max(r.max_link_flows, pattern.max_link_members);
    r.stages++;
  }
  r.time = now;
  // Busiest links over the whole collective.
  const std::vector<double>& bytes_on = net->link_bytes();
  for (size_t l = 0; l < bytes_on.size(); ++l) {
    if (bytes_on[l] > 0 && r.time > 0)
      r.links.push_back({c.links[l].name, bytes_on[l] / (c.links[l].bw * r.time), bytes_on[l]});
  }
  std::sort(r.links.begin(), r.links.end(), [](const LinkLoad& a, const LinkLoad& b) {
    return a.busy != b.busy ? a.busy > b.busy : a.name < b.name;
  });
  return r;
}

CollectiveResult simulate_allreduce(const cluster::ClusterSpec& spec, double bytes,
                                    AllReduceAlgorithm algorithm, NetworkKind network) {
  return simulate_collective(spec, bytes, CollectiveOp::AllReduce, algorithm, network);
}

}  // namespace stepcast::scheme
