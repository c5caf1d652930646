// The composed step: stage programs (stage_programs.hpp) on the worker runtime, one exchange per
// parallel dimension (group_exchange.hpp, pipeline_exchange.hpp), on the full engine or the fast
// path. Why the fast path is exact where it runs:
// - Without straggler noise the ranks of one pipeline stage run the same program, and every group
//   of a dimension in a stage starts each collective at the same instant (its members are alike),
//   so each rank's events happen at the times of its class's simulated rank, which stands for
//   all of them. A class is a stage's ranks, or with routing skew (the busiest member of each
//   expert group receives and sends more, so its links carry more) a stage's busiest members and
//   the rest (choose_representatives()); where that is not enough, the classes split by the link
//   classes of each rank's own links (refine_representatives(): a busiest member's node-mates).
// - Its collectives run over every group of its stage holding the same classes at once (their
//   transfers as one flow group per step), on the network reduced to link classes (links of one
//   capacity crossed by the same flow groups with the same member counts). Where each of those
//   groups crosses the same classes as the others (symmetric()), the max-min allocation that
//   gives every group's flow the same rate is the allocation, so the reduced network's rates are
//   the full network's.
// Elsewhere (stragglers, a trace, groups laid across nodes unevenly) every rank runs; where the
// groups cross links unevenly and every rank would be too many ops (options.full_engine_ops),
// the same shortcut runs as an approximation: each stage's groups at the pace of its slowest.
#include <algorithm>
#include <numeric>

#include "scheme/collective_timing.hpp"
#include "scheme/composed_plans.hpp"
#include "scheme/stage_programs.hpp"
#include "scheme/step_paths.hpp"
#include "stepcast/detail/scheme/costs.hpp"

namespace stepcast::scheme {
namespace {
// How often the fast path splits its classes of ranks before it gives up, and how many classes a
// stage may have: each class is one more simulated rank.
constexpr int kRefinements = 1;
constexpr int kClassesPerStage = 8;
}  // namespace

SimulationResult simulate_composed(const workload::Workload& w, const cluster::ClusterSpec& spec,
                                   const SchemeConfig& scheme, const SimulationOptions& options) {
  const cluster::Cluster cluster = cluster::build_cluster(spec);
  const RankLayout layout(scheme.parallel, spec.workers,
                          hybrid_shard_ranks(scheme, spec.workers, spec.workers_per_node));
  ComposedRun run;
  run.layout = &layout;
  // Op names are for the trace alone: most of a deep pipeline's build, and a heap string per op.
  run.programs = build_stage_programs(w, spec, scheme, layout, /*names=*/options.record_trace);
  const int p = layout.size(ParallelDimension::Pipeline);
  const std::vector<double> expert_loads = expert_load_variants(w, scheme.parallel);
  if (options.fast_paths && !options.record_trace && !(options.compute_cv > 0)) {
    // Every rank's ops in a step: what the full engine would simulate.
    double ops = 0;
    for (const StageProgram& program : run.programs) {
      ops += static_cast<double>(program.ops.ops.size()) * spec.workers / p;
    }
    // With routing skew the busiest members of the expert groups load their links more than the
    // others: first try them as a class of their own beside the rest of their stage.
    const bool skewed = layout.size(ParallelDimension::Expert) > 1 &&
                        std::any_of(expert_loads.begin(), expert_loads.end(), [](double g) { return g > 1; });
    for (const bool split : {true, false}) {
      if (split && !skewed) continue;
      choose_representatives(run, split);
      ComposedPlans plans;
      std::vector<uint32_t> source;
      std::vector<double> capacities;
      // One rank per stage's plans, which the approximation takes if no split makes groups alike.
      ComposedPlans per_stage_plans;
      std::vector<uint32_t> per_stage_source;
      std::vector<double> per_stage_capacities;
      bool exact = false;
      // Where the groups are not alike, split the classes by the links each rank's own traffic
      // loads (a node-mate of a busiest member against a rank in a node without one) and retry.
      for (int round = 0;; ++round) {
        plans = make_composed_plans(cluster, scheme, run, true, expert_loads);
        capacities = reduce_to_link_classes(cluster, plans.all(), source);
        exact = symmetric(cluster, run, source);
        if (exact || round == kRefinements) break;
        if (!split && round == 0) {
          // Kept before the classes split (refine_representatives reads `source` first).
          per_stage_source = source;
          per_stage_capacities = capacities;
          per_stage_plans = std::move(plans);
          if (!refine_representatives(run, cluster, per_stage_source, kClassesPerStage * p)) break;
          continue;
        }
        if (!refine_representatives(run, cluster, source, kClassesPerStage * p)) break;
      }
      if (split && !exact) continue;
      if (!exact && ops <= options.full_engine_ops) break;
      if (!exact && !per_stage_source.empty()) {
        // The approximation takes one rank per stage: the first round's plans.
        choose_representatives(run, false);
        plans = std::move(per_stage_plans);
        source = std::move(per_stage_source);
        capacities = std::move(per_stage_capacities);
      }
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
