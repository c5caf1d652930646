#include "stepcast/detail/scheme/costs.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>

#include "scheme/node_aggregation.hpp"
#include "scheme/parameter_server_exchange.hpp"
#include "scheme/step_paths.hpp"
#include "stepcast/detail/hash.hpp"
#include "stepcast/detail/scheme/placement.hpp"
#include "stepcast/workload/moe_routing.hpp"

namespace stepcast::scheme {

namespace {

/// The memory send_pieces works in, kept across calls (one per random order drawn).
struct SendBuffers {
  using Entry = std::pair<uint64_t, size_t>;  // rank, piece
  using Timed = std::pair<double, size_t>;    // time, shard
  std::vector<std::vector<Entry>> waiting;    // per shard, a min-heap by rank
  std::vector<std::vector<Entry>> all_ready;  // per shard, sorted, last first
  std::vector<size_t> next, current;
  std::vector<Timed> finishing, starting;  // min-heaps
  std::vector<double> arrival;
};

/// A worker's connections to the shards sending their pieces as a fluid: shard s's connection
/// sends one piece at a time from start[s], the first in `rank` among those ready (ready[p] <= now;
/// idle until the next is ready); the k connections sending share the worker's link fairly, each
/// at min(shard_rate, link_rate / k). by_shard[s]: shard s's pieces sorted by ready. Leaves each
/// piece's arrival in b.arrival, and fills `sent` (the pieces in the order they arrived). All sending
/// connections move at one rate, so a virtual clock (bytes each has sent) orders their ends:
/// O(pieces log shards), as fair queueing runs it.
void send_pieces(const std::vector<Piece>& pieces, const std::vector<double>& ready,
                 const std::vector<uint64_t>& rank, const std::vector<std::vector<size_t>>& by_shard,
                 const std::vector<double>& start, const ShardStreams& streams, SendBuffers& b,
                 std::vector<size_t>* sent = nullptr) {
  using Entry = SendBuffers::Entry;
  const size_t shards = by_shard.size();
  constexpr auto later = std::greater<>();
  b.arrival.assign(pieces.size(), 0.0);
  b.waiting.resize(shards);
  b.all_ready.resize(shards);
  for (size_t s = 0; s < shards; ++s) {
    b.waiting[s].clear();
    b.all_ready[s].clear();
  }
  b.next.assign(shards, 0);
  b.current.assign(shards, 0);
  b.finishing.clear();
  b.starting.clear();
  double now = 0, virtual_now = 0;
  auto start_next = [&](size_t s) {
    const std::vector<size_t>& list = by_shard[s];
    std::vector<Entry>& heap = b.waiting[s];
    // A shard whose remaining pieces are all ready sends them in one sorted order: cheaper than
    // the heap, and the same order.
    if (heap.empty() && b.next[s] < list.size() && ready[list.back()] <= now) {
      for (size_t i = b.next[s]; i < list.size(); ++i) b.all_ready[s].push_back({rank[list[i]], list[i]});
      b.next[s] = list.size();
      std::sort(b.all_ready[s].begin(), b.all_ready[s].end(), later);
    }
    while (b.next[s] < list.size() && ready[list[b.next[s]]] <= now) {
      heap.push_back({rank[list[b.next[s]]], list[b.next[s]]});
      std::push_heap(heap.begin(), heap.end(), later);
      ++b.next[s];
    }
    if (!b.all_ready[s].empty()) {
      b.current[s] = b.all_ready[s].back().second;
      b.all_ready[s].pop_back();
    } else if (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), later);
      b.current[s] = heap.back().second;
      heap.pop_back();
    } else {
      if (b.next[s] < list.size()) {
        b.starting.push_back({std::max(start[s], ready[list[b.next[s]]]), s});
        std::push_heap(b.starting.begin(), b.starting.end(), later);
      }
      return;
    }
    b.finishing.push_back({virtual_now + pieces[b.current[s]].bytes, s});
    std::push_heap(b.finishing.begin(), b.finishing.end(), later);
  };
  for (size_t s = 0; s < shards; ++s) {
    if (by_shard[s].empty()) continue;
    b.starting.push_back({std::max(start[s], ready[by_shard[s].front()]), s});
    std::push_heap(b.starting.begin(), b.starting.end(), later);
  }
  while (!b.finishing.empty() || !b.starting.empty()) {
    const double rate =
        b.finishing.empty()
            ? 0.0
            : std::min(streams.shard_rate, streams.link_rate / static_cast<double>(b.finishing.size()));
    const double finish_at = b.finishing.empty() ? std::numeric_limits<double>::infinity()
                                                 : now + (b.finishing.front().first - virtual_now) / rate;
    if (!b.starting.empty() && b.starting.front().first < finish_at) {
      std::pop_heap(b.starting.begin(), b.starting.end(), later);
      const auto [when, s] = b.starting.back();
      b.starting.pop_back();
      virtual_now += rate * (when - now);
      now = when;
      start_next(s);
    } else {
      std::pop_heap(b.finishing.begin(), b.finishing.end(), later);
      const auto [finish, s] = b.finishing.back();
      b.finishing.pop_back();
      virtual_now = finish;
      now = finish_at;
      b.arrival[b.current[s]] = now;
      if (sent != nullptr) sent->push_back(b.current[s]);
      start_next(s);
    }
  }
}

