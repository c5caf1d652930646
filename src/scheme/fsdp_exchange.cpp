#include "scheme/fsdp_exchange.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "scheme/worker_runtime.hpp"
#include "stepcast/detail/scheme/composed_costs.hpp"
#include "stepcast/error.hpp"

namespace stepcast::scheme {

std::vector<FsdpUnit> fsdp_units(const workload::Workload& w, int unit_blocks) {
  // A block is (groupable, id): layers of one model block, or a layer FSDP wraps alone. Each
  // tensor's block, then the tensors sorted by it (a search calls this per layout: no map).
  struct Block {
    int first_op = std::numeric_limits<int>::max();
    bool alone = false;
    std::vector<int> tensors;
  };
  struct Keyed {
    std::pair<bool, int> key;
    int first = 0;  // the tensor's first reader
    int tensor = 0;
  };
  std::vector<Keyed> keyed;
  keyed.reserve(w.tensors.size());
  for (int t = 0; t < static_cast<int>(w.tensors.size()); ++t) {
    const workload::Tensor& tensor = w.tensors[static_cast<size_t>(t)];
    if (tensor.consumers.empty() || tensor.producer < 0) {
      throw Error({"", 0, "training.scheme"},
                  fmt::format("fsdp gathers a parameter before the forward op that reads it and reduces its "
                              "gradient after the backward op that produces it, but tensor '{}' of workload "
                              "'{}' has {}",
                              tensor.name, w.name, tensor.consumers.empty() ? "no reader" : "no producer"));
    }
    const int first = *std::min_element(tensor.consumers.begin(), tensor.consumers.end());
    const int layer = w.ops[static_cast<size_t>(first)].layer;
    std::pair<bool, int> key{false, layer >= 0 ? layer : -1 - first};
    if (layer >= 0 && static_cast<size_t>(layer) < w.block_of_layer.size()) {
      const int block = w.block_of_layer[static_cast<size_t>(layer)];
      key = block >= 0 ? std::pair{false, block} : std::pair{true, layer};
    }
    keyed.push_back({key, first, t});
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) { return a.key < b.key; });
  std::vector<Block> ordered;
  for (size_t i = 0; i < keyed.size(); ++i) {
    if (i == 0 || keyed[i].key != keyed[i - 1].key) {
      ordered.emplace_back();
      ordered.back().alone = keyed[i].key.first;
    }
    Block& b = ordered.back();
    b.first_op = std::min(b.first_op, keyed[i].first);
    b.tensors.push_back(keyed[i].tensor);
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const Block& a, const Block& b) { return a.first_op < b.first_op; });

  std::vector<FsdpUnit> units;
  int blocks_in_last = 0;
  bool last_alone = true;
  for (const Block& b : ordered) {
    if (b.alone || last_alone || blocks_in_last == unit_blocks) {
      units.emplace_back();
      blocks_in_last = 0;
    }
    last_alone = b.alone;
    blocks_in_last++;
    FsdpUnit& u = units.back();
    for (int t : b.tensors) {
      const workload::Tensor& tensor = w.tensors[static_cast<size_t>(t)];
      u.tensors.push_back(t);
      u.bytes += tensor.bytes;
      u.forward_ops.insert(u.forward_ops.end(), tensor.consumers.begin(), tensor.consumers.end());
      u.backward_ops.push_back(tensor.producer);
    }
  }
  for (FsdpUnit& u : units) {
    for (std::vector<int>* ops : {&u.forward_ops, &u.backward_ops}) {
      std::sort(ops->begin(), ops->end());
      ops->erase(std::unique(ops->begin(), ops->end()), ops->end());
    }
  }
  return units;
}

double gathered_share(const workload::Workload& workload, const FsdpConfig& fsdp) {
  if (!fsdp.fp8_all_gather) return 1;
  STEPCAST_ASSERT(workload.precision == workload::Precision::FP8);
  // The Tensor bytes are bf16 (bytes_per_element of fp8); the gathered copy is 1 byte.
  return 1.0 / workload::bytes_per_element(workload.precision);
}

double reduced_share(const workload::Workload& workload, const SchemeConfig& scheme) {
  if (!scheme.grad_reduce_fp32) return 1;
  return std::max(1.0, 4.0 / workload::bytes_per_element(workload.precision));
}

