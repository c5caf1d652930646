// The composed step: stage programs (stage_programs.hpp) on the worker runtime, one exchange per
// parallel dimension (group_exchange.hpp, pipeline_exchange.hpp), on the full engine or the fast
// path. Why the fast path is exact where it runs:
// - Without straggler noise the ranks of one pipeline stage run the same program, and every group
//   of a dimension in a stage starts each collective at the same instant (its members are alike),
//   so each rank's events happen at the times of its stage's rank at tensor, context and data
//   coordinate 0, which stands for all of them.
// - Its collectives run over every group of its stage at once (their transfers as one flow group
//   per step), on the network reduced to link classes (links of one capacity crossed by the same
//   flow groups with the same member counts). Where each group of a stage crosses the same
//   classes as the others (symmetric()), the max-min allocation that gives every group's flow the
//   same rate is the allocation, so the reduced network's rates are the full network's.
// Elsewhere (stragglers, a trace, groups laid across nodes unevenly) every rank runs; where the
// groups cross links unevenly and every rank would be too many ops (options.full_engine_ops),
// the same shortcut runs as an approximation: each stage's groups at the pace of its slowest.
#include <numeric>

#include "scheme/collective_timing.hpp"
#include "scheme/composed_plans.hpp"
#include "scheme/stage_programs.hpp"
#include "scheme/step_paths.hpp"
#include "stepcast/detail/scheme/costs.hpp"

namespace stepcast::scheme {

SimulationResult simulate_composed(const workload::Workload& w, const cluster::ClusterSpec& spec,
                                   const SchemeConfig& scheme, const SimulationOptions& options) {
  const cluster::Cluster cluster = cluster::build_cluster(spec);
  const RankLayout layout(scheme.parallel, spec.workers,
                          hybrid_shard_ranks(scheme, spec.workers, spec.workers_per_node));
  ComposedRun run;
  run.layout = &layout;
  run.programs = build_stage_programs(w, spec, scheme, layout);
  const int p = layout.size(ParallelDimension::Pipeline);
  const std::vector<double> expert_loads = expert_load_variants(w, scheme.parallel);
  if (options.fast_paths && !options.record_trace && !(options.compute_cv > 0)) {
    run.one_per_stage = true;
    run.worker_of_rank.assign(static_cast<size_t>(spec.workers), kNone);
    for (int s = 0; s < p; ++s) {
      RankCoordinates at;
      at.at[static_cast<size_t>(ParallelDimension::Pipeline)] = s;
      run.rank_of_worker.push_back(layout.rank(at));
      run.worker_of_rank[static_cast<size_t>(layout.rank(at))] = s;
    }
    ComposedPlans plans = make_composed_plans(cluster, scheme, run, true, expert_loads);
    std::vector<uint32_t> source;
    const std::vector<double> capacities = reduce_to_link_classes(cluster, plans.all(), source);
    const bool exact = symmetric(cluster, scheme, layout, source);
    // Every rank's ops in a step: what the full engine would simulate.
    double ops = 0;
    for (const StageProgram& program : run.programs) {
      ops += static_cast<double>(program.ops.ops.size()) * spec.workers / p;
    }
    if (exact || ops > options.full_engine_ops) {
      const std::unique_ptr<net::NetworkModel> network = make_network(capacities, options.network);
      SimulationResult r = run_steps(w, cluster, scheme, options, *network, nullptr,
                                     [&](const std::vector<double>& reduced_bytes) {
                                       std::vector<double> bytes(source.size(), 0.0);
                                       for (size_t l = 0; l < source.size(); ++l) {
                                         if (source[l] != kNoClass) bytes[l] = reduced_bytes[source[l]];
                                       }
                                       return bytes;
                                     },
                                     nullptr, &run, &plans);
      if (!exact) r.engine = SimulationEngine::Approximate;
      return r;
    }
  }
  require_simulable_workers(spec.workers, scheme, options);
  run.one_per_stage = false;
  run.rank_of_worker.resize(static_cast<size_t>(spec.workers));
  std::iota(run.rank_of_worker.begin(), run.rank_of_worker.end(), 0);
  run.worker_of_rank = run.rank_of_worker;
  const ComposedPlans plans = make_composed_plans(cluster, scheme, run, false, expert_loads);
  const std::unique_ptr<net::NetworkModel> network = make_network(cluster, options.network);
  return run_steps(w, cluster, scheme, options, *network, nullptr, {}, nullptr, &run, &plans);
}

}  // namespace stepcast::scheme