/// Pieces of each shard sorted by ready (ties by piece index).
std::vector<std::vector<size_t>> by_shard_and_ready(const std::vector<Piece>& pieces,
                                                    const std::vector<double>& ready, size_t shards) {
  std::vector<size_t> all(pieces.size());
  std::iota(all.begin(), all.end(), size_t{0});
  std::stable_sort(all.begin(), all.end(), [&](size_t a, size_t b) { return ready[a] < ready[b]; });
  std::vector<std::vector<size_t>> r(shards);
  for (size_t p : all) r[static_cast<size_t>(pieces[p].shard)].push_back(p);
  return r;
}

}  // namespace

double ps_apply_time(const PsConfig& ps, double bytes) {
  return ps.apply_time + (ps.apply_bw > 0 ? bytes / ps.apply_bw : 0.0);
}

double forward_end_after_pulls(const workload::Workload& workload, const PsConfig& ps,
                               const std::vector<double>& stream_start, const ShardStreams& streams,
                               const std::vector<double>& piece_ready, uint64_t seed, int draws,
                               double* spread) {
  const std::vector<Piece> pieces = place_parameters(workload, ps);
  const std::vector<uint64_t> need = need_ranks(workload, pieces, ps.order);
  const bool random = ps.order == PsOrder::Random;
  const double origin = *std::min_element(stream_start.begin(), stream_start.end());
  std::vector<double> ready(pieces.size(), 0.0);
  for (size_t p = 0; p < pieces.size() && p < piece_ready.size(); ++p) ready[p] = piece_ready[p];
  const std::vector<std::vector<size_t>> by_ready = by_shard_and_ready(pieces, ready, stream_start.size());
  std::vector<uint64_t> rank(pieces.size());
  SendBuffers buffers;
  std::vector<double> tensor_in(workload.tensors.size());
  std::vector<double> op_end(workload.ops.size()), lane_free(workload.lanes.size()),
      gate(workload.ops.size());
  double total = 0;
  const int rounds = random ? std::max(1, draws) : 1;
  std::vector<double> ends;
  for (int draw = 0; draw < rounds; ++draw) {
    for (size_t p = 0; p < pieces.size(); ++p) {
      rank[p] = random ? mix64(seed ^ mix64(static_cast<uint64_t>(draw) * 0x9e3779b97f4a7c15ULL + p))
                       : (need.empty() ? p : need[p]);
    }
    send_pieces(pieces, ready, rank, by_ready, stream_start, streams, buffers);
    const std::vector<double>& arrival = buffers.arrival;
    std::fill(tensor_in.begin(), tensor_in.end(), origin);
    for (size_t p = 0; p < pieces.size(); ++p) {
      double& in = tensor_in[static_cast<size_t>(pieces[p].tensor)];
      in = std::max(in, arrival[p]);
    }
    std::fill(gate.begin(), gate.end(), origin);
    for (size_t t = 0; t < workload.tensors.size(); ++t) {
      for (int reader : workload.tensors[t].consumers) {
        gate[static_cast<size_t>(reader)] = std::max(gate[static_cast<size_t>(reader)], tensor_in[t]);
      }
    }
    // Ops are in a topological order and each lane runs its ops in index order (Workload).
    std::fill(lane_free.begin(), lane_free.end(), origin);
    double forward_end = origin;
    for (size_t op = 0; op < workload.ops.size(); ++op) {
      const workload::Op& o = workload.ops[op];
      if (o.kind != workload::OpKind::Forward) continue;
      double start = std::max(gate[op], lane_free[static_cast<size_t>(o.lane)]);
      for (int d : o.deps) {
        if (workload.ops[static_cast<size_t>(d)].kind == workload::OpKind::Forward) {
          start = std::max(start, op_end[static_cast<size_t>(d)]);
        }
      }
      op_end[op] = start + o.duration;
      lane_free[static_cast<size_t>(o.lane)] = op_end[op];
      forward_end = std::max(forward_end, op_end[op]);
    }
    for (double a : arrival) forward_end = std::max(forward_end, a);
    total += forward_end;
    ends.push_back(forward_end);
  }
  if (spread != nullptr) {
    double differences = 0;
    for (size_t i = 0; i < ends.size(); ++i) {
      for (size_t j = i + 1; j < ends.size(); ++j) differences += std::fabs(ends[i] - ends[j]);
    }
    *spread =
        ends.size() > 1 ? 2 * differences / (static_cast<double>(ends.size()) * (ends.size() - 1)) : 0.0;
  }
  return total / rounds;
}