std::pair<double, double> unit_bytes_on_rank(const workload::Workload& w, const FsdpUnit& unit,
                                             const ParallelConfig& parallel) {
  const bool mla = w.facts.transformer && w.facts.transformer->mla() && parallel.tensor > 1;
  if (parallel.expert <= 1 && !mla) return {unit.bytes / parallel.tensor, 0.0};
  // The rank's first experts / e (all of them without expert parallelism, over t as the rest).
  const int held = w.facts.transformer->experts / parallel.expert;
  const int expert_split = parallel.expert > 1 ? parallel.expert_tensor_degree() : parallel.tensor;
  double dense = 0, experts = 0;
  for (int t : unit.tensors) {
    const workload::Tensor& tensor = w.tensors[static_cast<size_t>(t)];
    const int expert = parallel.expert > 1 ? expert_of_tensor(tensor.name) : -1;
    if (expert < 0) {
      dense += whole_on_tensor_ranks(tensor.name) ? tensor.bytes : tensor.bytes / parallel.tensor;
    } else if (expert < held) {
      experts += tensor.bytes / expert_split;
    }
  }
  return {dense, experts};
}

std::vector<int> fsdp_backward_order(const std::vector<FsdpUnit>& units) {
  std::vector<int> order(units.size());
  for (size_t u = 0; u < units.size(); ++u) order[u] = static_cast<int>(u);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return units[a].backward_ops.front() < units[b].backward_ops.front();
  });
  return order;
}

FsdpPlans make_fsdp_plans(const cluster::Cluster& cluster, const FsdpConfig& fsdp) {
  FsdpPlans plans;
  const int n = cluster.spec.workers;
  const int g = fsdp_shard_degree(fsdp, n, cluster.spec.workers_per_node);
  STEPCAST_ASSERT(g >= 1 && n % g == 0);
  plans.shard_degree = g;
  plans.replicas = n / g;
  // Shard groups are consecutive ranks (the GPUs of a node first, as NCCL orders its rings);
  // replica groups take the ranks of one index in every shard group.
  std::vector<std::vector<int>> shard_groups(static_cast<size_t>(plans.replicas));
  std::vector<std::vector<int>> replica_groups(static_cast<size_t>(g));
  for (int r = 0; r < n; ++r) {
    shard_groups[static_cast<size_t>(r / g)].push_back(r);
    replica_groups[static_cast<size_t>(r % g)].push_back(r);
  }
  plans.gather = plan_group_ring(cluster, CollectiveOp::AllGather, shard_groups);
  plans.reduce = plan_group_ring(cluster, CollectiveOp::ReduceScatter, shard_groups);
  if (plans.replicas > 1) plans.replicate = plan_group_ring(cluster, CollectiveOp::AllReduce, replica_groups);
  return plans;
}

