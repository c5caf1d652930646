#include "scheme/composed_plans.hpp"

#include <algorithm>
#include <tuple>

#include "stepcast/error.hpp"

namespace stepcast::scheme {
namespace {

/// The groups of dimension `d` in stage `stage` (Data: the data groups, the gradient groups of d x
/// c ranks or hybrid sharding's shard groups).
std::vector<std::vector<int>> stage_groups(const RankLayout& layout, ParallelDimension d, int stage) {
  return d == ParallelDimension::Data ? layout.data_groups(stage) : layout.groups(d, stage);
}

/// The ranks of a dimension's group: the data group's for Data; 1 (nothing to plan) for the
/// expert-tensor groups without expert parallelism, where the tensor groups do their work.
int group_degree(const RankLayout& layout, ParallelDimension d) {
  switch (d) {
    case ParallelDimension::Data:
      return layout.data_group_size();
    case ParallelDimension::ExpertTensor:
      return layout.size(ParallelDimension::Expert) > 1 ? layout.size(d) : 1;
    case ParallelDimension::Tensor:
    case ParallelDimension::Context:
    case ParallelDimension::Pipeline:
    case ParallelDimension::Expert:
    case ParallelDimension::ExpertData:
    case ParallelDimension::DataReplicate:
      break;
  }
  return layout.size(d);
}

/// The rank of stage `stage` at the same tensor, context and data coordinates as `rank`.
int peer_rank(const RankLayout& layout, int rank, int stage) {
  RankCoordinates c = layout.coordinates(rank);
  c.at[static_cast<size_t>(ParallelDimension::Pipeline)] = stage;
  return layout.rank(c);
}

/// Whether a dimension communicates at all under this scheme, and with which collectives.
struct Needs {
  bool all_reduce = false, all_gather = false, reduce_scatter = false, ring_shift = false, all_to_all = false;
};
Needs needs_of(ParallelDimension d, const SchemeConfig& scheme) {
  Needs n;
  switch (d) {
    case ParallelDimension::Tensor:
      // Every block's all-reduces, or with sequence parallelism its all-gathers and reduce-scatters.
      n.all_reduce = !scheme.parallel.sequence;
      n.all_gather = n.reduce_scatter = scheme.parallel.sequence;
      break;
    case ParallelDimension::Context:
      n.ring_shift = true;
      break;
    case ParallelDimension::Data:
    case ParallelDimension::ExpertData:
      n.all_reduce = scheme.scheme != Scheme::Fsdp;
      n.all_gather = n.reduce_scatter = scheme.scheme == Scheme::Fsdp;
      break;
    case ParallelDimension::Expert:
      n.all_to_all = true;
      break;
    case ParallelDimension::ExpertTensor:
      // The tokens an expert-tensor group received gathered, the experts' outputs reduce-scattered.
      n.all_gather = n.reduce_scatter = true;
      break;
    case ParallelDimension::DataReplicate:
      // Hybrid sharding: each shard all-reduced over the replicas.
      n.all_reduce = true;
      break;
    case ParallelDimension::Pipeline:
      break;
  }
  return n;
}

GroupPlans plan_groups(const cluster::Cluster& cluster, const SchemeConfig& scheme, ParallelDimension d,
                       const std::vector<std::vector<int>>& groups, int members,
                       const std::vector<double>& expert_loads) {
  GroupPlans g;
  g.members = members;
  const Needs n = needs_of(d, scheme);
  const bool everyone = groups.size() == 1 && static_cast<int>(groups.front().size()) == cluster.spec.workers;
  if (n.all_reduce) {
    if (d == ParallelDimension::Data && everyone) {
      g.planner = std::make_unique<AllReducePlanner>(cluster, scheme.allreduce.algorithm, scheme.allreduce.protocol);
      g.planner_plans = g.planner->plans();
    } else {
      g.all_reduce = plan_group_ring(cluster, CollectiveOp::AllReduce, groups);
    }
  }
  if (n.all_gather) g.all_gather = plan_group_ring(cluster, CollectiveOp::AllGather, groups);
  if (n.reduce_scatter) g.reduce_scatter = plan_group_ring(cluster, CollectiveOp::ReduceScatter, groups);
  if (n.ring_shift) g.ring_shift = plan_group_shift(cluster, groups);
  if (n.all_to_all) {
    for (double busiest : expert_loads) {
      g.to_experts.push_back(plan_group_all_to_all(cluster, groups, busiest, true));
      g.from_experts.push_back(plan_group_all_to_all(cluster, groups, busiest, false));
    }
  }
  return g;
}

constexpr ParallelDimension kGroupDimensions[] = {
    ParallelDimension::Tensor,       ParallelDimension::Context,    ParallelDimension::Data,
    ParallelDimension::Expert,       ParallelDimension::ExpertData, ParallelDimension::ExpertTensor,
    ParallelDimension::DataReplicate};

/// The pipeline neighbours of a stage: the next and the previous (a ring over the stages, which
/// the interleaved schedule uses from the last stage to the first).
std::vector<int> neighbours(int stage, int p) {
  if (p <= 1) return {};
  std::vector<int> n{(stage + 1) % p, (stage + p - 1) % p};
  if (n[0] == n[1]) n.pop_back();
  return n;
}

}  // namespace

std::vector<CollectivePlan*> ComposedPlans::all() {
  std::vector<CollectivePlan*> out;
  for (std::vector<GroupPlans>& dimension : groups) {
    for (GroupPlans& g : dimension) {
      for (CollectivePlan* p : {&g.all_reduce, &g.all_gather, &g.reduce_scatter, &g.ring_shift}) out.push_back(p);
      for (std::vector<CollectivePlan>* variants : {&g.to_experts, &g.from_experts}) {
        for (CollectivePlan& p : *variants) out.push_back(&p);
      }
      for (CollectivePlan& p : g.planner_plans) out.push_back(&p);
    }
  }
  for (auto& [key, plan] : transfers) out.push_back(&plan);
  return out;
}

ComposedPlans make_composed_plans(const cluster::Cluster& cluster, const SchemeConfig& scheme,
                                  const ComposedRun& run, bool representatives,
                                  const std::vector<double>& expert_loads) {
  const RankLayout& layout = *run.layout;
  const int p = layout.size(ParallelDimension::Pipeline);
  const auto workers = static_cast<int>(run.rank_of_worker.size());
  ComposedPlans plans;
  for (ParallelDimension d : kGroupDimensions) {
    const auto i = static_cast<size_t>(d);
    if (group_degree(layout, d) <= 1) continue;
    plans.group_of_worker[i].assign(static_cast<size_t>(workers), kNone);
    for (int s = 0; s < p; ++s) {
      const std::vector<std::vector<int>> groups = stage_groups(layout, d, s);
      if (representatives) {
        // One rank of the stage stands for every group of it.
        plans.group_of_worker[i][static_cast<size_t>(s)] = static_cast<int>(plans.groups[i].size());
        plans.groups[i].push_back(plan_groups(cluster, scheme, d, groups, 1, expert_loads));
        continue;
      }
      for (const std::vector<int>& group : groups) {
        for (int rank : group) {
          plans.group_of_worker[i][static_cast<size_t>(run.worker_of_rank[static_cast<size_t>(rank)])] =
              static_cast<int>(plans.groups[i].size());
        }
        plans.groups[i].push_back(
            plan_groups(cluster, scheme, d, {group}, static_cast<int>(group.size()), expert_loads));
      }
    }
  }
  for (int w = 0; w < workers; ++w) {
    const int rank = run.rank_of_worker[static_cast<size_t>(w)];
    const int stage = layout.coordinates(rank)[ParallelDimension::Pipeline];
    for (int next : neighbours(stage, p)) {
      const int peer = run.worker_of_rank[static_cast<size_t>(peer_rank(layout, rank, next))];
      std::vector<std::pair<int, int>> pairs;
      if (representatives) {
        for (const std::vector<int>& g : layout.groups(ParallelDimension::Pipeline)) {
          pairs.emplace_back(g[static_cast<size_t>(stage)], g[static_cast<size_t>(next)]);
        }
      } else {
        pairs.emplace_back(rank, peer_rank(layout, rank, next));
      }
      plans.transfers.emplace(std::pair{w, peer}, plan_transfers(cluster, pairs));
    }
  }
  return plans;
}

std::vector<double> reduce_to_link_classes(const cluster::Cluster& cluster, const std::vector<CollectivePlan*>& plans,
                                           std::vector<uint32_t>& source) {
  // (plan, pattern, group, members on the link): two links of one capacity crossed by the same
  // groups with the same member counts constrain every allocation alike (fsdp_fast_path.cpp).
  using Use = std::tuple<int, int, int, uint32_t>;
  std::vector<std::vector<Use>> uses(cluster.links.size());
  for (int k = 0; k < static_cast<int>(plans.size()); ++k) {
    const CollectivePlan& plan = *plans[static_cast<size_t>(k)];
    for (int p = 0; p < static_cast<int>(plan.patterns.size()); ++p) {
      const Pattern& pattern = plan.patterns[static_cast<size_t>(p)];
      for (int g = 0; g < static_cast<int>(pattern.groups.size()); ++g) {
        for (const net::LinkUse& u : pattern.groups[static_cast<size_t>(g)].path) {
          uses[u.link].emplace_back(k, p, g, u.count);
        }
      }
    }
  }
  std::map<std::pair<double, std::vector<Use>>, uint32_t> class_of;
  source.assign(cluster.links.size(), kNoClass);
  std::vector<double> capacities;
  for (size_t l = 0; l < cluster.links.size(); ++l) {
    if (uses[l].empty()) continue;
    auto [it, added] = class_of.try_emplace({cluster.links[l].bw, std::move(uses[l])},
                                            static_cast<uint32_t>(capacities.size()));
    if (added) capacities.push_back(cluster.links[l].bw);
    source[l] = it->second;
  }
  for (CollectivePlan* plan : plans) {
    for (Pattern& pattern : plan->patterns) {
      for (FlowGroup& group : pattern.groups) {
        std::map<uint32_t, uint32_t> reduced;  // class -> members (equal for every link of a class)
        for (const net::LinkUse& u : group.path) reduced[source[u.link]] = u.count;
        group.path.clear();
        for (auto [link, count] : reduced) group.path.push_back({link, count});
      }
    }
  }
  return capacities;
}

bool symmetric(const cluster::Cluster& cluster, const SchemeConfig& scheme, const RankLayout& layout,
               const std::vector<uint32_t>& link_class) {
  // A transfer's signature: the classes of the links it crosses.
  auto signature = [&](const std::vector<std::pair<int, int>>& transfers) {
    std::vector<uint32_t> classes;
    for (const auto& [from, to] : transfers) {
      for (uint32_t l : cluster.path(cluster.worker_endpoint(from), cluster.worker_endpoint(to)).links) {
        classes.push_back(link_class[l]);
      }
    }
    std::sort(classes.begin(), classes.end());
    return classes;
  };
  auto ring = [](const std::vector<int>& g) {
    std::vector<std::pair<int, int>> t;
    for (size_t i = 0; i < g.size(); ++i) t.emplace_back(g[i], g[(i + 1) % g.size()]);
    return t;
  };
  // An all-to-all's transfers: every ordered pair, those into and out of member 0 (the busiest)
  // apart from the rest.
  auto all_pairs = [&](const std::vector<int>& g) {
    std::vector<std::pair<int, int>> busiest, rest;
    for (size_t a = 0; a < g.size(); ++a) {
      for (size_t b = 0; b < g.size(); ++b) {
        if (a != b) (a == 0 || b == 0 ? busiest : rest).emplace_back(g[a], g[b]);
      }
    }
    std::vector<uint32_t> sig = signature(busiest);
    sig.push_back(kNoClass);
    const std::vector<uint32_t> others = signature(rest);
    sig.insert(sig.end(), others.begin(), others.end());
    return sig;
  };
  const int p = layout.size(ParallelDimension::Pipeline);
  for (ParallelDimension d : kGroupDimensions) {
    if (group_degree(layout, d) <= 1) continue;
    auto sign = [&](const std::vector<int>& g) {
      return d == ParallelDimension::Expert ? all_pairs(g) : signature(ring(g));
    };
    for (int s = 0; s < p; ++s) {
      const std::vector<std::vector<int>> groups = stage_groups(layout, d, s);
      if (groups.size() < 2 || groups.front().size() < 2) continue;
      const std::vector<uint32_t> first = sign(groups.front());
      for (size_t g = 1; g < groups.size(); ++g) {
        if (sign(groups[g]) != first) return false;
      }
    }
  }
  (void)scheme;
  for (int s = 0; s < p; ++s) {
    for (int next : neighbours(s, p)) {
      std::vector<uint32_t> first;
      bool have = false;
      for (const std::vector<int>& g : layout.groups(ParallelDimension::Pipeline)) {
        std::vector<uint32_t> sig = signature({{g[static_cast<size_t>(s)], g[static_cast<size_t>(next)]}});
        if (!have) {
          first = std::move(sig);
          have = true;
        } else if (sig != first) {
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace stepcast::scheme
