// The cost formulas that the fine, coarse and analytic predictors share, written once so that
// they cannot drift apart: what applying a gradient costs a parameter server, how fast a
// server's NIC is, what each shard holds, and how many bytes a collective sends.
//
//   const ShardLoads load = shard_loads(workload, scheme.ps);   // per shard, per client step
//   double t = ps_apply_time(scheme.ps, piece.bytes);          // s for one received piece
//   double sent = collective_bytes_sent(plan, bucket.bytes);   // bytes, all workers together
#pragma once

#include <cstdint>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {

/// s a shard spends applying one received gradient piece of `bytes`: ps.apply_time, plus
/// bytes / ps.apply_bw when apply_bw > 0 (apply_bw 0 means no per-byte cost).
[[nodiscard]] double ps_apply_time(const PsConfig& ps, double bytes);

/// bytes/s each way of the NIC a parameter-server shard talks through: a dedicated server node's
/// own NIC (spec.ps_nic_bw, or nic_bw when that is 0), or, colocated, its worker node's NIC.
[[nodiscard]] double ps_server_bw(const cluster::ClusterSpec& spec, const PsConfig& ps);

/// What one client step asks of each shard under ps's placement (place_parameters): the bytes it
/// holds (pulled once and pushed once per client step), the time its apply lane needs (one
/// ps_apply_time per received piece) and the messages it handles (one per piece each way, each
/// costing ps.message_overhead on its message lane). Index = shard, max(1, ps.count) entries.
struct ShardLoads {
  std::vector<double> bytes;         ///< bytes per shard
  std::vector<double> apply;         ///< s per shard
  std::vector<int> messages;         ///< pieces per shard: messages per client step in each direction
  std::vector<double> square_bytes;  ///< per shard, the sum of its pieces' bytes squared
  [[nodiscard]] double largest_bytes() const;
  /// The busiest shard's pieces counted by bytes, (sum b)^2 / sum b^2: m for m equal pieces,
  /// near 1 when one piece holds most of the bytes. 1 / it is the share of the shard's bytes in
  /// the piece that holds a byte drawn at random (a size-biased draw).
  [[nodiscard]] double largest_effective_pieces() const;
  [[nodiscard]] double largest_apply() const;
  [[nodiscard]] int largest_messages() const;
};
[[nodiscard]] ShardLoads shard_loads(const workload::Workload& workload, const PsConfig& ps);

/// The cluster a parameter server runs on: the workers' nodes, and one node per shard after
/// them when the servers are dedicated.
[[nodiscard]] cluster::Cluster ps_cluster(const cluster::ClusterSpec& spec, const PsConfig& ps);

/// Bytes each link of `cluster` carries (Cluster::links order) in one step of every worker: each
/// client's pull of every shard's bytes and its push of them back, on the paths the fine
/// predictor's exchange takes (a client: a worker, or a node's leader with
/// training.ps.local_aggregation; the node-local broadcasts and gathers left out). Empty when
/// the cluster has no switch-to-switch link: what the closed forms want it for is the fabric's
/// loads (a NIC's they have in closed form). `cluster`: ps_cluster's.
[[nodiscard]] std::vector<double> ps_fabric_bytes(const cluster::Cluster& cluster,
                                                  const workload::Workload& workload, const PsConfig& ps);

/// ps_fabric_bytes by direction: per link, the pulls' bytes (shards to clients) and the pushes'
/// (clients to shards), whose sum is ps_fabric_bytes. Both empty where it is. A closed form
/// whose pulls and pushes take turns wants each phase's busiest link apart.
struct PsFabricBytes {
  std::vector<double> pulls;
  std::vector<double> pushes;
  [[nodiscard]] std::vector<double> both() const;  ///< per link, pulls + pushes
};
[[nodiscard]] PsFabricBytes ps_fabric_bytes_by_direction(const cluster::Cluster& cluster,
                                                         const workload::Workload& workload,
                                                         const PsConfig& ps);

/// s the busiest link of `cluster` needs for link_bytes[l] bytes on each link l (Cluster::links
/// order): the largest bytes / bandwidth; 0 for empty link_bytes.
[[nodiscard]] double busiest_link_time(const cluster::Cluster& cluster,
                                       const std::vector<double>& link_bytes);

/// How one worker's connections to the shards move bytes: each shard's connection at most
/// shard_rate bytes/s (its NIC's share), all of them together at most link_rate (the worker's
/// link), shared fairly among those sending.
struct ShardStreams {
  double shard_rate = 0;
  double link_rate = 0;
};

/// When a worker's forward pass ends, in s on the clock of stream_start, when shard s sends the
/// worker its pieces one at a time from stream_start[s] (streams), a piece once it is ready
/// (piece_ready[p] on the same clock; empty: all ready), the first in the pull order among those
/// ready: piece order (fifo), need order (tic, tac, priority: need_ranks), or in random order the
/// mean over `draws` random orders drawn from `seed`. A forward op starts once its lane and
/// dependencies allow (one worker's schedule alone) and every piece of the tensors it reads is in,
/// and none before the earliest stream start. The first layers need little and come first in need
/// order; in random order the ops wait for what they read, not for every pull, so the compute of
/// layers whose parameters came early hides the rest. `spread` (if given): the mean absolute
/// difference between the ends of two draws, how far apart two workers' random orders put them.
[[nodiscard]] double forward_end_after_pulls(const workload::Workload& workload, const PsConfig& ps,
                                             const std::vector<double>& stream_start,
                                             const ShardStreams& streams,
                                             const std::vector<double>& piece_ready, uint64_t seed, int draws,
                                             double* spread = nullptr);