PushStreams push_streams(const workload::Workload& workload, const PsConfig& ps, int workers,
                         const ShardStreams& streams) {
  const AloneSchedule alone = schedule_alone(workload);
  double backward_start = alone.compute_end;
  for (size_t op = 0; op < workload.ops.size(); ++op) {
    if (workload.ops[op].kind == workload::OpKind::Backward) {
      backward_start = std::min(backward_start, alone.op_start[op]);
    }
  }
  const std::vector<Piece> pieces = place_parameters(workload, ps);
  const std::vector<uint64_t> need = need_ranks(workload, pieces, ps.order);
  std::vector<double> ready(pieces.size());
  std::vector<size_t> production(pieces.size());
  for (size_t p = 0; p < pieces.size(); ++p) {
    const int producer = workload.tensors[static_cast<size_t>(pieces[p].tensor)].producer;
    const double made = producer >= 0 ? alone.op_end[static_cast<size_t>(producer)] : alone.compute_end;
    ready[p] = std::max(0.0, made - backward_start);
    production[p] = p;
  }
  std::stable_sort(production.begin(), production.end(),
                   [&](size_t a, size_t b) { return ready[a] < ready[b]; });
  std::vector<uint64_t> rank(pieces.size());
  for (size_t i = 0; i < production.size(); ++i) rank[production[i]] = need.empty() ? i : need[production[i]];
  const size_t shards = static_cast<size_t>(std::max(1, ps.count));
  std::vector<size_t> sent;
  SendBuffers buffers;
  send_pieces(pieces, ready, rank, by_shard_and_ready(pieces, ready, shards),
              std::vector<double>(shards, 0.0), streams, buffers, &sent);
  const std::vector<double>& arrival = buffers.arrival;
  PushStreams r;
  r.piece_applied.assign(pieces.size(), 0.0);
  std::vector<double> lane(shards, 0.0);
  for (size_t p : sent) {
    double& l = lane[static_cast<size_t>(pieces[p].shard)];
    l = std::max(l, arrival[p]) + workers * ps_apply_time(ps, pieces[p].bytes);
    r.piece_applied[p] = l;
    r.pushed = std::max(r.pushed, arrival[p]);
    r.applied = std::max(r.applied, l);
  }
  std::vector<size_t> last_applied_first(pieces.size());
  std::iota(last_applied_first.begin(), last_applied_first.end(), size_t{0});
  std::stable_sort(last_applied_first.begin(), last_applied_first.end(),
                   [&](size_t a, size_t b) { return r.piece_applied[a] > r.piece_applied[b]; });
  std::vector<double> bytes_after(shards, 0.0);
  for (size_t p : last_applied_first) {
    double& after = bytes_after[static_cast<size_t>(pieces[p].shard)];
    after += pieces[p].bytes;
    r.drained = std::max(r.drained, r.piece_applied[p] + after / streams.shard_rate);
  }
  return r;
}

double ps_server_bw(const cluster::ClusterSpec& spec, const PsConfig& ps) {
  // Only a dedicated server node has a NIC of its own (cluster::build_cluster's extra nodes).
  const bool dedicated = ps.placement == PsPlacement::Dedicated;
  return dedicated && spec.ps_nic_bw > 0 ? spec.ps_nic_bw : spec.nic_bw;
}

double optimizer_bytes_per_parameter(Optimizer optimizer) {
  double state = 0;  // bytes per parameter
  switch (optimizer) {
    case Optimizer::Adam:
      state = 8;
      break;
    case Optimizer::Momentum:
      state = 4;
      break;
    case Optimizer::Sgd:
      state = 0;
      break;
  }
  return 12 + 2 * state;
}