FsdpExchange::FsdpExchange(const StepContext& context, WorkerRuntime& runtime, int owner)
    : ctx_(context),
      runtime_(runtime),
      units_(fsdp_units(context.workload, context.scheme.fsdp.unit_blocks)),
      own_plans_(context.fsdp_plans != nullptr ? FsdpPlans{}
                                               : make_fsdp_plans(context.cluster, context.scheme.fsdp)),
      plans_(context.fsdp_plans != nullptr ? *context.fsdp_plans : own_plans_),
      runner_(context.engine, owner),
      gathered_share_(gathered_share(context.workload, context.scheme.fsdp)),
      reduced_share_(reduced_share(context.workload, context.scheme)) {
  const FsdpConfig& fsdp = ctx_.scheme.fsdp;
  const bool sharded = !plans_.gather.stages.empty();
  switch (fsdp.sharding) {
    case FsdpSharding::Full:
    case FsdpSharding::Hybrid:
      gather_forward_ = sharded;
      gather_backward_ = sharded && fsdp.reshard_after_forward;
      break;
    case FsdpSharding::GradOp:
      gather_forward_ = sharded;
      break;
    case FsdpSharding::Optimizer:
      gather_after_step_ = sharded;
      break;
  }
  reduce_ = sharded;
  replicate_ = !plans_.replicate.stages.empty();

  const int num_units = static_cast<int>(units_.size());
  const size_t num_ops = ctx_.workload.ops.size();
  inputs_.assign(num_ops, 0);
  forward_units_of_op_.assign(num_ops, {});
  backward_units_of_op_.assign(num_ops, {});
  unit_of_tensor_.assign(ctx_.workload.tensors.size(), kNone);
  for (int u = 0; u < num_units; ++u) {
    for (int op : units_[u].forward_ops) {
      forward_units_of_op_[op].push_back(u);
      if (gather_forward_) inputs_[op]++;
    }
    for (int op : units_[u].backward_ops) {
      backward_units_of_op_[op].push_back(u);
      if (gather_backward_) inputs_[op]++;
    }
    for (int t : units_[u].tensors) unit_of_tensor_[t] = u;
  }
  for (size_t op = 0; op < num_ops; ++op) forward_ops_ += forward_units_of_op_[op].empty() ? 0 : 1;
  unit_at_rank_ = fsdp_backward_order(units_);
  backward_rank_.resize(num_units);
  for (int j = 0; j < num_units; ++j) backward_rank_[unit_at_rank_[j]] = j;

  Stream& gather = streams_[0];
  Stream& reduce = streams_[1];
  gather.plan_of_kind[static_cast<int>(Kind::GatherForward)] = &plans_.gather;
  gather.plan_of_kind[static_cast<int>(Kind::GatherBackward)] = &plans_.gather;
  gather.plan_of_kind[static_cast<int>(Kind::GatherAfterStep)] = &plans_.gather;
  reduce.plan_of_kind[static_cast<int>(Kind::ReduceScatter)] = &plans_.reduce;
  reduce.plan_of_kind[static_cast<int>(Kind::AllReduce)] = &plans_.replicate;
  if (gather_forward_) {
    for (int u = 0; u < num_units; ++u) gather.sequence.push_back({Kind::GatherForward, u});
  }
  if (gather_backward_) {
    for (int j = 0; j < num_units; ++j) gather.sequence.push_back({Kind::GatherBackward, unit_at_rank_[j]});
  }
  if (gather_after_step_) {
    for (int u = 0; u < num_units; ++u) gather.sequence.push_back({Kind::GatherAfterStep, u});
  }
  for (int j = 0; j < num_units; ++j) {
    if (reduce_) reduce.sequence.push_back({Kind::ReduceScatter, unit_at_rank_[j]});
    if (replicate_) reduce.sequence.push_back({Kind::AllReduce, unit_at_rank_[j]});
  }
  for (Stream& s : streams_) {
    s.position.assign(5 * static_cast<size_t>(num_units), -1);
    for (int i = 0; i < static_cast<int>(s.sequence.size()); ++i) {
      const Collective& c = s.sequence[static_cast<size_t>(i)];
      s.position[static_cast<size_t>(static_cast<int>(c.kind) * num_units + c.unit)] = i;
    }
  }
  gather.thread = ctx_.layout.gather;
  reduce.thread = ctx_.layout.reduce;
  items_per_step_ = static_cast<int>(gather.sequence.size() + reduce.sequence.size());

  workers_.resize(static_cast<size_t>(ctx_.workers()));
  for (WorkerState& s : workers_) {
    s.forward_left.resize(num_units);
    s.backward_left.resize(num_units);
    s.gradients_left.resize(num_units);
    s.forward_started.resize(num_units);
    s.backward_started.resize(num_units);
    if (ctx_.trace != nullptr) s.reduced_by.assign(num_units, kNone);
  }
}

int FsdpExchange::stream_of(Kind kind) const {
  switch (kind) {
    case Kind::GatherForward:
    case Kind::GatherBackward:
    case Kind::GatherAfterStep:
      return 0;
    case Kind::ReduceScatter:
    case Kind::AllReduce:
      return 1;
  }
  return 0;
}

void FsdpExchange::begin(WorkerRuntime& runtime) {
  for (int w = 0; w < ctx_.workers(); ++w) runtime.start_step(w);
}

