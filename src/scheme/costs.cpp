#include "stepcast/detail/scheme/costs.hpp"

#include <algorithm>

#include "stepcast/detail/scheme/placement.hpp"

namespace stepcast::scheme {

double ps_apply_time(const PsConfig& ps, double bytes) {
  return ps.apply_time + (ps.apply_bw > 0 ? bytes / ps.apply_bw : 0.0);
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

}  // namespace stepcast::scheme
