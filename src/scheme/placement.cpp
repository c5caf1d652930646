#include "stepcast/detail/scheme/placement.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "scheme/step_paths.hpp"

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

/// Dependency depth of every op: ops on the longest chain before it, lane order included.
std::vector<double> dependency_depth(const workload::Workload& w) {
  const int num_ops = static_cast<int>(w.ops.size());
  std::vector<double> when(static_cast<size_t>(num_ops), 0.0);
  // Kahn's order over the dependencies and the lane order.
  std::vector<std::vector<int>> next(static_cast<size_t>(num_ops));
  std::vector<int> unmet(static_cast<size_t>(num_ops), 0);
  std::vector<int> last_on_lane(w.lanes.size(), -1);
  for (int op = 0; op < num_ops; ++op) {
    std::vector<int> before = w.ops[op].deps;
    int& previous = last_on_lane[static_cast<size_t>(w.ops[op].lane)];
    if (previous >= 0) before.push_back(previous);
    previous = op;
    for (int b : before) {
      next[static_cast<size_t>(b)].push_back(op);
      unmet[static_cast<size_t>(op)]++;
    }
  }
  std::vector<int> ready;
  for (int op = 0; op < num_ops; ++op) {
    if (unmet[static_cast<size_t>(op)] == 0) ready.push_back(op);
  }
  while (!ready.empty()) {
    const int op = ready.back();
    ready.pop_back();
    for (int n : next[static_cast<size_t>(op)]) {
      when[static_cast<size_t>(n)] =
          std::max(when[static_cast<size_t>(n)], when[static_cast<size_t>(op)] + 1);
      if (--unmet[static_cast<size_t>(n)] == 0) ready.push_back(n);
    }
  }
  return when;
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

/// The orders that rank pieces by need: each piece ranked by when its tensor's first reader runs,
/// by dependency depth (tic: TicTac's timing-independent order), by its start in one worker's
/// schedule alone (tac: timing-aware), or by its position in the workload's op order (priority:
/// P3's layer order); ties and tensors no op reads go by piece index (so slices of a tensor go
/// in order). Empty for random and fifo.
std::vector<uint64_t> need_ranks(const workload::Workload& w, const std::vector<Piece>& pieces,
                                 PsOrder order) {
  std::vector<double> when;
  switch (order) {
    case PsOrder::Random:
    case PsOrder::Fifo:
      return {};
    case PsOrder::Tic:
      when = dependency_depth(w);
      break;
    case PsOrder::Tac:
      when = schedule_alone(w).op_start;
      break;
    case PsOrder::Priority:
      for (size_t op = 0; op < w.ops.size(); ++op) when.push_back(static_cast<double>(op));
      break;
  }
  std::vector<double> key(pieces.size(), std::numeric_limits<double>::infinity());
  for (size_t p = 0; p < pieces.size(); ++p) {
    for (int reader : w.tensors[static_cast<size_t>(pieces[p].tensor)].consumers) {
      key[p] = std::min(key[p], when[static_cast<size_t>(reader)]);
    }
  }
  std::vector<size_t> by_need(pieces.size());
  for (size_t p = 0; p < by_need.size(); ++p) by_need[p] = p;
  std::stable_sort(by_need.begin(), by_need.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
  std::vector<uint64_t> rank(pieces.size());
  for (size_t i = 0; i < by_need.size(); ++i) rank[by_need[i]] = i;
  return rank;
}

}  // namespace stepcast::scheme
