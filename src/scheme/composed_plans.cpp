#include "scheme/composed_plans.hpp"

#include <algorithm>
#include <map>
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

/// A dimension's groups of one stage that the fast path plans together: those whose ranks the
/// same simulated workers stand for (`workers`, sorted), and which of those workers' own ranks
/// they hold (`simulated`: the members of their plan).
struct Partition {
  std::vector<int> workers;
  std::vector<std::vector<int>> groups;
  std::vector<int> simulated;
};
std::vector<Partition> partitions(const ComposedRun& run, std::vector<std::vector<int>> groups) {
  std::map<std::vector<int>, size_t> index;
  std::vector<Partition> out;
  std::vector<int> key;
  for (std::vector<int>& group : groups) {
    key.clear();
    for (int rank : group) key.push_back(run.worker_of_rank[static_cast<size_t>(rank)]);
    std::sort(key.begin(), key.end());
    key.erase(std::unique(key.begin(), key.end()), key.end());
    auto [it, added] = index.try_emplace(key, out.size());
    if (added) out.push_back({.workers = key, .groups = {}, .simulated = {}});
    Partition& part = out[it->second];
    for (int rank : group) {
      const int w = run.worker_of_rank[static_cast<size_t>(rank)];
      if (run.rank_of_worker[static_cast<size_t>(w)] == rank) part.simulated.push_back(w);
    }
    part.groups.push_back(std::move(group));
  }
  return out;
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

namespace {

/// Sets `run`'s simulated workers from each rank's class (`class_of`, 0 to classes - 1, never
/// spanning stages): the lowest rank of a class stands for it, the classes ordered by their
/// stage, then by that rank (so that one class per stage gives worker s to stage s).
void represent(ComposedRun& run, const std::vector<int>& class_of, int classes) {
  const RankLayout& layout = *run.layout;
  std::vector<int> lowest(static_cast<size_t>(classes), kNone);
  for (int rank = 0; rank < layout.workers(); ++rank) {
    int& low = lowest[static_cast<size_t>(class_of[static_cast<size_t>(rank)])];
    if (low == kNone) low = rank;  // ranks ascending: the first seen is the lowest
  }
  std::vector<std::pair<int, int>> order;  // (stage, lowest rank)
  order.reserve(lowest.size());
  for (int rank : lowest) order.emplace_back(layout.coordinates(rank)[ParallelDimension::Pipeline], rank);
  std::sort(order.begin(), order.end());
  std::vector<int> worker_of_class(static_cast<size_t>(classes));
  run.one_per_stage = true;
  run.rank_of_worker.clear();
  for (const auto& [stage, rank] : order) {
    worker_of_class[static_cast<size_t>(class_of[static_cast<size_t>(rank)])] =
        static_cast<int>(run.rank_of_worker.size());
    run.rank_of_worker.push_back(rank);
  }
  run.worker_of_rank.resize(class_of.size());
  for (size_t rank = 0; rank < class_of.size(); ++rank) {
    run.worker_of_rank[rank] = worker_of_class[static_cast<size_t>(class_of[rank])];
  }
}

}  // namespace

void choose_representatives(ComposedRun& run, bool split_busiest) {
  const RankLayout& layout = *run.layout;
  const int p = layout.size(ParallelDimension::Pipeline);
  std::vector<int> class_of(static_cast<size_t>(layout.workers()));
  for (const std::vector<int>& line : layout.groups(ParallelDimension::Pipeline)) {
    for (int s = 0; s < p; ++s) class_of[static_cast<size_t>(line[static_cast<size_t>(s)])] = 2 * s;
  }
  if (split_busiest && layout.size(ParallelDimension::Expert) > 1) {
    for (int s = 0; s < p; ++s) {
      for (const std::vector<int>& g : layout.groups(ParallelDimension::Expert, s)) {
        class_of[static_cast<size_t>(g[0])] = 2 * s + 1;
      }
    }
  }
  // Dense class numbers: stage s's first class is 2 s, its busiest members' 2 s + 1 when split.
  std::vector<int> dense(static_cast<size_t>(2 * p), kNone);
  int classes = 0;
  for (int& c : class_of) {
    int& d = dense[static_cast<size_t>(c)];
    if (d == kNone) d = classes++;
    c = d;
  }
  represent(run, class_of, classes);
}

bool refine_representatives(ComposedRun& run, const cluster::Cluster& cluster,
                            const std::vector<uint32_t>& link_class, int most) {
  // A rank's own links: its way out of and into the node (NIC, and PCIe where it crosses one)
  // and, with node-mates, its intra-node links up and down.
  const int workers = run.layout->workers();
  std::map<std::vector<uint32_t>, int> class_of_key;
  std::vector<int> class_of(static_cast<size_t>(workers));
  std::vector<uint32_t> key;
  for (int rank = 0; rank < workers; ++rank) {
    key.assign(1, static_cast<uint32_t>(run.worker_of_rank[static_cast<size_t>(rank)]));
    const cluster::Endpoint at = cluster.worker_endpoint(rank);
    const int node_first = cluster.first_worker[static_cast<size_t>(at.node)];
    const int node_end = cluster.first_worker[static_cast<size_t>(at.node) + 1];
    if (node_end - node_first > 1) {
      const cluster::Endpoint mate =
          cluster.worker_endpoint(rank == node_first ? node_first + 1 : node_first);
      key.push_back(link_class[cluster.path(at, mate).links.front()]);
      key.push_back(link_class[cluster.path(mate, at).links.back()]);
    }
    if (cluster.num_nodes > 1) {
      const cluster::Endpoint away = cluster.worker_endpoint(node_end < workers ? node_end : 0);
      for (uint32_t l : cluster.path(at, away).links) {
        key.push_back(link_class[l]);
        if (l == cluster.nic_up[static_cast<size_t>(cluster.nic_of(at))]) break;
      }
      const std::vector<uint32_t> in = cluster.path(away, at).links;
      for (auto l = in.rbegin(); l != in.rend(); ++l) {
        key.push_back(link_class[*l]);
        if (*l == cluster.nic_down[static_cast<size_t>(cluster.nic_of(at))]) break;
      }
    }
    class_of[static_cast<size_t>(rank)] =
        class_of_key.try_emplace(key, static_cast<int>(class_of_key.size())).first->second;
  }
  const auto classes = static_cast<int>(class_of_key.size());
  if (classes == static_cast<int>(run.rank_of_worker.size()) || classes > most) return false;
  represent(run, class_of, classes);
  return true;
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
        // The simulated workers of a partition stand for every group of it.
        for (Partition& part : partitions(run, groups)) {
          if (part.simulated.empty()) continue;  // not exact: symmetric() says so
          for (int w : part.simulated) {
            plans.group_of_worker[i][static_cast<size_t>(w)] = static_cast<int>(plans.groups[i].size());
          }
          plans.groups[i].push_back(plan_groups(cluster, scheme, d, part.groups,
                                                static_cast<int>(part.simulated.size()), expert_loads));
        }
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
        // Every message of the ranks `w` stands for.
        for (const std::vector<int>& g : layout.groups(ParallelDimension::Pipeline)) {
          const int from = g[static_cast<size_t>(stage)];
          if (run.worker_of_rank[static_cast<size_t>(from)] == w)
            pairs.emplace_back(from, g[static_cast<size_t>(next)]);
        }
      } else {
        pairs.emplace_back(rank, peer_rank(layout, rank, next));
      }
      plans.transfers.emplace(std::pair{w, peer}, plan_transfers(cluster, pairs));
    }
  }
  return plans;
}

