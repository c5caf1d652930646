// Collective algorithms as plans of point-to-point steps on a cluster: which worker sends how
// many bytes to which, step after step, with the path each transfer takes. The transfers of one
// step start together and the step ends when the last one ends (then the next starts after the
// step's latency), so the transfers of a step with equal sizes move as one flow group.
//
//   CollectivePlan plan = plan_collective(cluster, CollectiveOp::AllReduce,
//                                         AllReduceAlgorithm::Ring);
//   // plan.stages.size() == 2 (N - 1); each stage sends bytes * fraction per member
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/net/network_model.hpp"
#include "stepcast/enum_names.hpp"
#include "stepcast/scheme/scheme_config.hpp"

namespace stepcast::scheme {

enum class CollectiveOp : uint8_t { AllReduce, AllGather, ReduceScatter, Broadcast };
constexpr std::string_view name_of(CollectiveOp v) {
  switch (v) {
    case CollectiveOp::AllReduce:
      return "allreduce";
    case CollectiveOp::AllGather:
      return "allgather";
    case CollectiveOp::ReduceScatter:
      return "reducescatter";
    case CollectiveOp::Broadcast:
      return "broadcast";
  }
  return {};
}
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
  bool crosses_nodes = false;     ///< some transfer goes from one node to another
};

/// What a step's latency is, for NCCL's model: one hop of a chunk's path inside a node or across
/// nodes, or none (a pipelined step whose latency overlaps the previous chunks' transfers).
enum class StageHop : uint8_t { Intra, Inter, Pipelined };

/// The most stages a plan simulates for one run of identical steps (a ring's N - 1 or 2 (N - 1)):
/// a longer run is cut into this many stages, each standing for several steps, with their bytes
/// and latencies summed. Alone a collective takes the same time either way; sharing links with
/// other transfers, the bytes interleave at the coarser grain. Rings over up to 513 ranks keep one
/// stage per step; a ring over 131,072 ranks runs in 1,024 stages instead of 262,142.
inline constexpr int kMaxSimulatedSteps = 1024;

struct Stage {
  int pattern = 0;
  double fraction = 0;  ///< bytes per transfer / collective bytes (before size_factor), all steps
  double latency = 0;   ///< s after one step's transfers end, from the links (protocol `links`)
  StageHop hop = StageHop::Inter;
  int steps = 1;  ///< identical steps this stage stands for (kMaxSimulatedSteps); latency paid each
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

/// One step of a ring in each of the groups at once: every member sends the buffer to the next
/// member of its group (ring attention's pass of K and V). One stage of fraction 1; empty for
/// groups of one.
[[nodiscard]] CollectivePlan plan_group_shift(const cluster::Cluster& cluster,
                                              const std::vector<std::vector<int>>& groups);

/// An all-to-all in each of the groups at once (equal sizes): every member sends 1 / g of the
/// buffer to each other member, except that transfers into member 0 (`into_busiest`) or out of it
/// carry `busiest` x that share and the other members' (g - busiest) / (g - 1) x it, so that what
/// member 0 handles is `busiest` times the mean (a mixture of experts' busiest GPU). One stage of
/// fraction 1 / g; empty for groups of one. busiest is in [1, g].
[[nodiscard]] CollectivePlan plan_group_all_to_all(const cluster::Cluster& cluster,
                                                   const std::vector<std::vector<int>>& groups,
                                                   double busiest, bool into_busiest);

/// Point-to-point transfers between workers, all at once: (from, to) pairs, each moving the whole
/// buffer (pipeline stages' activations and gradients). One stage of fraction 1.
[[nodiscard]] CollectivePlan plan_transfers(const cluster::Cluster& cluster,
                                            const std::vector<std::pair<int, int>>& pairs);

/// What a collective of a given size pays beyond its plan's transfers: a size regime
/// (cluster.collective_regimes) or one protocol of NCCL's model (cluster.nccl), or neither (the
/// links alone). In one place for the simulator, the fast paths and the closed forms.
struct CollectiveTerms {
  const cluster::CollectiveRegime* regime = nullptr;
  const cluster::NcclCost* protocol = nullptr;
  cluster::NcclHop intra_hop = cluster::NcclHop::NvLink;  ///< the class of a hop inside a node
  /// bytes/s of payload bus bandwidth the protocol allows the whole collective (NCCL's channels x
  /// per-channel cap, and its cap on the whole: cluster::nccl_bus_bw_cap); +inf under `links`.
  double bus_bw_cap = net::kInfinity;
};

/// The rate bound (FlowSpec::max_rate, wire bytes/s per member) of a plan's transfers: a regime's
/// bandwidth for every transfer alike, and a protocol's bus-bandwidth cap shared out by the data
/// each transfer carries. A ring's or tree's transfer of size factor f carries f of the channels'
/// data (1 / rings, 1 / trees), so it may move f x bus_bw_cap of payload: where the cap binds, a
/// ring's bandwidth term is NCCL's 2 (N-1)/N S / busBw exactly, a tree's 2 S / busBw stretched by
/// its pipeline's fill ((depth + kTreeChunks - 1) / kTreeChunks).
struct TransferBound {
  double per_transfer = net::kInfinity;     ///< bytes/s, whatever the size factor
  double per_size_factor = net::kInfinity;  ///< bytes/s per unit of size factor
  [[nodiscard]] double of(double size_factor) const {
    return std::min(per_transfer, per_size_factor * size_factor);
  }
  auto operator<=>(const TransferBound&) const = default;
};
/// Wire bytes per payload byte: a protocol's flags and framing travel with the data.
[[nodiscard]] inline double wire_factor(const CollectiveTerms& terms);
/// Each transfer's own rate bound (FlowSpec::max_rate), by its size factor.
[[nodiscard]] inline TransferBound transfer_bound(const CollectiveTerms& terms) {
  TransferBound bound;
  if (terms.regime != nullptr) bound.per_transfer = terms.regime->bw;
  // The cap is on payload; a transfer moves wire bytes, 1 / efficiency per payload byte.
  bound.per_size_factor = terms.bus_bw_cap * wire_factor(terms);
  return bound;
}
[[nodiscard]] inline double wire_factor(const CollectiveTerms& terms) {
  return terms.protocol != nullptr ? 1.0 / terms.protocol->efficiency : 1.0;
}
/// How long stage `index` of `plan` lasts after its transfers end (the last stage also pays the
/// protocol's base latency, once per collective).
[[nodiscard]] double stage_latency(const CollectivePlan& plan, size_t index, const CollectiveTerms& terms);

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
                                             const CollectiveTerms& terms = {});