/// One synchronous step's pushes, in s from the start of the backward pass, with `workers`
/// clients in step: a gradient piece may leave once the backward produced it (one worker's
/// schedule alone); each shard's connection sends one piece at a time (streams), the first ready
/// in its push order (production order for random and fifo, need order for tic, tac and
/// priority); the shard's lane applies the workers' copies of a piece once it is in, one at a
/// time. `pushed`: the last piece in, over the shards; `applied`: the last lane done. The lane
/// ends later than the last push by more than one piece's applies where the pieces pushed last
/// are small (their transfer is short, their applies are not), as the first layers' biases and
/// norms of a CNN; and a large gradient produced early in the backward (a CNN's classifier) is
/// in long before the backward ends.
/// `drained`: the earliest the shards could send every worker its copy of each piece again once
/// that piece is applied (a shard's NIC out carries `workers` x shard_rate): the latest, over the
/// pieces, of a piece applied plus its shard's bytes applied at or after it / shard_rate, the end
/// of a NIC that sends whatever is applied as soon as it is.
struct PushStreams {
  double pushed = 0;
  double applied = 0;
  double drained = 0;
  std::vector<double> piece_applied;  ///< per piece (place_parameters' order): its lane done
};
[[nodiscard]] PushStreams push_streams(const workload::Workload& workload, const PsConfig& ps, int workers,
                                       const ShardStreams& streams);

/// Bytes of memory one optimizer step reads and writes per parameter, the same in fp32 and in
/// mixed precision: the gradient, the (master) weight and the optimizer's state read, the weight
/// and the state written, and with mixed precision the fp16/bf16 working copy written (2 bytes)
/// where the gradient read is 2 bytes smaller. With s bytes of state (adam 8, momentum 4, sgd 0):
/// 12 + 2 s, so adam 28, momentum 20, sgd 12.
[[nodiscard]] double optimizer_bytes_per_parameter(Optimizer optimizer);

/// s one worker's optimizer step takes per training step: memory-bound at
/// cluster.gpu_memory_bw over the parameters it updates (all of them with all-reduce; its shard,
/// 1 / fsdp_shard_degree of them, with sharded data parallelism; none with a parameter server,
/// whose servers apply the gradients). 0 when the bandwidth is unknown (0) or the workload's ops
/// already hold the step (Workload::optimizer_in_ops).
[[nodiscard]] double optimizer_step_time(const workload::Workload& workload, const cluster::ClusterSpec& spec,
                                         const SchemeConfig& scheme);

/// s of host CPU a client's compute lane gives to one step's transfers: with a parameter server,
/// every parameter pulled and pushed once, 2 x parameter bytes x Workload::comm_cpu_per_byte; 0
/// for the collective schemes, which do not use it.
[[nodiscard]] double comm_cpu_time(const workload::Workload& workload, const SchemeConfig& scheme);

/// Bytes all workers together send in one run of `plan` on a buffer of `bytes`: every transfer of
/// every stage (stage fraction x size factor x bytes, per member), exactly what the simulator
/// starts for it. A transfer to the same device (empty path) moves nothing and is not counted.
/// The sum crosses the senders' uplinks (NIC or intra-node link), which is what
/// SimulationResult::bytes_sent adds up.
[[nodiscard]] double collective_bytes_sent(const CollectivePlan& plan, double bytes);

/// The closed form of collective_bytes_sent for an all-reduce planned by plan_collective, per
/// worker (total / N), on N = `workers` workers with `workers_per_node` per node:
/// - ring, halving_doubling, hdrm: 2 (N-1)/N S (reduce-scatter then all-gather, each (N-1)/N S);
/// - tree: the same: each of the T trees has N - 1 edges (N - M in the chains, M - 1 across
///   nodes), each moving C chunks of S / (T C) each way; auto picks ring or tree, so the same;
///   a protocol's framing (wire_factor) is not counted: these are payload bytes;
/// - hierarchical, G = min(workers_per_node, N) GPUs per node, M nodes: 2 (G-1)/G S inside nodes
///   plus 2 (M-1)/(G M) S across them (for full nodes that adds up to the ring's 2 (N-1)/N S; a
///   last node with fewer GPUs changes which rings exist, and so the sum).
/// 0 for N <= 1.
[[nodiscard]] double allreduce_bytes_per_worker(AllReduceAlgorithm algorithm, int workers,
                                                int workers_per_node, double bytes);

/// A mixture of experts split over e GPUs (training.parallel.expert): the tokens the busiest GPU
/// of an expert group receives over the mean, when the busiest expert receives `imbalance` x the
/// mean (workload.moe.imbalance) and the other experts share the rest evenly, the busiest one's GPU
/// holding E / e - 1 of them: (imbalance + (E/e - 1)(E - imbalance)/(E - 1)) / (E/e). 1 for e = 1
/// or balanced routing; `imbalance` with one expert per GPU.
[[nodiscard]] double busiest_expert_gpu(int64_t experts, int expert_parallel, double imbalance);

/// For each decoder block of a workload under `parallel`, its busiest expert GPU's tokens over the
/// balanced mean (workload::busiest_gpu_of_counts): from the block's row of workload.moe.routing,
/// or from workload.moe.imbalance as one expert at imbalance x the mean and the others sharing the
/// rest evenly; with the capacity factor and the placement. 1 for dense blocks, without expert
/// parallelism, and for a workload that is not a decoder (then one entry).
[[nodiscard]] std::vector<double> busiest_expert_gpu_by_block(const workload::Workload& workload,
                                                              const ParallelConfig& parallel);

/// The share of a MoE layer's forward FLOPs in its routed experts (top_k expert MLPs per token)
/// rather than its router and shared experts; what expert parallelism moves between the
/// all-to-alls. 0 for a dense MLP.
[[nodiscard]] double expert_flop_share(const workload::TransformerShape& shape);

}  // namespace stepcast::scheme
