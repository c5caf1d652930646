// Collective algorithms as plans of point-to-point steps on a cluster: which worker sends how
// many bytes to which, step after step, with the path each transfer takes. The transfers of one
// step start together and the step ends when the last one ends (then the next starts after the
// step's latency), so the transfers of a step with equal sizes move as one flow group.
//
//   CollectivePlan plan = plan_collective(cluster, CollectiveOp::AllReduce,
//                                         AllReduceAlgorithm::Ring);
//   // plan.stages.size() == 2 (N - 1); each stage sends bytes * fraction per member
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/net/network_model.hpp"
#include "stepcast/scheme/scheme_config.hpp"

namespace stepcast::scheme {

enum class CollectiveOp : uint8_t { AllReduce, AllGather, ReduceScatter, Broadcast };
[[nodiscard]] const char* to_string(CollectiveOp op);
[[nodiscard]] const char* to_string(AllReduceAlgorithm algorithm);

/// Transfers of one step that share a size: their links, merged (a link crossed by k of them has
/// count k), and how many transfers there are.
struct FlowGroup {
  std::vector<net::LinkUse> path;  ///< sorted by link, merged
  double size_factor = 1;          ///< bytes per transfer = stage fraction x collective bytes x this
  int members = 0;
};

/// The communication pattern of a step (reused by every step with the same partners).
struct Pattern {
  std::vector<FlowGroup> groups;
  double latency = 0;             ///< s, slowest transfer's path latency
  uint32_t max_link_members = 0;  ///< most transfers sharing one link direction
};

struct Stage {
  int pattern = 0;
  double fraction = 0;  ///< bytes per transfer / collective bytes (before size_factor)
};

struct CollectivePlan {
  std::vector<Pattern> patterns;
  std::vector<Stage> stages;
};

/// Plans `op` over all workers of `cluster` (ranks = worker indices, except where the algorithm
/// maps ranks to workers itself). All-gather, reduce-scatter and broadcast use the ring (the
/// broadcast as a pipeline of 64 chunks along the ring). Throws Error (key
/// training.allreduce.algorithm) for halving_doubling or hdrm over a worker count that is not a
/// power of two, and for hdrm off a full BiGraph (validate.hpp states the same rules).
[[nodiscard]] CollectivePlan plan_collective(const cluster::Cluster& cluster, CollectiveOp op,
                                             AllReduceAlgorithm algorithm);

/// The worker of each rank of hdrm's halving-doubling on a full BiGraph (cluster.topology =
/// bigraph, one worker per node, workers = 2 x switches_per_half x hosts_per_switch, a power of
/// two): ranks r and r ^ 2^k are partners in step k. In every step each pair either shares a
/// switch or joins the two halves, and each link between two switches carries at most one pair
/// (with more hosts per switch than switches per half, the steps across the halves run in
/// rounds: see plan_collective). Assumes the spec is such a BiGraph (validate() checks it).
[[nodiscard]] std::vector<int> hdrm_mapping(const cluster::Cluster& cluster);

/// Rings over disjoint groups of workers (each group's worker indices in ring order, all groups
/// the same size g), all running at once in the same stages: an all-gather or reduce-scatter is
/// g - 1 steps of S / g per member, an all-reduce 2 (g - 1). What FSDP's per-unit collectives
/// over shard groups (and HSDP's all-reduce across them) are. Empty for groups of one.
[[nodiscard]] CollectivePlan plan_group_ring(const cluster::Cluster& cluster, CollectiveOp op,
                                             const std::vector<std::vector<int>>& groups);

/// How a size regime (cluster.collective_regimes; nullptr: none) changes a collective, in one place
/// for the simulator and the closed form: each transfer's own rate bound (FlowSpec::max_rate), and
/// how long a step lasts after its transfers end.
[[nodiscard]] inline double transfer_bound(const cluster::CollectiveRegime* regime) {
  return regime != nullptr ? regime->bw : net::kInfinity;
}
[[nodiscard]] inline double stage_latency(const Pattern& pattern, const cluster::CollectiveRegime* regime) {
  return regime != nullptr && regime->step_latency > pattern.latency ? regime->step_latency : pattern.latency;
}

/// The plan's time as a closed form t(S) = latency + S x seconds_per_byte, taking each flow
/// group alone at its narrowest link (shared only among its own members): exact on a network
/// where the groups of a step do not meet, a lower bound otherwise. The coarse predictor's
/// collective model. With a `regime` (cluster.collective_regimes, for the sizes it covers), each
/// transfer runs at no more than regime->bw and each step's latency is at least
/// regime->step_latency, as in the simulator.
struct CollectiveCost {
  double latency = 0;           ///< s
  double seconds_per_byte = 0;  ///< s per byte of the collective's buffer
  [[nodiscard]] double time(double bytes) const { return latency + bytes * seconds_per_byte; }
};
[[nodiscard]] CollectiveCost collective_cost(const cluster::Cluster& cluster, const CollectivePlan& plan,
                                             const cluster::CollectiveRegime* regime = nullptr);

/// Chunks each tree of the tree all-reduce pipelines half the data in: each way (reduce up,
/// broadcast down) takes depth + kTreeChunks - 1 steps of S / (2 kTreeChunks) per edge.
inline constexpr int kTreeChunks = 8;

/// Which algorithms need a power-of-two number of workers.
[[nodiscard]] bool needs_power_of_two(AllReduceAlgorithm algorithm);

}  // namespace stepcast::scheme