double optimizer_step_time(const workload::Workload& workload, const cluster::ClusterSpec& spec,
                           const SchemeConfig& scheme) {
  if (workload.optimizer_in_ops || !(spec.gpu_memory_bw > 0)) return 0;
  double share = 0;  // of the parameters one worker updates
  switch (scheme.scheme) {
    case Scheme::ParameterServer:
      return 0;
    case Scheme::AllReduce:
      share = 1;
      break;
    case Scheme::Fsdp:
      share = 1.0 / std::max(1, fsdp_shard_degree(scheme.fsdp, spec.workers, spec.workers_per_node));
      break;
  }
  // As the memory check counts them (predict/model_metrics.cpp): a profile knows its gradients'
  // bytes but not the parameter count.
  const double parameters =
      workload.facts.parameters > 0
          ? workload.facts.parameters
          : workload.parameter_bytes() / workload::bytes_per_element(workload.precision);
  return share * parameters * optimizer_bytes_per_parameter(scheme.optimizer) / spec.gpu_memory_bw;
}

double comm_cpu_time(const workload::Workload& workload, const SchemeConfig& scheme) {
  switch (scheme.scheme) {
    case Scheme::ParameterServer:
      return 2 * workload.parameter_bytes() * workload.comm_cpu_per_byte;
    case Scheme::AllReduce:
    case Scheme::Fsdp:
      return 0;
  }
  return 0;
}

double ShardLoads::largest_bytes() const { return *std::max_element(bytes.begin(), bytes.end()); }

double ShardLoads::largest_apply() const { return *std::max_element(apply.begin(), apply.end()); }

double ShardLoads::largest_effective_pieces() const {
  const size_t busiest = static_cast<size_t>(std::max_element(bytes.begin(), bytes.end()) - bytes.begin());
  return square_bytes[busiest] > 0 ? bytes[busiest] * bytes[busiest] / square_bytes[busiest] : 1.0;
}

int ShardLoads::largest_messages() const { return *std::max_element(messages.begin(), messages.end()); }

cluster::Cluster ps_cluster(const cluster::ClusterSpec& spec, const PsConfig& ps) {
  return cluster::build_cluster(spec, ps.placement == PsPlacement::Dedicated ? ps.count : 0);
}

PsFabricBytes ps_fabric_bytes_by_direction(const cluster::Cluster& cluster,
                                           const workload::Workload& workload, const PsConfig& ps) {
  const bool fabric = std::any_of(cluster.switch_out.begin(), cluster.switch_out.end(),
                                  [](const std::vector<uint32_t>& out) { return !out.empty(); });
  if (!fabric) return {};
  const std::vector<double> bytes = shard_bytes(place_parameters(workload, ps), ps.count);
  const NodeAggregation nodes(ps.local_aggregation, cluster, cluster.spec.workers, 0);
  PsFabricBytes r;
  r.pulls.assign(cluster.links.size(), 0.0);
  r.pushes.assign(cluster.links.size(), 0.0);
  for (int client = 0; client < nodes.clients(); ++client) {
    const cluster::Endpoint at = cluster.worker_endpoint(nodes.leader_of_client(client));
    for (int s = 0; s < ps.count; ++s) {
      const cluster::Endpoint shard = ps_shard_endpoint(cluster, ps, s);
      for (uint32_t l : cluster.path(shard, at).links) r.pulls[l] += bytes[static_cast<size_t>(s)];
      for (uint32_t l : cluster.path(at, shard).links) r.pushes[l] += bytes[static_cast<size_t>(s)];
    }
  }
  return r;
}

std::vector<double> PsFabricBytes::both() const {
  std::vector<double> link_bytes = pulls;
  for (size_t l = 0; l < link_bytes.size(); ++l) link_bytes[l] += pushes[l];
  return link_bytes;
}

std::vector<double> ps_fabric_bytes(const cluster::Cluster& cluster, const workload::Workload& workload,
                                    const PsConfig& ps) {
  return ps_fabric_bytes_by_direction(cluster, workload, ps).both();
}

double busiest_link_time(const cluster::Cluster& cluster, const std::vector<double>& link_bytes) {
  double busiest = 0;
  for (size_t l = 0; l < link_bytes.size(); ++l)
    busiest = std::max(busiest, link_bytes[l] / cluster.links[l].bw);
  return busiest;
}

ShardLoads shard_loads(const workload::Workload& workload, const PsConfig& ps) {
  const std::vector<Piece> pieces = place_parameters(workload, ps);
  ShardLoads load;
  load.bytes = shard_bytes(pieces, ps.count);
  load.apply.assign(load.bytes.size(), 0.0);
  load.messages.assign(load.bytes.size(), 0);
  load.square_bytes.assign(load.bytes.size(), 0.0);
  for (const Piece& p : pieces) {
    load.apply[p.shard] += ps_apply_time(ps, p.bytes);
    load.messages[p.shard]++;
    load.square_bytes[p.shard] += p.bytes * p.bytes;
  }
  return load;
}

