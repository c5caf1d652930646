// How one training step spans the workers: parameter server (sync or async, shards, placement,
// transfer order, apply cost) or all-reduce (algorithm, buckets). A plain value, checked by
// scenario/ before any predictor runs.
//
//   SchemeConfig s{.scheme = Scheme::ParameterServer, .mode = Mode::Sync};
//   s.ps.count = 4; s.ps.order = PsOrder::Random;
#pragma once

#include <cstdint>

namespace stepcast::scheme {

enum class Scheme : uint8_t { ParameterServer, AllReduce };
enum class Mode : uint8_t { Sync, Async };
/// whole: each tensor lives whole on one shard, placed in creation order onto the shard with the
/// fewest bytes so far (TensorFlow's GreedyLoadBalancingStrategy), so one large tensor can make
/// its shard the bottleneck; split: every tensor is cut evenly over all shards.
enum class PsPartition : uint8_t { Whole, Split };
/// dedicated: each shard has a node of its own; colocated: shard s runs on the host CPU of
/// worker node s.
enum class PsPlacement : uint8_t { Dedicated, Colocated };
/// random: each step each worker's parameters are sent in an arbitrary (seeded) order, as
/// TensorFlow does; fifo: in layer order, which is also the order the forward pass needs them.
enum class PsOrder : uint8_t { Random, Fifo };
/// ring: 2(N-1) neighbour steps; tree: NCCL's double binary tree (two trees, each reducing then
/// broadcasting half the data in pipelined chunks); halving_doubling: recursive halving then
/// doubling (Rabenseifner);
/// hierarchical: reduce-scatter inside each node, all-reduce across nodes, all-gather inside;
/// hdrm: halving-doubling with the BiGraph rank mapping of EFLOPS (every step between the two
/// halves of switches, or inside one switch).
enum class AllReduceAlgorithm : uint8_t { Ring, HalvingDoubling, Hierarchical, Hdrm, Tree };

struct PsConfig {
  int count = 1;
  PsPartition partition = PsPartition::Whole;
  PsPlacement placement = PsPlacement::Dedicated;
  PsOrder order = PsOrder::Random;
  double apply_time = 0;  ///< s per received gradient tensor, serialized per shard
  double apply_bw = 0;    ///< bytes/s of applying gradients at a shard; 0 = free
  /// true: the GPUs of a node first sum their gradients at the node's first GPU, which alone
  /// talks to the servers and broadcasts parameters inside the node (TensorFlow's
  /// distributed_replicated, BytePS); false: every GPU talks to the servers (parameter_server).
  bool local_aggregation = false;
  bool operator==(const PsConfig&) const = default;
};

struct AllReduceConfig {
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::Ring;
  double bucket_bytes = 25e6;  ///< DDP default 25 MB; <= 0: one bucket per gradient
  bool operator==(const AllReduceConfig&) const = default;
};

struct SchemeConfig {
  Scheme scheme = Scheme::AllReduce;
  Mode mode = Mode::Sync;
  PsConfig ps;
  AllReduceConfig allreduce;
  bool operator==(const SchemeConfig&) const = default;
};

}  // namespace stepcast::scheme
