// One collective alone on the network, as `stepcast collective` and Python's
// `stepcast.collective()` both run it: the cluster built from the collective's own defaults, the
// scenario, `set` and the named options in that order; one report per (configuration, worker
// count, size). The command and the module only read their arguments into a CollectiveRequest
// and print what this returns, so that the two cannot disagree (python/tests compares their JSON).
//
//   sweep::CollectiveRequest r{.op = "allgather", .sizes = "64MiB"};
//   r.workers = "16";
//   sweep::CollectiveRun run = sweep::run_collective(r);   // one report
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/sweep/sweep.hpp"

namespace stepcast::sweep {

/// The options of one collective. Every string is as the user wrote it; errors name the option
/// through `option_name`.
struct CollectiveRequest {
  std::string op = "allreduce";  ///< allreduce, allgather, reducescatter or broadcast
  std::string sizes = "100MB";   ///< bytes per worker, with a unit; a comma list makes a row each
  /// The scenario the cluster comes from (Request::scenario or scenario_text); both empty: the
  /// collective's own cluster, 8 workers with 100Gbps NICs and 2us latency, and the ring.
  Request scenario;
  std::vector<std::string> sets;  ///< KEY=VALUE overrides, after the scenario
  /// cluster.workers: one count, or a comma list that makes a row per count.
  std::optional<std::string> workers;
  std::optional<std::string> algorithm;  ///< training.allreduce.algorithm (the ring without a scenario)
  std::optional<std::string> protocol;   ///< training.allreduce.protocol
  std::optional<std::string> workers_per_node;
  std::optional<std::string> nic_bandwidth;
  std::optional<std::string> latency;  ///< cluster.link_latency
  std::vector<Axis> axes;              ///< --sweep KEY=V1,V2: a row per configuration
  std::size_t links_kept = 10;         ///< the busiest links each report names; 0: every one
  /// The name errors give an option, from its name here ("workers_per_node"): the command's
  /// "--workers-per-node", Python's keyword unchanged.
  std::string (*option_name)(std::string_view option) = nullptr;
};

/// The reports of a run (report::CollectiveReport, an internal type): configurations outermost,
/// then counts, then sizes, with each one's configuration.
struct CollectiveRows;

struct CollectiveRun {
  std::shared_ptr<const CollectiveRows> rows;
  /// One size, one count and no axes: the single collective's report, not rows.
  bool single = false;
};

/// Runs the request. Throws Error naming the option or the scenario key on bad input.
[[nodiscard]] CollectiveRun run_collective(const CollectiveRequest& request);

/// What `stepcast collective --json` prints: the report's object when `run.single`, else rows.
void write_json(std::ostream& out, const CollectiveRun& run);
/// What `stepcast collective` prints.
void write_table(std::ostream& out, const CollectiveRun& run);

}  // namespace stepcast::sweep
