// The exact fast path of sharded data parallelism (step_paths.hpp). Why it is exact:
// - Without straggler noise every worker runs the same op graph, and every collective spans all
//   workers (rings over every shard group at once, or across them): it starts when the last
//   worker issued it and ends for all at the same instant. So every worker's events happen at
//   the same times as worker 0's, and worker 0 alone, issuing for all, gives every worker's
//   times. (A step starts after every event of its instant, worker_runtime.cpp, so ties do not
//   split the workers.)
// - The collectives' flows are flow groups (collective_plan.hpp): a group's members share its
//   rate, and a link constrains a group through its capacity and its member count. Two links
//   with the same capacity crossed by the same groups with the same member counts impose the
//   same constraint on every allocation (max-min or no sharing), so one of them can stand for
//   all: the network is reduced to one link per such class, each path to one use per class.
//   Every link of a class carries the bytes of its class's link.
// - With straggler noise (workload.compute_cv) each worker's ops take their own times, so every
//   worker runs its ops; but a collective still starts once every worker issued it and runs
//   once for all of them, so the reduced network still gives its stages' times exactly, and
//   only the network is smaller than the full engine's (tests compare).
// Cost: one pass over the plans' links to classify them, then one worker's ops and the
// collectives' stages on a network of a few links (a ring's links fall into a handful of classes:
// GPU links out and in, NICs out and in, switch ports).
#include <cstdint>
#include <optional>
#include <vector>

#include "scheme/collective_timing.hpp"
#include "scheme/fsdp_exchange.hpp"
#include "scheme/step_paths.hpp"

namespace stepcast::scheme {

std::optional<SimulationResult> simulate_fsdp_fast(const workload::Workload& w, const cluster::ClusterSpec& spec,
                                                   const SchemeConfig& scheme, const SimulationOptions& options) {
  // With stragglers every worker's ops run (StepContext::workers).
  if (options.compute_cv > 0) require_simulable_workers(spec.workers, scheme, options);
  const cluster::Cluster cluster = cluster::build_cluster(spec);
  FsdpPlans plans = make_fsdp_plans(cluster, scheme.fsdp);
  std::vector<uint32_t> source;
  const std::vector<double> capacities =
      reduce_to_link_classes(cluster, {&plans.gather, &plans.reduce, &plans.replicate}, source);
  const std::unique_ptr<net::NetworkModel> network = make_network(capacities, options.network);
  return run_steps(w, cluster, scheme, options, *network, nullptr,
                   [&](const std::vector<double>& reduced_bytes) {
                     std::vector<double> bytes(source.size(), 0.0);
                     for (size_t l = 0; l < source.size(); ++l) {
                       if (source[l] != kNoClass) bytes[l] = reduced_bytes[source[l]];
                     }
                     return bytes;
                   },
                   &plans);
}

}  // namespace stepcast::scheme
