// The fine-grained model (DESIGN.md 3.1): a discrete-event simulation of every op of every
// worker, every parameter transfer or all-reduce step on a flow-level network, and the parameter
// servers' apply work. Owns nothing after it returns; borrows its inputs. Built from the engine
// of sim/engine.hpp, the worker runtime (src/scheme/worker_runtime.hpp) and one exchange per
// scheme (src/scheme/parameter_server_exchange.hpp, allreduce_exchange.hpp); exact fast paths
// in src/scheme/allreduce_fast_path.cpp and collective_timing.hpp.
//
// Parameter server: at the start of a step a worker requests every parameter piece from its
// shard; each (shard, worker) connection sends one piece at a time, in the order the policy
// gives (random per step, or layer order); a forward op starts once its parameters arrived; a
// backward op's gradients are pushed on the (worker, shard) connection; the shard applies each
// gradient on its own lane. Sync: a piece's next version exists once all N gradients of the step
// were applied, and a worker's pull waits for it. Async: no barrier. A step ends when the ops are
// done and every transfer of the step was delivered.
// All-reduce: gradients fill DDP buckets in production order; a bucket's collective starts when
// every worker has filled it and the previous collective ended (one NCCL stream); a ring runs as
// 2(N-1) steps of S/N bytes from each worker to the next, the N sends of a step as one flow group.
//
//   SimulationResult r = simulate_steps(workload, cluster_spec, scheme, {.measure_steps = 5});
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/enum_names.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/sim/link_load.hpp"
#include "stepcast/sim/trace.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {

enum class NetworkKind : uint8_t { MaxMin, NoContention };

/// Which engine produced a result: the event-by-event simulation of every worker and transfer
/// (full), an exact shortcut where workers or stages are alike (fast; see simulate_steps), or for
/// a parallel layout whose groups of a stage cross the links unevenly, the same shortcut as an
/// approximation where the full engine would take too long (approximate: every group of a stage
/// moves at the pace of the slowest; measured against full in tests/scheme/composed_test.cpp).
enum class SimulationEngine : uint8_t { Full, Fast, Approximate };
constexpr std::string_view name_of(SimulationEngine v) {
  switch (v) {
    case SimulationEngine::Full:
      return "full";
    case SimulationEngine::Fast:
      return "fast";
    case SimulationEngine::Approximate:
      return "approximate";
  }
  return {};
}
[[nodiscard]] const char* to_string(SimulationEngine engine);

struct SimulationOptions {
  int warmup_steps = 2;
  int measure_steps = 5;
  uint64_t seed = 1;
  bool record_trace = false;
  NetworkKind network = NetworkKind::MaxMin;
  /// Stragglers: each worker's op durations in each step are scaled by a seeded lognormal factor
  /// with mean 1 and this coefficient of variation (independent per worker and step; 0 = none).
  double compute_cv = 0;
  /// Take an exact fast path where one applies (simulation.fast_paths); false: always the full
  /// engine (the reference the fast paths are tested against).
  bool fast_paths = true;
  /// Called by the full engine every few thousand events with the fraction (0..1) of the run's
  /// work done: ops and exchange items (transfers, collectives) of every worker's steps. For a
  /// caller's progress report or cost warning; never changes the result. Fast paths do not call it.
  std::function<void(double fraction_done)> progress{};
  /// With record_trace: the workers and steps the trace keeps (the simulation is the same).
  sim::TraceSelection trace_selection{};
  /// A parallel layout the exact fast path cannot take (its groups cross links unevenly) runs on
  /// the full engine up to this many ops a step over all ranks, and approximately above
  /// (SimulationEngine::Approximate). Tests set 0 to force the approximation.
  double full_engine_ops = 4e6;
  /// The busiest links the result keeps (SimulationResult::links; 0: every link that carried
  /// bytes). Only those are named: a million GPUs have millions of links.
  std::size_t links_kept = 0;
};

/// The factor of worker `worker` in step `step` (SimulationOptions::compute_cv): lognormal with
/// mean 1 and coefficient of variation `cv`, from (seed, worker, step) only; 1 when cv is 0.
[[nodiscard]] double straggler_factor(uint64_t seed, int worker, int step, double cv);

/// Mean per measured step of one worker, seconds; compute + communication + wait = cycle.
struct WorkerTimes {
  double cycle = 0;          ///< time between consecutive step ends
  double compute = 0;        ///< at least one lane busy
  double communication = 0;  ///< idle, waiting for a transfer in progress
  double wait = 0;           ///< idle, waiting for other workers or a server's update
  /// Composed layouts: `communication` split by the dimension whose transfer the worker waited
  /// for (indexed by ParallelDimension), and the part of `wait` spent waiting for another
  /// pipeline stage's activations or gradients (the bubble). All 0 for other runs.
  std::array<double, kParallelDimensions> exposed{};
  double bubble = 0;
};

/// Busy fraction of a group of like resources over the measured window.
struct ResourceLoad {
  std::string resource;  ///< "worker compute", "PS NIC out", ...
  double busy = 0;       ///< 0..1; the max over the group's members unless the name says mean
};

using LinkLoad = sim::LinkLoad;

