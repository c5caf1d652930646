// Where parameters live on parameter-server shards: each tensor whole on one shard, placed by
// ps.placement_strategy (least-loaded in creation order as TensorFlow's
// GreedyLoadBalancingStrategy and tf_cnn_benchmarks do, greedy over sizes sorted largest first, or
// round-robin as replica_device_setter does), or every tensor split evenly.
//
//   auto pieces = place_parameters(workload, ps_config);   // one Piece per (tensor, shard)
#pragma once

#include <cstdint>
#include <vector>

#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {

/// The part of a tensor stored on one shard.
struct Piece {
  int tensor = 0;
  int shard = 0;
  double bytes = 0;
  bool operator==(const Piece&) const = default;
};

/// Pieces in tensor order. whole: one piece per tensor, on the shard ps.placement_strategy picks
/// (PsPlacementStrategy; greedy ties go to the lowest index); split: `count` pieces per tensor of
/// bytes/count each. With ps.slice_bytes > 0 each of those is ceil(bytes / slice_bytes) pieces of
/// equal size on its shard, adjacent (P3's slices: sent, aggregated and applied one by one).
[[nodiscard]] std::vector<Piece> place_parameters(const workload::Workload& workload, const PsConfig& ps);

/// Each piece's place when a connection sends by need (training.ps.order tic, tac, priority):
/// rank 0 first. Empty for random and fifo (fifo sends in piece order; random draws per send).
[[nodiscard]] std::vector<uint64_t> need_ranks(const workload::Workload& workload,
                                               const std::vector<Piece>& pieces, PsOrder order);

/// How many pieces place_parameters returns, without building them (validate() bounds it).
[[nodiscard]] double count_pieces(const workload::Workload& workload, const PsConfig& ps);

/// Bytes stored on each shard.
[[nodiscard]] std::vector<double> shard_bytes(const std::vector<Piece>& pieces, int shards);

}  // namespace stepcast::scheme
