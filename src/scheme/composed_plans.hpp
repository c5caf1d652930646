// Private to scheme/: the collective plans a composed run's exchanges run, built once before the
// run so that the fast path can reduce the network under all of them. Each parallel dimension's
// communicating groups: a tensor group (t ranks), a context group (c), a gradient group (the d x c
// ranks holding the same parameters), an expert group (e), an expert-data group (t c d / (e ETP)
// ranks holding the same expert shards) and an expert-tensor group (ETP ranks sharing each
// expert's weights); and the point-to-point transfers between pipeline stages.
// The full engine plans each group alone; the fast path simulates one rank per class (each
// stage's ranks, or with routing skew each stage's busiest expert-group members and the rest) and
// plans, for the classes a group holds, every group of the stage holding the same classes at once
// (their transfers as one flow group per step, as FSDP's plans over all shard groups are), which
// is exact when those groups are alike (symmetric(), checked on the links they cross).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "scheme/collective_timing.hpp"
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

/// Sets `run` up for the fast path: one simulated worker per class of ranks, the stage's rank at
/// tensor, context and data coordinate 0 first; with `split_busiest` (routing skew) each stage's
/// busiest members of its expert groups (member 0, whose links carry more of the all-to-alls) a
/// class apart from the others. Every rank maps to the worker of its class (worker_of_rank);
/// without the split, worker s stands for stage s.
void choose_representatives(ComposedRun& run, bool split_busiest);

/// Splits the classes of choose_representatives() (or of an earlier refinement) by the classes of
/// each rank's own links under the plans made for them (`link_class`, reduce_to_link_classes()):
/// a node-mate of a busiest member, whose links carry its traffic, apart from ranks in nodes
/// without one. False, leaving `run` as it was, when that splits no class or gives more than
/// `most` classes.
[[nodiscard]] bool refine_representatives(ComposedRun& run, const cluster::Cluster& cluster,
                                          const std::vector<uint32_t>& link_class, int most);

/// The plans of `run`'s simulated workers (all ranks, or one per class when `representatives`).
/// `expert_loads` (expert_load_variants) shape the expert groups' all-to-alls, one plan each.
[[nodiscard]] ComposedPlans make_composed_plans(const cluster::Cluster& cluster, const SchemeConfig& scheme,
                                                const ComposedRun& run, bool representatives,
                                                const std::vector<double>& expert_loads = {1.0});

/// Whether, on the fast path, the groups planned together (a dimension's groups of a stage that
/// hold the same classes of ranks) each hold one rank of each of those classes' workers, each
/// cross the same classes of links as the others, and every pipeline message of a class goes to
/// one class and crosses the same links as the class's others, so that one rank per class stands
/// for all exactly. `link_class` maps each cluster link to its class (kNone when no plan uses it).
[[nodiscard]] bool symmetric(const cluster::Cluster& cluster, const ComposedRun& run,
                             const std::vector<uint32_t>& link_class);

}  // namespace stepcast::scheme