void FsdpExchange::step_started(int w) {
  WorkerState& s = workers_[static_cast<size_t>(w)];
  const int num_units = static_cast<int>(units_.size());
  for (int u = 0; u < num_units; ++u) {
    s.forward_left[u] = static_cast<int>(units_[u].forward_ops.size());
    s.backward_left[u] = static_cast<int>(units_[u].backward_ops.size());
    s.gradients_left[u] = static_cast<int>(units_[u].tensors.size());
    s.forward_started[u] = s.backward_started[u] = 0;
  }
  s.forward_done = 0;
  if (gather_forward_) {
    const int ahead = std::max(ctx_.scheme.fsdp.prefetch, 1);
    for (int u = 0; u < std::min(ahead, num_units); ++u) issue(w, Kind::GatherForward, u);
  }
}

void FsdpExchange::op_started(int w, int op) {
  WorkerState& s = workers_[static_cast<size_t>(w)];
  const int p = ctx_.scheme.fsdp.prefetch;
  const int num_units = static_cast<int>(units_.size());
  for (int u : forward_units_of_op_[op]) {
    if (s.forward_started[u]) continue;
    s.forward_started[u] = 1;
    if (gather_forward_ && p >= 1 && u + p < num_units) issue(w, Kind::GatherForward, u + p);
  }
  for (int u : backward_units_of_op_[op]) {
    if (s.backward_started[u]) continue;
    s.backward_started[u] = 1;
    const int j = backward_rank_[u] + p;
    if (gather_backward_ && p >= 1 && j < num_units) issue(w, Kind::GatherBackward, unit_at_rank_[j]);
  }
}

void FsdpExchange::op_finished(int w, int op) {
  WorkerState& s = workers_[static_cast<size_t>(w)];
  const int p = ctx_.scheme.fsdp.prefetch;
  const int num_units = static_cast<int>(units_.size());
  for (int u : forward_units_of_op_[op]) {
    if (--s.forward_left[u] == 0 && gather_forward_ && p == 0 && u + 1 < num_units) {
      issue(w, Kind::GatherForward, u + 1);
    }
  }
  if (!forward_units_of_op_[op].empty() && ++s.forward_done == forward_ops_ && gather_backward_) {
    // The forward ended: the first units of the backward are gathered now.
    for (int j = 0; j < std::min(std::max(p, 1), num_units); ++j) {
      issue(w, Kind::GatherBackward, unit_at_rank_[j]);
    }
  }
  for (int u : backward_units_of_op_[op]) {
    const int j = backward_rank_[u] + 1;
    if (--s.backward_left[u] == 0 && gather_backward_ && p == 0 && j < num_units) {
      issue(w, Kind::GatherBackward, unit_at_rank_[j]);
    }
  }
}

void FsdpExchange::gradient_ready(int w, int tensor) {
  WorkerState& s = workers_[static_cast<size_t>(w)];
  const int u = unit_of_tensor_[tensor];
  if (--s.gradients_left[u] > 0) return;
  if (ctx_.trace != nullptr) s.reduced_by[u] = runtime_.finishing_span(w);
  if (reduce_) issue(w, Kind::ReduceScatter, u);
  if (replicate_) issue(w, Kind::AllReduce, u);
}

void FsdpExchange::issue(int w, Kind kind, int unit, bool by_worker) {
  const int stream = stream_of(kind);
  Stream& s = streams_[stream];
  const int index =
      s.position[static_cast<size_t>(static_cast<int>(kind) * static_cast<int>(units_.size()) + unit)];
  STEPCAST_ASSERT(index >= 0);
  const int64_t id = static_cast<int64_t>(runtime_.step(w)) * static_cast<int64_t>(s.sequence.size()) + index;
  // The last worker to issue releases the others, who waited for it; gathers the exchange issues
  // itself (ZeRO-1's, when the reduce-scatters end) keep no one waiting but the network.
  if (++s.joined[id] == ctx_.workers() && by_worker) runtime_.release_all();
  maybe_start(stream);
}

void FsdpExchange::maybe_start(int stream) {
  Stream& s = streams_[stream];
  if (s.running) return;
  auto it = s.joined.find(s.next);
  if (it == s.joined.end() || it->second < ctx_.workers()) return;
  s.joined.erase(it);
  s.running = true;
  s.start = ctx_.engine.now();
  const Collective& c = s.sequence[static_cast<size_t>(s.next % static_cast<int64_t>(s.sequence.size()))];
  const CollectiveTerms terms{.regime = ctx_.cluster.spec.regime_for(buffer_bytes(c))};
  if (runner_.start(plan(s, c.kind), buffer_bytes(c), terms, stream) == kNone) collective_done(stream);
}

