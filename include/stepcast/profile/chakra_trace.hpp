// Chakra execution traces (MLCommons; the workload input of ASTRA-sim 2): read one rank's trace
// into the Workload IR, and write the multi-worker workload of a scenario as one trace per rank
// so the same job can be cross-checked in ASTRA-sim. Depends on workload/ only; protobuf stays in
// the .cpp. Units: seconds and bytes here; the files hold microseconds and bytes.
//
// File format (DESIGN.md section 5): "<prefix>.<rank>.et", a GlobalMetadata message then Node
// messages, each preceded by its length as a varint32.
//
// Mapping between the IR and Chakra nodes:
//   - Op <-> COMP_NODE (duration_micros, rounded to whole microseconds when written). Ops on a
//     lane whose name starts with "cpu" are written with is_cpu_op = true, others false;
//     reading puts is_cpu_op nodes on lane "cpu" and the rest on lane "gpu". Names "fwd:..." and
//     "bwd:..." give the op kind and, by the order layers first appear, its layer.
//   - Dependencies: every edge is written to data_deps (the only list ASTRA-sim's feeder
//     resolves); the lane program-order edge is also written to ctrl_deps. Reading takes the
//     union of both, followed through non-COMP nodes to the nearest COMP ancestors.
//   - All-reduce: one COMM_COLL_NODE (comm_type ALL_REDUCE, comm_size = bucket bytes) per
//     bucket, depending on the backward op that completes the bucket and on the previous
//     bucket's collective (NCCL runs them in order on one stream). Reading makes one Tensor per
//     ALL_REDUCE collective: bytes = comm_size, producer = its latest COMP ancestor, consumers =
//     the COMP nodes that depend on it.
//   - Parameter server: worker rank r pulls each piece with a COMM_RECV_NODE "pull:<tensor>"
//     (comm_src = server rank, comm_tag = tensor index) that the tensor's consumers depend on,
//     and pushes it with a COMM_SEND_NODE "push:<tensor>" after its producer. Server ranks
//     N..N+P-1 get files too: sends of the pulls, receives of the pushes and one CPU COMP node
//     "apply:<tensor>" per received gradient. Reading a worker rank makes one Tensor per tag:
//     bytes = sum of its pulls, producer from the pushes, consumers from the pulls.
//
//   auto files = write_chakra_traces("out/resnet", w, {.workers = 4, .buckets = buckets});
//   workload::Workload back = read_chakra_trace("out/resnet.0.et");
#pragma once

#include <string>
#include <vector>

#include "stepcast/workload/workload.hpp"

namespace stepcast::profile {

/// The part of a tensor stored on one parameter-server shard (as scheme::place_parameters
/// computes it; repeated here so that profile/ does not depend on scheme/).
struct ChakraPiece {
  int tensor = 0;
  int shard = 0;
  double bytes = 0;
  bool operator==(const ChakraPiece&) const = default;
};

/// How the exported step exchanges gradients between `workers` ranks.
struct ChakraExport {
  int workers = 1;                        ///< worker ranks 0..workers-1
  bool parameter_server = false;          ///< false: data-parallel all-reduce
  std::vector<workload::Bucket> buckets;  ///< all-reduce: one collective per bucket, in order
  int ps_count = 0;                       ///< PS: shard s is rank workers + s
  std::vector<ChakraPiece> pieces;        ///< PS: what each shard stores
  double ps_apply_time = 0;               ///< s per received gradient piece at a shard
  double ps_apply_bw = 0;                 ///< bytes/s of applying at a shard; 0 = free
  /// Length of the involved_dim list of collectives: the number of network dimensions of the
  /// ASTRA-sim network the traces will run on (1 for a single switch).
  int network_dims = 1;
};

/// One written file.
struct ChakraFile {
  std::string path;
  int rank = 0;
  std::string role;       ///< "worker" or "ps"
  int nodes = 0;          ///< Node messages written
  double bytes_sent = 0;  ///< bytes this rank sends or all-reduces per step
};

/// Writes "<prefix>.<rank>.et" for every worker rank (and server rank for a PS). Throws Error
/// (key "--chakra") when a file cannot be written or the export description does not fit the
/// workload (a bucket or piece naming an unknown tensor, no shards for a PS).
std::vector<ChakraFile> write_chakra_traces(const std::string& prefix, const workload::Workload& workload,
                                            const ChakraExport& how);

/// Reads one rank's trace. Warnings (skipped node types, collectives other than all-reduce,
/// a missing GlobalMetadata) are appended to `warnings` when it is given. Throws Error naming
/// the file and the message index or node id for an unreadable file, a bad or truncated
/// length varint, a truncated or unparsable message, an unknown node type, a duplicate node
/// id, a dependency on an unknown node, a dependency cycle, or a trace without COMP nodes.
[[nodiscard]] workload::Workload read_chakra_trace(const std::string& path,
                                                   std::vector<std::string>* warnings = nullptr);

}  // namespace stepcast::profile