struct SimulationResult {
  std::vector<WorkerTimes> workers;
  double window = 0;                ///< s, measured window (all workers past warm-up to the end)
  std::vector<ResourceLoad> loads;  ///< sorted, busiest first
  double bytes_sent = 0;            ///< bytes leaving devices (uplinks) during the window
  double bytes_received = 0;        ///< bytes arriving at devices (downlinks) during the window
  uint64_t events = 0;              ///< events dispatched plus flow completions
  uint32_t max_link_flows = 0;
  std::vector<LinkLoad> links;     ///< links that carried bytes in the window, busiest first (links_kept)
  std::size_t links_left_out = 0;  ///< links that carried bytes but are not in `links`
  std::vector<sim::LinkClassLoad> link_classes;  ///< every link that carried bytes, by class
  SimulationEngine engine = SimulationEngine::Full;
  /// Asynchronous parameter server: pushes of the workers' measured steps by staleness (index =
  /// updates the shard applied to the piece between its pull and the push's arrival); empty
  /// for sync training and other schemes.
  std::vector<uint64_t> staleness_counts;
  sim::Trace trace;
};

/// Runs warmup + measure steps on every worker. Asserts validated inputs (scenario/ checks them).
/// Fast path (options.fast_paths, no trace): synchronous all-reduce is computed per worker and
/// bucket, O(workers x buckets) a step instead of every op and transfer of every worker: each
/// worker's step is its op graph scaled by its straggler factor, and each collective runs alone
/// on the network (CollectiveTiming). Same numbers as the full engine (tests: 1e-9 relative);
/// only `events` differs. Parameter servers always run on the full engine.
[[nodiscard]] SimulationResult simulate_steps(const workload::Workload& workload,
                                              const cluster::ClusterSpec& cluster, const SchemeConfig& scheme,
                                              const SimulationOptions& options);

struct CollectiveResult {
  double time = 0;              ///< s, from start to the last byte delivered
  uint32_t max_link_flows = 0;  ///< most transfers that shared one link direction in one step
  uint64_t events = 0;
  int stages = 0;
  std::vector<LinkLoad> links;     ///< links that carried bytes, busiest first (links_kept of them)
  std::size_t links_left_out = 0;  ///< links that carried bytes but are not in `links`
  std::vector<sim::LinkClassLoad> link_classes;  ///< every link that carried bytes, by class
  SimulationEngine engine = SimulationEngine::Full;
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::Ring;  ///< the one run (auto: the one chosen)
  CollectiveProtocol protocol = CollectiveProtocol::Links;  ///< the one run (auto: the one chosen)
};

/// The links' loads in a window of `window` s in which link l carried bytes[l] (Cluster::links
/// order), each role's busiest: worker NIC out and in ("node NIC" with co-located servers), PS
/// NIC out and in (when the cluster has server nodes), intra-node link (when one carried bytes),
/// and each class of switch-to-switch link that carried bytes ("leaf->spine link", "spine->leaf
/// link", "edge->agg link", "router->router link", a custom fabric's switch names without their
/// numbers). The fine predictor's measured window and the closed forms' step name them alike.
[[nodiscard]] std::vector<ResourceLoad> link_loads(const cluster::Cluster& cluster,
                                                   const SchemeConfig& scheme,
                                                   const std::vector<double>& bytes, double window);

/// Of link_loads, only the switch-to-switch classes.
[[nodiscard]] std::vector<ResourceLoad> fabric_loads(const cluster::Cluster& cluster,
                                                     const std::vector<double>& bytes, double window);

/// Every link that carried bytes (bytes[l] > 0), by class, busiest class first: the workers' NICs
/// ("worker NIC", "node NIC" with co-located servers, both directions), the servers' ("PS NIC"),
/// "PCIe link", "intra-node link" (a device's bus: NVLink or the host's) and each
/// switch-to-switch class under link_loads' names; each with how many links, the busiest, their
/// mean busy fraction and their bytes times `steps` (bytes[] being one window's).
[[nodiscard]] std::vector<sim::LinkClassLoad> link_class_loads(const cluster::Cluster& cluster,
                                                               const SchemeConfig& scheme,
                                                               const std::vector<double>& bytes,
                                                               double window, double steps = 1);

/// The ring over workers in rank order as the coarse model sees it: per-member bandwidth of its
/// most shared link (bytes/s) and the slowest hop's latency (s).
struct RingBottleneck {
  double bw = 0;
  double latency = 0;
};
[[nodiscard]] RingBottleneck ring_bottleneck(const cluster::Cluster& cluster);

/// One collective of `bytes` (per worker: the buffer all-reduced, the output gathered, the input
/// scattered, the message broadcast) across all workers of `cluster`, alone on the network.
/// fast_path: each distinct stage pattern is solved once and its time scaled by the stage's
/// bytes (exact for a collective alone); false: stage after stage on the engine. `algorithm` and
/// `protocol` apply to an all-reduce (auto: chosen for `bytes`); the other collectives are rings.
/// The result keeps the `links_kept` busiest links (0: every one).
[[nodiscard]] CollectiveResult simulate_collective(const cluster::ClusterSpec& cluster, double bytes,
                                                   CollectiveOp op, AllReduceAlgorithm algorithm,
                                                   NetworkKind network = NetworkKind::MaxMin,
                                                   bool fast_path = true,
                                                   CollectiveProtocol protocol = CollectiveProtocol::Links,
                                                   std::size_t links_kept = 0);

/// One all-reduce of `bytes` across all workers of `cluster`, nothing else on the network.
[[nodiscard]] CollectiveResult simulate_allreduce(const cluster::ClusterSpec& cluster, double bytes,
                                                  AllReduceAlgorithm algorithm,
                                                  NetworkKind network = NetworkKind::MaxMin,
                                                  bool fast_path = true,
                                                  CollectiveProtocol protocol = CollectiveProtocol::Links);

}  // namespace stepcast::scheme
