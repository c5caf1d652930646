// Private to scheme/: the ways simulate_steps runs a step. The full engine simulates every event
// of every worker (step_simulation.cpp); a fast path computes the same result exactly where
// workers are alike: up to their straggler factors for all-reduce (allreduce_fast_path.cpp), or
// interchangeable parameter-server clients, one simulated for all (ps_fast_path.cpp), or
// identical sharded-data-parallel workers (fsdp_fast_path.cpp). All fill
// the window's loads the same way.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "scheme/exchange.hpp"

namespace stepcast::scheme {
struct ComposedPlans;  // composed_plans.hpp
}
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/net/network_model.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"

namespace stepcast::scheme {

/// Throws when `workers` is past limits::kMaxSimulatedWorkers: the full engine simulates every
/// worker's ops and transfers, so past it a step takes minutes and gigabytes. The message says
/// why this prediction needs the full engine (a trace, stragglers, simulation.fast_paths false,
/// or no fast path for the scheme) and what takes the fast path instead.
void require_simulable_workers(int workers, const SchemeConfig& scheme, const SimulationOptions& options);

[[nodiscard]] SimulationResult simulate_steps_full(const workload::Workload& workload,
                                                   const cluster::ClusterSpec& cluster,
                                                   const SchemeConfig& scheme,
                                                   const SimulationOptions& options);

/// Maps the bytes each link of a run's network carried to the cluster's links (the identity when
/// the network is the cluster's own: pass an empty function).
using LinkBytesToCluster = std::function<std::vector<double>(const std::vector<double>&)>;

/// The engine run behind both the full engine and the parameter-server fast path: the worker
/// runtime and the scheme's exchange on `network` (the cluster's links, or the reduced network of
/// a representative client) until every worker finished, then the window's loads.
/// With `composed` (and its `composed_plans`), the workers run their stage programs with one
/// exchange per parallel dimension (composed_step.cpp).
[[nodiscard]] SimulationResult run_steps(const workload::Workload& workload, const cluster::Cluster& cluster,
                                         const SchemeConfig& scheme, const SimulationOptions& options,
                                         net::NetworkModel& network,
                                         const RepresentativeClient* representative,
                                         const LinkBytesToCluster& to_cluster,
                                         const FsdpPlans* fsdp_plans = nullptr,
                                         const ComposedRun* composed = nullptr,
                                         const ComposedPlans* composed_plans = nullptr);

/// A composed layout (tensor, context or pipeline parallelism, micro-batches): every rank's stage
/// program on the full engine, or without stragglers and where every group of a stage crosses
/// links alike, one rank per stage on the network reduced to link classes (exact; tests compare).
[[nodiscard]] SimulationResult simulate_composed(const workload::Workload& workload,
                                                 const cluster::ClusterSpec& cluster, const SchemeConfig& scheme,
                                                 const SimulationOptions& options);

/// Sharded data parallelism, exact: every collective spans all workers, so its collectives run on
/// a network reduced to one link per class of interchangeable links; without straggler noise
/// every worker runs the same op graph and worker 0 stands for all, with it every worker's ops
/// run (fsdp_fast_path.cpp). Stragglers past limits::kMaxSimulatedWorkers throw, as on the full
/// engine.
[[nodiscard]] std::optional<SimulationResult> simulate_fsdp_fast(const workload::Workload& workload,
                                                                 const cluster::ClusterSpec& cluster,
                                                                 const SchemeConfig& scheme,
                                                                 const SimulationOptions& options);

/// Synchronous parameter server with interchangeable clients (sync, fifo order, no straggler
/// noise, no message overhead, no node-local aggregation, max-min sharing, and a fabric on which
/// every client's paths to the shards are copies of worker 0's: ps_fast_path.cpp), exact: worker 0
/// alone, its flows standing for every client's. nullopt otherwise.
[[nodiscard]] std::optional<SimulationResult> simulate_ps_fast(const workload::Workload& workload,
                                                               const cluster::ClusterSpec& cluster,
                                                               const SchemeConfig& scheme,
                                                               const SimulationOptions& options);

/// Synchronous bucketed all-reduce, exact: each worker's step is its op graph scaled by its
/// straggler factor, joined to collectives whose times do not depend on which worker waits.
/// nullopt where that does not hold (an op graph that idles inside a step by itself).
[[nodiscard]] std::optional<SimulationResult> simulate_allreduce_fast(const workload::Workload& workload,
                                                                      const cluster::ClusterSpec& cluster,
                                                                      const SchemeConfig& scheme,
                                                                      const SimulationOptions& options);

/// One worker alone with factor 1, lanes and dependencies as the worker runtime runs them.
struct AloneSchedule {
  std::vector<double> op_start;  ///< s from the step's start
  std::vector<double> op_end;
  double compute_end = 0;
  bool idles_inside = false;  ///< no lane busy for a while before the last op ended
};
[[nodiscard]] AloneSchedule schedule_alone(const workload::Workload& workload);

/// Fills r.loads (worker compute, NICs, servers' NICs, intra-node links), r.links (the
/// `links_kept` busiest, 0: all) and r.links_left_out, r.bytes_sent and r.bytes_received from
/// r.workers, r.window and the bytes each link carried in the window.
void add_window_loads(SimulationResult& r, const cluster::Cluster& cluster, const SchemeConfig& scheme,
                      const std::vector<double>& window_link_bytes, size_t links_kept);

}  // namespace stepcast::scheme