double collective_bytes_sent(const CollectivePlan& plan, double bytes) {
  double sent = 0;
  for (const Stage& stage : plan.stages) {
    for (const FlowGroup& g : plan.patterns[stage.pattern].groups) {
      if (!g.path.empty()) sent += bytes * stage.fraction * g.size_factor * g.members;
    }
  }
  return sent;
}

double allreduce_bytes_per_worker(AllReduceAlgorithm algorithm, int workers, int workers_per_node,
                                  double bytes) {
  const int n = workers;
  if (n <= 1) return 0;
  const double ring = 2.0 * (n - 1) / n * bytes;
  switch (algorithm) {
    case AllReduceAlgorithm::Ring:
    case AllReduceAlgorithm::HalvingDoubling:
    case AllReduceAlgorithm::Hdrm:
    case AllReduceAlgorithm::Tree:
    case AllReduceAlgorithm::Auto:
      return ring;
    case AllReduceAlgorithm::Hierarchical: {
      // Counted ring by ring, since a last node with fewer GPUs has a shorter local ring (or none,
      // alone) and leaves some cross-node rings a node short: a ring of k >= 2 members sends k
      // transfers per step, a ring of one sends nothing.
      const int g = std::min(workers_per_node, n), nodes = (n + g - 1) / g;
      const auto ring_members = [](int k) { return k >= 2 ? k : 0; };
      double local = 0, across = 0;  // transfers per step inside nodes, across nodes
      for (int node = 0; node < nodes; ++node) local += ring_members(std::min(g, n - node * g));
      for (int j = 0; j < g; ++j) across += ring_members(j < n - (nodes - 1) * g ? nodes : nodes - 1);
      // Reduce-scatter and all-gather inside: 2 (G-1) steps of S/G; across: 2 (M-1) of S/(G M).
      const double total =
          2.0 * (g - 1) * local * bytes / g + 2.0 * (nodes - 1) * across * bytes / (g * nodes);
      return total / n;
    }
  }
  return ring;
}

double busiest_expert_gpu(int64_t experts, int expert_parallel, double imbalance) {
  if (experts <= 1 || expert_parallel <= 1) return 1;
  const auto n = static_cast<double>(experts);
  const double local = n / expert_parallel;
  return (imbalance + (local - 1) * (n - imbalance) / (n - 1)) / local;
}

std::vector<double> busiest_expert_gpu_by_block(const workload::Workload& w, const ParallelConfig& parallel) {
  if (!w.facts.transformer) return {1.0};
  const workload::TransformerShape& shape = *w.facts.transformer;
  std::vector<double> loads(static_cast<size_t>(shape.layers), 1.0);
  if (parallel.expert <= 1 || shape.experts <= 1) return loads;
  const bool balanced = w.facts.moe_placement == workload::ExpertPlacement::Balanced;
  // workload.moe.imbalance as counts: the busiest expert first, the others sharing the rest.
  const auto n = static_cast<double>(shape.experts);
  std::vector<double> skewed(static_cast<size_t>(shape.experts), (n - w.facts.moe_imbalance) / (n - 1));
  skewed.front() = w.facts.moe_imbalance;
  const double from_imbalance =
      workload::busiest_gpu_of_counts(skewed, parallel.expert, balanced, w.facts.moe_capacity_factor);
  for (size_t b = 0; b < loads.size(); ++b) loads[b] = shape.is_moe_block(static_cast<int64_t>(b)) ? from_imbalance : 1.0;
  const workload::MoeRouting& routing = w.facts.moe_routing;
  for (size_t row = 0; row < routing.blocks.size(); ++row) {
    loads[static_cast<size_t>(routing.blocks[row])] = workload::busiest_gpu_of_counts(
        routing.tokens[row], parallel.expert, balanced, w.facts.moe_capacity_factor);
  }
  return loads;
}

double expert_flop_share(const workload::TransformerShape& shape) {
  if (shape.experts <= 1) return 0;
  const auto h = static_cast<double>(shape.hidden);
  const double expert = (shape.swiglu ? 6.0 : 4.0) * h * static_cast<double>(shape.expert_width());
  const double experts = static_cast<double>(shape.top_k) * expert;
  // The router and the shared experts run on the tokens' own GPU, outside the all-to-alls.
  const double local =
      2.0 * h * static_cast<double>(shape.experts) + static_cast<double>(shape.shared_experts) * expert;
  return experts / (experts + local);
}

}  // namespace stepcast::scheme
