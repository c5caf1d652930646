// The report of `stepcast collective`: one collective timed alone on the network, as a value,
// written as JSON for programs or as text for people. Depends on scheme/ (CollectiveResult) and
// cluster/ (ClusterSpec); SI units inside, units in the printed names ("time_s", "algbw_GBps").
//
//   const auto r = scheme::simulate_collective(spec, bytes, op, algorithm);
//   const report::CollectiveReport rep{.op = op, .algorithm = algorithm, .cluster = spec,
//                                      .bytes = bytes, .result = r};
//   report::write_json(std::cout, rep);  // one line: {"op": "allreduce", ..., "links": [...]}
#pragma once

#include <cstddef>
#include <ostream>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/report/report.hpp"

namespace stepcast::report {

/// What was timed and what came out.
struct CollectiveReport {
  scheme::CollectiveOp op = scheme::CollectiveOp::AllReduce;
  scheme::AllReduceAlgorithm algorithm = scheme::AllReduceAlgorithm::Ring;
  cluster::ClusterSpec cluster;  ///< workers, topology, NIC, latency, size regimes
  double bytes = 0;              ///< per worker (nccl-tests' size)
  scheme::CollectiveResult result;
  /// The busiest links written (table and JSON); 0 writes every link that carried bytes
  /// (collective --all-links). JSON's links_left_out counts the others.
  std::size_t links_shown = 10;
};

/// bytes/s, nccl-tests' algorithm bandwidth: bytes / time (0 for a zero time).
[[nodiscard]] double algorithm_bandwidth(const CollectiveReport& report);
/// bytes/s, nccl-tests' bus bandwidth: algbw x 2(n-1)/n (all-reduce), x (n-1)/n (all-gather,
/// reduce-scatter), x 1 (broadcast), so that it compares with the links' speed at any n.
[[nodiscard]] double bus_bandwidth(const CollectiveReport& report);

/// One JSON object on one line: op, algorithm, topology, workers, size_bytes, time_s,
/// algbw_GBps, busbw_GBps, steps, max_link_flows, regime ({from_bytes, step_latency_s,
/// bandwidth_Bps} or null), links (the links_shown busiest: name, busy (fraction), bytes) and
/// links_left_out.
/// Non-finite numbers are written as null.
void write_json(std::ostream& out, const CollectiveReport& report);
/// A title line naming the collective and the cluster, then time, algbw, busbw, steps, flows
/// per link, the size regime (when one applies) and the links_shown busiest links.
void write_table(std::ostream& out, const CollectiveReport& report);

/// Several collectives (`collective --size 1MB,4MB --workers 8,16 --sweep ...`), nccl-tests
/// style: a title line, then one row per collective: the swept keys' values (configs[i], when
/// given), workers, size, time, algbw and busbw (GB/s), steps, most flows on a link.
void write_table(std::ostream& out, const std::vector<CollectiveReport>& rows, const std::vector<Config>& configs);
/// {"collectives": [...]}: each the object write_json writes for one, with "config" first when
/// configs[i] is given.
void write_json(std::ostream& out, const std::vector<CollectiveReport>& rows, const std::vector<Config>& configs);

}  // namespace stepcast::report
