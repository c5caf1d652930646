// Chakra execution traces (MLCommons; the workload input of ASTRA-sim 2): read one rank's trace
// into the Workload IR. The writer, which exports a scenario's multi-worker workload as one trace
// per rank so the same job can be cross-checked in ASTRA-sim, is report/ (every output is):
// stepcast/report/chakra_export.hpp. Depends on workload/ only; protobuf stays in the .cpp.
// Units: seconds and bytes here; the files hold microseconds and bytes.
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
//   auto files = report::write_chakra_traces("out/resnet", w, {.workers = 4, .buckets = buckets});
//   workload::Workload back = profile::read_chakra_trace("out/resnet.0.et");
#pragma once

#include <string>
#include <vector>

#include "stepcast/workload/workload.hpp"

namespace stepcast::profile {

/// Reads one rank's trace. Warnings (skipped node types, collectives other than all-reduce,
/// a missing GlobalMetadata) are appended to `warnings` when it is given. Throws Error naming
/// the file and the message index or node id for an unreadable file, a bad or truncated
/// length varint, a truncated or unparsable message, an unknown node type, a duplicate node
/// id, a dependency on an unknown node, a dependency cycle, or a trace without COMP nodes.
[[nodiscard]] workload::Workload read_chakra_trace(const std::string& path,
                                                   std::vector<std::string>* warnings = nullptr);

}  // namespace stepcast::profile