double FsdpExchange::buffer_bytes(const Collective& c) const {
  const double unit = units_[static_cast<size_t>(c.unit)].bytes;
  switch (c.kind) {
    case Kind::GatherForward:
    case Kind::GatherBackward:
    case Kind::GatherAfterStep:
      return unit * gathered_share_;
    case Kind::ReduceScatter:
      return unit * reduced_share_;
    case Kind::AllReduce:
      return unit / plans_.shard_degree * reduced_share_;
  }
  return unit;
}

void FsdpExchange::flow_done(net::FlowId flow) { runner_.flow_done(flow); }

void FsdpExchange::handle(const Event& event) {
  if (const auto* done = std::get_if<StageDone>(&event)) {
    if (const std::optional<int> stream = runner_.stage_done(done->slot)) collective_done(*stream);
  }
}

void FsdpExchange::collective_done(int stream) {
  Stream& s = streams_[stream];
  const Collective c = s.sequence[static_cast<size_t>(s.next % static_cast<int64_t>(s.sequence.size()))];
  s.running = false;
  const auto per_step = static_cast<int64_t>(s.sequence.size());
  const bool last_of_step = (s.next + 1) % per_step == 0;
  const int step = static_cast<int>(s.next / per_step);
  s.next++;
  finished(stream, c, step, last_of_step);
  maybe_start(stream);
}

void FsdpExchange::finished(int stream, const Collective& c, int step, bool last_of_step) {
  const Stream& s = streams_[stream];
  const int n = ctx_.workers();
  const double now = ctx_.engine.now();
  const char* what = "";
  switch (c.kind) {
    case Kind::GatherForward:
      what = "all-gather (forward)";
      break;
    case Kind::GatherBackward:
      what = "all-gather (backward)";
      break;
    case Kind::GatherAfterStep:
      what = "all-gather (updated)";
      break;
    case Kind::ReduceScatter:
      what = "reduce-scatter";
      break;
    case Kind::AllReduce:
      what = "all-reduce (across groups)";
      break;
  }
  const FsdpUnit& unit = units_[static_cast<size_t>(c.unit)];
  for (int w = 0; w < n; ++w) {
    int span = kNone;
    if (ctx_.trace != nullptr && ctx_.layout.keeps(w, step)) {
      span = ctx_.span({.process = w,
                        .thread = s.thread,
                        .name = fmt::format("{} unit {}", what, c.unit),
                        .category = "fsdp",
                        .start = s.start,
                        .duration = now - s.start,
                        .step = step,
                        .bytes = buffer_bytes(c),
                        .unit = c.unit});
      if (c.kind == Kind::ReduceScatter) {
        ctx_.flow(workers_[static_cast<size_t>(w)].reduced_by[static_cast<size_t>(c.unit)], span,
                  "gradients ready");
      }
    }
    switch (c.kind) {
      case Kind::GatherForward:
        for (int op : unit.forward_ops) runtime_.op_input_arrived(w, op, span);
        break;
      case Kind::GatherBackward:
        for (int op : unit.backward_ops) runtime_.op_input_arrived(w, op, span);
        break;
      case Kind::GatherAfterStep:
      case Kind::ReduceScatter:
      case Kind::AllReduce:
        break;
    }
    runtime_.item_done(w);
  }
  // ZeRO-1 with a free optimizer step: every worker updated its shard; the new parameters are
  // gathered for the next step.
  if (stream == 1 && last_of_step && gather_after_step_ && !(runtime_.optimizer_time() > 0)) {
    for (int w = 0; w < n; ++w) {
      for (int u = 0; u < static_cast<int>(units_.size()); ++u) issue(w, Kind::GatherAfterStep, u, false);
    }
  }
}

int FsdpExchange::items_after_optimizer() const {
  return gather_after_step_ ? static_cast<int>(units_.size()) : 0;
}

void FsdpExchange::optimizer_done(int w) {
  // ZeRO-1: this worker updated its shard; the last to finish its update starts the gathers.
  if (!gather_after_step_) return;
  for (int u = 0; u < static_cast<int>(units_.size()); ++u) issue(w, Kind::GatherAfterStep, u);
}

}  // namespace stepcast::scheme
