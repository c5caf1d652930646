// Writes a scenario's multi-worker workload as Chakra execution traces (MLCommons; the workload
// input of ASTRA-sim 2), one file per rank, so the same job can be cross-checked in ASTRA-sim.
// The files read back with profile::read_chakra_trace; the mapping between the IR and Chakra
// nodes is documented in stepcast/detail/profile/chakra_trace.hpp. Depends on workload/ only; protobuf
// stays in the .cpp. Units: seconds and bytes here; the files hold microseconds and bytes.
//
//   report::ChakraExport how{.workers = 4, .buckets = workload::make_buckets(w, 25e6)};
//   for (const auto& f : report::write_chakra_traces("out/resnet", w, how)) use(f.path);
#pragma once

#include <string>
#include <vector>

#include "stepcast/workload/workload.hpp"

namespace stepcast::report {

/// The part of a tensor stored on one parameter-server shard (as scheme::place_parameters
/// computes it; repeated here so that the writer does not depend on scheme/).
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
  /// All-reduce: the bytes a rank sends per byte all-reduced, as the scenario's algorithm runs it
  /// (2 (N-1)/N for a ring; the caller computes it, this writer does not know the algorithms).
  /// Only ChakraFile::bytes_sent uses it: the files hold the buckets' payload.
  double allreduce_sent_per_byte = 0;
};

/// One written file.
struct ChakraFile {
  std::string path;
  int rank = 0;
  std::string role;       ///< "worker" or "ps"
  int nodes = 0;          ///< Node messages written
  /// Bytes this rank sends per step: a PS rank's pushes or pulls, an all-reduce rank's buckets x
  /// ChakraExport::allreduce_sent_per_byte (not the payload of the collectives).
  double bytes_sent = 0;
};

/// Writes "<prefix>.<rank>.et" for every worker rank (and server rank for a PS). Throws Error
/// (key "--chakra") when a file cannot be written or the export description does not fit the
/// workload (a bucket or piece naming an unknown tensor, no shards for a PS).
std::vector<ChakraFile> write_chakra_traces(const std::string& prefix, const workload::Workload& workload,
                                            const ChakraExport& how);

}  // namespace stepcast::report
