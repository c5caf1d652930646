// The checks every prediction input must pass, for callers who build the structs by hand as much
// as for scenario files: single values in range (counts, finite non-negative times and sizes,
// positive bandwidths, known enum values) and the rules across keys (colocated servers need a
// node each, halving_doubling and hdrm need a power-of-two worker count, hdrm a full BiGraph,
// asynchrony a parameter server, at most 2^20 worker-server connections, the topology must hold
// every node). A failed check throws stepcast::Error with an empty file, line 0 and the dotted
// scenario key the rule is about (e.g. "training.ps.count"); scenario/ re-points it at the file
// and line that set the key. Nothing here aborts: the predictors' assertions stay for bugs.
//
//   scheme::validate(workload, cluster_spec, scheme);   // throws Error, e.g.
//   // "training.allreduce.algorithm: halving_doubling needs a power-of-two number of workers, got 6"
#pragma once

#include <cstdint>
#include <optional>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/error.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {

/// The most parameter-server shards (training.ps.count); the most workers is
/// limits::kMaxWorkers (stepcast/limits.hpp).
inline constexpr int kMaxServers = 4096;
/// Worker-server connections (training.ps.count x cluster.workers) the fine simulator keeps per
/// direction; beyond this its memory and time grow past what a prediction should cost.
inline constexpr int64_t kMaxConnections = int64_t{1} << 20;
/// Pieces a parameter-server step may be cut into by training.ps.slice_size (each a message
/// every client pulls and pushes, with its own version), and messages of one step over all
/// clients: past these a step is millions of events and per-client state of gigabytes.
inline constexpr double kMaxSlices = 1e5;
inline constexpr double kMaxStepMessages = 1 << 24;
/// Torus routers (the product of cluster.torus.dims): a torus has a router per node slot, each
/// built with its links and routed by a search over all of them, so it stays below the job sizes
/// of the other topologies (16 million took minutes and gigabytes).
inline constexpr int64_t kMaxRouters = int64_t{1} << 16;

/// Checks the cluster and the scheme, alone and together. Throws Error({"", 0, key}, why).
void validate(const cluster::ClusterSpec& cluster, const SchemeConfig& scheme);

/// The same plus the workload (workload::validate's invariants, key "workload").
void validate(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
              const SchemeConfig& scheme);

/// The rules of a parallel layout with its workload (validate() calls it when the layout is
/// composed): a transformer decoder from the zoo, heads and key/value heads divisible by t, the
/// sequence by 2c, the global batch into micro-batches, enough micro-batches for the schedule,
/// blocks for every model chunk. Throws Error naming the key.
void check_layout(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
                  const SchemeConfig& scheme);

/// Every rule of a parallel layout, with the cluster (the degrees divide the workers, the schedule
/// and v agree, the scheme runs inside a layout, the data-parallel groups' algorithm) and with the
/// workload (check_layout's): the first one broken, as the Error validate() would throw (same key
/// and message), or nullopt when all hold. Does not throw, and formats a message only for a broken
/// rule, so a caller testing many layouts (`stepcast plan`) asks the same rules as validation at
/// little cost. The single values must be in range (validate() checks them first).
[[nodiscard]] std::optional<Error> layout_problem(const workload::Workload& workload,
                                                  const cluster::ClusterSpec& cluster,
                                                  const SchemeConfig& scheme);

/// The rules of a custom topology (cluster.custom): known, distinct switches, one link per node
/// and no node left out, every switch reachable from every other. Throws Error (key
/// cluster.custom). The topology-file reader in scenario/ uses it too, adding the file.
void validate_custom_topology(const cluster::CustomTopologySpec& custom);

}  // namespace stepcast::scheme
