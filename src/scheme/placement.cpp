#include "stepcast/detail/scheme/placement.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

namespace stepcast::scheme {
namespace {

/// The shard of each whole tensor under `strategy` (PsPlacementStrategy), index = tensor.
std::vector<int> whole_tensor_shards(const workload::Workload& workload, PsPlacementStrategy strategy,
                                     int shards) {
  const int tensors = static_cast<int>(workload.tensors.size());
  std::vector<int> shard(tensors, 0);
  std::vector<int> order(tensors);
  std::iota(order.begin(), order.end(), 0);
  switch (strategy) {
    case PsPlacementStrategy::RoundRobin:
      for (int t = 0; t < tensors; ++t) shard[t] = t % shards;
      return shard;
    case PsPlacementStrategy::GreedySorted:
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return workload.tensors[a].bytes > workload.tensors[b].bytes; });
      break;
    case PsPlacementStrategy::LeastLoaded:
      break;
  }
  std::vector<double> load(shards, 0.0);
  for (int t : order) {
    // min_element returns the first of equal loads: ties go to the lowest index.
    const int s = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[s] += workload.tensors[t].bytes;
    shard[t] = s;
  }
  return shard;
}

}  // namespace

double slices_of(double bytes, double slice_bytes) {
  return slice_bytes > 0 && bytes > slice_bytes ? std::ceil(bytes / slice_bytes) : 1;
}

std::vector<Piece> place_parameters(const workload::Workload& workload, const PsConfig& ps) {
  std::vector<Piece> pieces;
  const int shards = std::max(1, ps.count);
  // A piece as slices of equal size, adjacent, in order (P3's parameter slicing).
  auto add = [&](int tensor, int shard, double bytes) {
    const auto k = static_cast<int64_t>(slices_of(bytes, ps.slice_bytes));
    for (int64_t i = 0; i < k; ++i) pieces.push_back({tensor, shard, bytes / static_cast<double>(k)});
  };
  if (ps.partition == PsPartition::Split) {
    for (int t = 0; t < static_cast<int>(workload.tensors.size()); ++t) {
      for (int s = 0; s < shards; ++s) add(t, s, workload.tensors[t].bytes / shards);
    }
    return pieces;
  }
  const std::vector<int> shard = whole_tensor_shards(workload, ps.placement_strategy, shards);
  for (int t = 0; t < static_cast<int>(workload.tensors.size()); ++t)
    add(t, shard[t], workload.tensors[t].bytes);
  return pieces;
}

double count_pieces(const workload::Workload& workload, const PsConfig& ps) {
  const int shards = std::max(1, ps.count);
  const bool split = ps.partition == PsPartition::Split;
  double n = 0;
  for (const workload::Tensor& t : workload.tensors) {
    n += split ? shards * slices_of(t.bytes / shards, ps.slice_bytes) : slices_of(t.bytes, ps.slice_bytes);
  }
  return n;
}

std::vector<double> shard_bytes(const std::vector<Piece>& pieces, int shards) {
  std::vector<double> bytes(std::max(1, shards), 0.0);
  for (const Piece& p : pieces) bytes[p.shard] += p.bytes;
  return bytes;
}

}  // namespace stepcast::scheme