/// collective_cost's bandwidth term pattern by pattern, before any rate bound: for each pattern
/// that moves bytes, the stages' summed fraction and its slowest transfer's seconds per byte at
/// the links (size factor / narrowest share). Under a protocol, collective_cost's
/// seconds_per_byte is the sum over them of fraction x max(efficiency / bus_bw_cap,
/// links_seconds_per_byte) / efficiency, for any bus_bw_cap: what lets a fit vary the cap without
/// rebuilding the plan (calibrate --fit nccl).
struct PatternCost {
  double fraction = 0;                ///< summed over the stages of the pattern
  double links_seconds_per_byte = 0;  ///< s per byte of a stage of fraction 1, links alone
};
[[nodiscard]] std::vector<PatternCost> pattern_costs(const cluster::Cluster& cluster,
                                                     const CollectivePlan& plan);

/// Bytes each link carries per byte of the collective's buffer (payload, before a protocol's
/// wire factor), over the whole plan: per link, the sum over the stages of their fraction x
/// each crossing group's size factor x the link's count. `links`: the cluster's link count.
[[nodiscard]] std::vector<double> link_bytes_per_byte(const CollectivePlan& plan, size_t links);
/// Adds to `per_link` (the cluster's link count long) what the plan of a buffer of `bytes` puts on
/// each link: bytes x link_bytes_per_byte, without a vector of its own.
void add_link_bytes(const CollectivePlan& plan, double bytes, std::vector<double>& per_link);

/// Chunks each tree of the tree all-reduce pipelines its share of the data in: each way (reduce
/// up, broadcast down) takes depth + kTreeChunks - 1 steps of S / (T kTreeChunks) per edge, T
/// trees in all; only the first depth steps (the pipeline filling) pay a hop's latency.
inline constexpr int kTreeChunks = 32;

/// The all-reduce of training.allreduce as it runs for each size: the plans of the algorithms it
/// may use (ring and tree for `auto`), and for a size the plan and terms chosen. With algorithm
/// auto or protocol auto the choice is the one with the least closed-form time
/// (collective_cost), NCCL's tuner's rule on the same constants.
class AllReducePlanner {
 public:
  AllReducePlanner(const cluster::Cluster& cluster, AllReduceAlgorithm algorithm,
                   CollectiveProtocol protocol);

  struct Choice {
    int plan = 0;  ///< index into plans()
    AllReduceAlgorithm algorithm = AllReduceAlgorithm::Ring;
    CollectiveProtocol protocol = CollectiveProtocol::Links;  ///< never Auto
    CollectiveTerms terms;
  };
  [[nodiscard]] Choice choose(double bytes) const;
  [[nodiscard]] const std::vector<CollectivePlan>& plans() const { return plans_; }
  [[nodiscard]] const CollectivePlan& plan(const Choice& choice) const { return plans_[choice.plan]; }

 private:
  const cluster::Cluster& cluster_;
  CollectiveProtocol protocol_;
  std::vector<CollectiveProtocol> candidates_;  ///< the protocols tried (never Auto)
  std::vector<AllReduceAlgorithm> algorithms_;  ///< of plans_, in order
  std::vector<CollectivePlan> plans_;
  /// Under an NCCL protocol a candidate's closed form does not depend on the size: computed once
  /// per (plan, candidate protocol), plans_.size() x candidates_.size(); empty under `links`.
  std::vector<CollectiveCost> nccl_costs_;
};

[[nodiscard]] const char* to_string(CollectiveProtocol protocol);

/// Which algorithms need a power-of-two number of workers.
[[nodiscard]] bool needs_power_of_two(AllReduceAlgorithm algorithm);

}  // namespace stepcast::scheme
