#include "stepcast/detail/scheme/placement.hpp"

#include <algorithm>

namespace stepcast::scheme {

std::vector<Piece> place_parameters(const workload::Workload& workload, const PsConfig& ps) {
  std::vector<Piece> pieces;
  const int shards = std::max(1, ps.count);
  if (ps.partition == PsPartition::Split) {
    for (int t = 0; t < static_cast<int>(workload.tensors.size()); ++t) {
      for (int s = 0; s < shards; ++s) pieces.push_back({t, s, workload.tensors[t].bytes / shards});
    }
    return pieces;
  }
  std::vector<double> load(shards, 0.0);
  for (int t = 0; t < static_cast<int>(workload.tensors.size()); ++t) {
    const int s = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[s] += workload.tensors[t].bytes;
    pieces.push_back({t, s, workload.tensors[t].bytes});
  }
  return pieces;
}

std::vector<double> shard_bytes(const std::vector<Piece>& pieces, int shards) {
  std::vector<double> bytes(std::max(1, shards), 0.0);
  for (const Piece& p : pieces) bytes[p.shard] += p.bytes;
  return bytes;
}

}  // namespace stepcast::scheme
