// Private to scheme/: the collective plans a composed run's exchanges run, built once before the
// run so that the fast path can reduce the network under all of them. Each parallel dimension's
// communicating groups: a tensor group (t ranks), a context group (c), a gradient group (the d x c
// ranks holding the same parameters), an expert group (e), an expert-data group (t c d / (e ETP)
// ranks holding the same expert shards) and an expert-tensor group (ETP ranks sharing each
// expert's weights); and the point-to-point transfers between pipeline stages.
// The full engine plans each group alone; the fast path simulates one rank per stage and plans,
// for that rank, every group of its stage at once (their transfers as one flow group per step,
// as FSDP's plans over all shard groups are), which is exact when the groups are alike
// (symmetric(), checked on the links they cross).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "scheme/exchange.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"

namespace stepcast::scheme {

/// The plans of one group of a dimension (or on the fast path, of every group of a stage).
struct GroupPlans {
  CollectivePlan all_reduce, all_gather, reduce_scatter, ring_shift;
  /// An expert group's all-to-alls (CommKind::ToExperts, FromExperts), one per load variant.
  std::vector<CollectivePlan> to_experts, from_experts;
  /// A gradient group of every worker all-reduces as training.allreduce says (algorithm,
  /// protocol, auto); its plans are planner_plans (the planner's, remapped with the network).
  std::unique_ptr<AllReducePlanner> planner;
  std::vector<CollectivePlan> planner_plans;
  int members = 0;  ///< simulated workers in the group
};

struct ComposedPlans {
  /// Per dimension (ParallelDimension index; Pipeline unused): each simulated worker's group.
  std::array<std::vector<int>, kParallelDimensions> group_of_worker;
  std::array<std::vector<GroupPlans>, kParallelDimensions> groups;
  /// Pipeline: the transfer from one simulated worker to another (the two stages' ranks at once
  /// on the fast path).
  std::map<std::pair<int, int>, CollectivePlan> transfers;
  /// Every plan, for the fast path's link classes.
  [[nodiscard]] std::vector<CollectivePlan*> all();
};

/// The plans of `run`'s simulated workers (all ranks, or one per stage when `representatives`).
/// `expert_loads` (expert_load_variants) shape the expert groups' all-to-alls, one plan each.
[[nodiscard]] ComposedPlans make_composed_plans(const cluster::Cluster& cluster, const SchemeConfig& scheme,
                                                const ComposedRun& run, bool representatives,
                                                const std::vector<double>& expert_loads = {1.0});

/// Whether, on the fast path, every group of a dimension in a stage (and every pair of ranks a
/// pipeline message joins) crosses the same classes of links as the others, so that one rank per
/// stage stands for all exactly. `link_class` maps each cluster link to its class (kNone when no
/// plan uses it).
[[nodiscard]] bool symmetric(const cluster::Cluster& cluster, const SchemeConfig& scheme, const RankLayout& layout,
                             const std::vector<uint32_t>& link_class);

/// The network reduced to one link per class of interchangeable links under `plans` (links of
/// equal capacity crossed by the same flow groups with the same member counts), the plans'
/// paths rewritten onto it. Returns the classes' capacities; `source` gets each cluster link's
/// class (kNoClass when no plan crosses it).
inline constexpr uint32_t kNoClass = ~uint32_t{0};
[[nodiscard]] std::vector<double> reduce_to_link_classes(const cluster::Cluster& cluster,
                                                         const std::vector<CollectivePlan*>& plans,
                                                         std::vector<uint32_t>& source);

}  // namespace stepcast::scheme