bool symmetric(const cluster::Cluster& cluster, const ComposedRun& run,
               const std::vector<uint32_t>& link_class) {
  const RankLayout& layout = *run.layout;
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
      std::vector<std::vector<int>> groups = stage_groups(layout, d, s);
      if (groups.front().size() < 2) continue;
      for (const Partition& part : partitions(run, std::move(groups))) {
        // Each worker standing for the partition's ranks must be one of its plan's members.
        if (part.simulated.size() != part.workers.size()) return false;
        const std::vector<uint32_t> first = sign(part.groups.front());
        for (size_t g = 1; g < part.groups.size(); ++g) {
          if (sign(part.groups[g]) != first) return false;
        }
      }
    }
  }
  for (int s = 0; s < p; ++s) {
    for (int next : neighbours(s, p)) {
      // Per sending worker: the worker its messages go to, and the links the first one crosses.
      std::map<int, std::pair<int, std::vector<uint32_t>>> first;
      for (const std::vector<int>& g : layout.groups(ParallelDimension::Pipeline)) {
        const int from = g[static_cast<size_t>(s)], to = g[static_cast<size_t>(next)];
        std::pair<int, std::vector<uint32_t>> seen{run.worker_of_rank[static_cast<size_t>(to)],
                                                   signature({{from, to}})};
        auto [it, added] = first.try_emplace(run.worker_of_rank[static_cast<size_t>(from)], seen);
        if (!added && it->second != seen) return false;
      }
    }
  }
  return true;
}

}  // namespace stepcast::scheme
