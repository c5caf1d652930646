// Private to scheme/: the two ways simulate_steps runs a step. The full engine simulates every
// event of every worker (step_simulation.cpp); a fast path computes the same result exactly
// where workers are alike up to their straggler factors (allreduce_fast_path.cpp). Both fill the
// window's loads the same way.
#pragma once

#include <optional>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/scheme/step_simulation.hpp"

namespace stepcast::scheme {

[[nodiscard]] SimulationResult simulate_steps_full(const workload::Workload& workload,
                                                   const cluster::ClusterSpec& cluster, const SchemeConfig& scheme,
                                                   const SimulationOptions& options);

/// Synchronous bucketed all-reduce, exact: each worker's step is its op graph scaled by its
/// straggler factor, joined to collectives whose times do not depend on which worker waits.
/// nullopt where that does not hold (an op graph that idles inside a step by itself).
[[nodiscard]] std::optional<SimulationResult> simulate_allreduce_fast(const workload::Workload& workload,
                                                                      const cluster::ClusterSpec& cluster,
                                                                      const SchemeConfig& scheme,
                                                                      const SimulationOptions& options);

/// Fills r.loads (worker compute, NICs, servers' NICs, intra-node links), r.links, r.bytes_sent
/// and r.bytes_received from r.workers, r.window and the bytes each link carried in the window.
void add_window_loads(SimulationResult& r, const cluster::Cluster& cluster, const SchemeConfig& scheme,
                      const std::vector<double>& window_link_bytes);

}  // namespace stepcast::scheme
