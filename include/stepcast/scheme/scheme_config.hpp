// How one training step spans the workers: parameter server (sync or async, shards, placement,
// transfer order, apply cost), all-reduce (algorithm, buckets; PyTorch DDP) or sharded data
// parallelism (FSDP / ZeRO: sharding, units, prefetch), and the optimizer whose state the memory
// check counts. A plain value, checked by scenario/ before any predictor runs.
//
//   SchemeConfig s{.scheme = Scheme::ParameterServer, .mode = Mode::Sync};
//   s.ps.count = 4; s.ps.order = PsOrder::Random;
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "stepcast/enum_names.hpp"

namespace stepcast::scheme {

enum class Scheme : uint8_t { ParameterServer, AllReduce, Fsdp };
constexpr std::string_view name_of(Scheme v) {
  switch (v) {
    case Scheme::ParameterServer:
      return "ps";
    case Scheme::AllReduce:
      return "allreduce";
    case Scheme::Fsdp:
      return "fsdp";
  }
  return {};
}
enum class Mode : uint8_t { Sync, Async };
constexpr std::string_view name_of(Mode v) {
  switch (v) {
    case Mode::Sync:
      return "sync";
    case Mode::Async:
      return "async";
  }
  return {};
}
/// whole: each tensor lives whole on one shard (where: PsPlacementStrategy), so one large tensor
/// can make its shard the bottleneck; split: every tensor is cut evenly over all shards.
enum class PsPartition : uint8_t { Whole, Split };
constexpr std::string_view name_of(PsPartition v) {
  switch (v) {
    case PsPartition::Whole:
      return "whole";
    case PsPartition::Split:
      return "split";
  }
  return {};
}
/// Which shard a whole tensor goes to (partition whole; split ignores it):
/// - least_loaded: in creation (layer) order, each tensor to the shard with the fewest bytes so
///   far, ties to the lowest index: TensorFlow's GreedyLoadBalancingStrategy and tf_cnn_benchmarks'
///   ParamServerDeviceSetter, which place variables as the model creates them;
/// - greedy_sorted: the same greedy rule over the tensors sorted by bytes, largest first (ties in
///   creation order): the longest-processing-time heuristic, which balances better (its largest
///   shard is at most 4/3 of the best possible) but is not what a framework does by itself;
/// - round_robin: in creation order onto shards 0, 1, ..., P-1, 0, 1, ... whatever their sizes:
///   the default of TensorFlow's replica_device_setter.
enum class PsPlacementStrategy : uint8_t { LeastLoaded, GreedySorted, RoundRobin };
constexpr std::string_view name_of(PsPlacementStrategy v) {
  switch (v) {
    case PsPlacementStrategy::LeastLoaded:
      return "least_loaded";
    case PsPlacementStrategy::GreedySorted:
      return "greedy_sorted";
    case PsPlacementStrategy::RoundRobin:
      return "round_robin";
  }
  return {};
}
/// dedicated: each shard has a node of its own; colocated: shard s runs on the host CPU of
/// worker node s.
enum class PsPlacement : uint8_t { Dedicated, Colocated };
constexpr std::string_view name_of(PsPlacement v) {
  switch (v) {
    case PsPlacement::Dedicated:
      return "dedicated";
    case PsPlacement::Colocated:
      return "colocated";
  }
  return {};
}
/// random: each step each worker's parameters are sent in an arbitrary (seeded) order, as
/// TensorFlow does; fifo: in creation (layer) order; tic: TicTac's timing-independent order, by
/// the dependency depth of the first forward op that reads each parameter (pushes likewise);
/// tac: TicTac's timing-aware order, by when that op starts in one worker's schedule alone;
/// priority: P3's, by the position in the workload's op order of the first op that reads each
/// parameter (layers nearest the input first), pulls and pushes, each connection picking the
/// highest-priority pending message whenever it sends one (with PsConfig::slice_bytes, at every
/// slice). For a plain chain of layers every order but random coincides.
enum class PsOrder : uint8_t { Random, Fifo, Tic, Tac, Priority };
constexpr std::string_view name_of(PsOrder v) {
  switch (v) {
    case PsOrder::Random:
      return "random";
    case PsOrder::Fifo:
      return "fifo";
    case PsOrder::Tic:
      return "tic";
    case PsOrder::Tac:
      return "tac";
    case PsOrder::Priority:
      return "priority";
  }
  return {};
}
/// What a synchronous step's pulls wait for. per_tensor: a piece's next version, which exists
/// once every worker's gradient of it is applied (PS-Lite, BytePS, MXNet's KVStore), so the next
/// step's pulls of pieces already updated overlap this step's other pushes. step: every
/// variable's next version, a barrier across the whole model (TensorFlow's SyncReplicasOptimizer
/// token queue, tf_cnn_benchmarks' sync queues), so the next step starts from all pulls at once
/// and only their order decides how soon the forward pass can run (what TicTac schedules).
enum class PsBarrier : uint8_t { PerTensor, Step };
constexpr std::string_view name_of(PsBarrier v) {
  switch (v) {
    case PsBarrier::PerTensor:
      return "per_tensor";
    case PsBarrier::Step:
      return "step";
  }
  return {};
}
/// When asynchronous workers start their first step. Identical workers under fair sharing keep
/// their phases (two equal transfers entering a link g apart leave it g apart), so where the
/// servers' NICs are the knee the steady rate depends on these phases, which nothing in the job
/// fixes. spread (default): evenly over one cycle, workers out of step, near the PS bound;
/// together: all at once, as a job launch without jitter, so they move in convoys (all pulling,
/// then all pushing); random: each at a seeded uniform time within one cycle.
enum class PsAsyncStart : uint8_t { Spread, Together, Random };
constexpr std::string_view name_of(PsAsyncStart v) {
  switch (v) {
    case PsAsyncStart::Spread:
      return "spread";
    case PsAsyncStart::Together:
      return "together";
    case PsAsyncStart::Random:
      return "random";
  }
  return {};
}
/// ring: 2(N-1) neighbour steps, GPUs of a node adjacent, one ring per NIC of a node (NCCL's
/// channels); tree: NCCL's tree (a chain through the GPUs of each node, a double binary tree
/// across nodes, each of the two trees reducing then broadcasting half the data in pipelined
/// chunks, two trees per NIC); halving_doubling: recursive halving then doubling (Rabenseifner);
/// hierarchical: reduce-scatter inside each node, all-reduce across nodes, all-gather inside;
/// hdrm: halving-doubling with the BiGraph rank mapping of EFLOPS (every step between the two
/// halves of switches, or inside one switch, one transfer per link direction; where a switch has
/// more hosts than links to the other half, the steps across run in rounds); auto: ring or tree,
/// whichever NCCL's tuning model (with the protocol) makes fastest for each collective's size and
/// scale.
enum class AllReduceAlgorithm : uint8_t { Ring, HalvingDoubling, Hierarchical, Hdrm, Tree, Auto };
constexpr std::string_view name_of(AllReduceAlgorithm v) {
  switch (v) {
    case AllReduceAlgorithm::Ring:
      return "ring";
    case AllReduceAlgorithm::HalvingDoubling:
      return "halving_doubling";
    case AllReduceAlgorithm::Hierarchical:
      return "hierarchical";
    case AllReduceAlgorithm::Hdrm:
      return "hdrm";
    case AllReduceAlgorithm::Tree:
      return "tree";
    case AllReduceAlgorithm::Auto:
      return "auto";
  }
  return {};
}
/// How a collective's step costs latency and bandwidth: links: the links' latencies and
/// bandwidths alone (and cluster.collective_regimes); ll, ll128, simple: NCCL's tuning model for
/// that protocol (cluster.nccl: per-hop latency, a base latency, a bandwidth efficiency); auto:
/// the fastest of the three for each collective, as NCCL's tuner picks.
enum class CollectiveProtocol : uint8_t { Links, Auto, LL, LL128, Simple };
constexpr std::string_view name_of(CollectiveProtocol v) {
  switch (v) {
    case CollectiveProtocol::Links:
      return "links";
    case CollectiveProtocol::Auto:
      return "auto";
    case CollectiveProtocol::LL:
      return "ll";
    case CollectiveProtocol::LL128:
      return "ll128";
    case CollectiveProtocol::Simple:
      return "simple";
  }
  return {};
}

/// What sharded data parallelism shards, and when it gathers (DESIGN.md 4.2):
/// - full (ZeRO-3, FSDP FULL_SHARD): parameters, gradients and optimizer state; each unit's
///   parameters are all-gathered before its forward and again before its backward (with
///   reshard_after_forward), its gradients reduce-scattered after its backward;
/// - grad_op (ZeRO-2, FSDP SHARD_GRAD_OP): gradients and optimizer state; parameters gathered
///   before the forward and kept until the backward is done (one gather per unit);
/// - optimizer (ZeRO-1, DeepSpeed): optimizer state only; gradients reduce-scattered after each
///   unit's backward, each worker updates its shard, then the updated parameters are all-gathered
///   after the optimizer step (before the next forward);
/// - hybrid (HSDP, FSDP HYBRID_SHARD): full sharding inside a group of shard_group workers,
///   replicated across groups: each unit's reduced gradient shard is all-reduced across groups.
enum class FsdpSharding : uint8_t { Full, GradOp, Optimizer, Hybrid };
constexpr std::string_view name_of(FsdpSharding v) {
  switch (v) {
    case FsdpSharding::Full:
      return "full";
    case FsdpSharding::GradOp:
      return "grad_op";
    case FsdpSharding::Optimizer:
      return "optimizer";
    case FsdpSharding::Hybrid:
      return "hybrid";
  }
  return {};
}

struct FsdpConfig {
  FsdpSharding sharding = FsdpSharding::Full;
  int shard_group = 0;  ///< hybrid: workers per shard group; 0 = the workers of one node
  int unit_blocks = 1;  ///< model blocks (transformer blocks) per FSDP unit; embedding and head are their own
  int prefetch = 1;     ///< units gathered ahead of the one computing (forward and backward); 0 = none
  bool reshard_after_forward = true;  ///< full/hybrid: free gathered parameters after the forward
  /// workload.precision fp8 only: the parameter all-gathers (every sharding's, the distributed
  /// optimizer's too) move each weight's fp8 copy, 1 byte, instead of its bf16 value (TorchTitan's
  /// enable_fsdp_float8_all_gather, Megatron-LM's --fp8-param-gather); reduce-scatters and
  /// all-reduces of gradients stay bf16. Off by default, as in both.
  bool fp8_all_gather = false;
  bool operator==(const FsdpConfig&) const = default;
};

/// Workers each unit's parameters are sharded over: all `workers`, or with hybrid sharding the
/// shard group (shard_group, or 0: the workers of one node, at most `workers`).
[[nodiscard]] inline int fsdp_shard_degree(const FsdpConfig& fsdp, int workers, int workers_per_node) {
  if (fsdp.sharding != FsdpSharding::Hybrid) return workers;
  if (fsdp.shard_group > 0) return fsdp.shard_group;
  return workers_per_node < workers ? workers_per_node : workers;
}

/// Optimizer whose state a worker holds (the memory check): adam keeps two moments, momentum one,
/// sgd none; with fp16/bf16 training an fp32 master copy of the parameters too (DeepSpeed's count).
enum class Optimizer : uint8_t { Adam, Momentum, Sgd };
constexpr std::string_view name_of(Optimizer v) {
  switch (v) {
    case Optimizer::Adam:
      return "adam";
    case Optimizer::Momentum:
      return "momentum";
    case Optimizer::Sgd:
      return "sgd";
  }
  return {};
}

struct PsConfig {
  int count = 1;
  PsPartition partition = PsPartition::Whole;
  PsPlacementStrategy placement_strategy = PsPlacementStrategy::LeastLoaded;
  PsPlacement placement = PsPlacement::Dedicated;
  PsOrder order = PsOrder::Random;
  PsBarrier barrier = PsBarrier::PerTensor;
  PsAsyncStart async_start = PsAsyncStart::Spread;
  double apply_time = 0;  ///< s per received gradient tensor, serialized per shard
  double apply_bw = 0;    ///< bytes/s of applying gradients at a shard; 0 = free
  /// s of CPU each message (one piece pulled or pushed) costs at both ends: at the shard on one
  /// lane for all its messages, one at a time (k messages cost it k x this), and at the worker on
  /// the connection (a pull after it arrives, a push before it is sent); 0 = free.
  double message_overhead = 0;
  /// P3's parameter slicing: every piece of a tensor on a shard is sent, aggregated and applied
  /// as ceil(bytes / slice_bytes) equal slices, each its own message; 0 = whole pieces.
  double slice_bytes = 0;
  /// true: the GPUs of a node first sum their gradients at the node's first GPU, which alone
  /// talks to the servers and broadcasts parameters inside the node (TensorFlow's
  /// distributed_replicated, BytePS); false: every GPU talks to the servers (parameter_server).
  bool local_aggregation = false;
  bool operator==(const PsConfig&) const = default;
};

struct AllReduceConfig {
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::Ring;
  CollectiveProtocol protocol = CollectiveProtocol::Links;
  double bucket_bytes = 25e6;  ///< DDP default 25 MB; <= 0: one bucket per gradient
  bool operator==(const AllReduceConfig&) const = default;
};

/// The dimensions a training job's ranks are laid out along (Megatron-LM's parallel state): tensor
/// (t: each layer's weights split over t GPUs), context (c: the sequence split over c GPUs, ring
/// attention), data (d: replicas, or FSDP's shards) and pipeline (p: the layers cut into p stages);
/// and the two groups folded over them for a mixture of experts (Megatron's "parallel folding"):
/// expert (e: the experts of each MoE layer split over e GPUs that trade tokens all-to-all),
/// expert data (the t c d / (e x ETP) ranks holding the same expert shards, which reduce their
/// gradients) and expert tensor (ETP: each expert's weights split over ETP GPUs, which gather the
/// tokens they received and reduce-scatter the experts' outputs).
/// DataReplicate: hybrid sharding's replica groups (FSDP HYBRID_SHARD), the gradient group's ranks
/// at one place in every shard group; the Data dimension's collectives then run in the shard groups.
enum class ParallelDimension : uint8_t {
  Tensor,
  Context,
  Data,
  Pipeline,
  Expert,
  ExpertData,
  ExpertTensor,
  DataReplicate
};
constexpr std::string_view name_of(ParallelDimension v) {
  switch (v) {
    case ParallelDimension::Tensor:
      return "tp";
    case ParallelDimension::Context:
      return "cp";
    case ParallelDimension::Data:
      return "dp";
    case ParallelDimension::Pipeline:
      return "pp";
    case ParallelDimension::Expert:
      return "ep";
    case ParallelDimension::ExpertData:
      return "edp";
    case ParallelDimension::ExpertTensor:
      return "etp";
    case ParallelDimension::DataReplicate:
      return "dp_replicate";
  }
  return {};
}
inline constexpr int kParallelDimensions = 8;
/// The first four, which ranks are laid out along (training.parallel.order); the expert groups
/// are folded over them.
inline constexpr int kRankDimensions = 4;
/// "tp", "cp", "dp", "pp" (the names of training.parallel.order), "ep", "edp", "etp", "dp_replicate".
[[nodiscard]] const char* to_string(ParallelDimension dimension);

/// How the parallel degrees compose. The data-parallel degree is what is left: d = workers /
/// (t c p), an integer (validate() checks). All 1 and global_batch 0: plain data parallelism, the
/// step of training.scheme alone, as before these keys existed.
struct ParallelConfig {
  int tensor = 1;          ///< t (training.parallel.tensor)
  bool sequence = true;    ///< with t > 1, Megatron's sequence parallelism (reduce-scatter + all-gather)
  int pipeline = 1;        ///< p
  int virtual_stages = 1;  ///< v: model chunks per pipeline stage (interleaved schedule)
  int context = 1;         ///< c
  /// e: each MoE layer's experts split over e ranks of a stage (e x ETP divides t c d); each holds
  /// experts / e of them. The expert layout is folded over the stage's ranks listed tensor
  /// coordinate fastest, then the context x data position (RankLayout): ETP consecutive ones
  /// share each expert's weights, e such blocks an expert group.
  int expert = 1;
  /// ETP (training.parallel.expert_tensor): each expert's weights split over this many ranks;
  /// 0 = t, Megatron-core's default, where the expert-tensor groups are the tensor groups.
  int expert_tensor = 0;
  /// The expert-tensor degree in effect: expert_tensor, or t when it is 0.
  [[nodiscard]] int expert_tensor_degree() const { return expert_tensor > 0 ? expert_tensor : tensor; }
  /// Rank order, fastest-varying first: Megatron's default tp-cp-dp-pp puts a tensor group on
  /// adjacent ranks, so inside a node when t <= workers per node.
  std::array<ParallelDimension, kRankDimensions> order{ParallelDimension::Tensor, ParallelDimension::Context,
                                                       ParallelDimension::Data, ParallelDimension::Pipeline};
  /// Sequences per optimizer step over all data-parallel replicas (workload.global_batch); the
  /// step runs m = global_batch / (d x micro-batch) micro-batches. 0: one micro-batch (m = 1).
  int64_t global_batch = 0;
  bool operator==(const ParallelConfig&) const = default;
  /// Whether the step needs the composed engine (stage programs): some degree above 1, or several
  /// micro-batches per step.
  [[nodiscard]] bool composed() const {
    return tensor * pipeline * context > 1 || expert > 1 || global_batch > 0;
  }
};

/// The order each pipeline stage runs its micro-batches' forward (F) and backward (B) passes in:
/// - gpipe: every forward, then every backward (Huang et al. 2019);
/// - 1f1b: p - s warm-up forwards on stage s, then one forward and one backward in turn, then the
///   remaining backwards (PipeDream-Flush, Narayanan et al. 2021; Megatron's default);
/// - interleaved: 1f1b over v model chunks per stage (Narayanan et al. 2021), v > 1;
/// - zero_bubble: ZB-H1 (Qi et al. 2023): the backward split into B (input gradient) and W
///   (weight gradient); W fills the tail's bubbles, with 1f1b's memory.
enum class PipelineSchedule : uint8_t { GPipe, OneFOneB, Interleaved, ZeroBubble };
constexpr std::string_view name_of(PipelineSchedule v) {
  switch (v) {
    case PipelineSchedule::GPipe:
      return "gpipe";
    case PipelineSchedule::OneFOneB:
      return "1f1b";
    case PipelineSchedule::Interleaved:
      return "interleaved";
    case PipelineSchedule::ZeroBubble:
      return "zero_bubble";
  }
  return {};
}

struct PipelineConfig {
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  /// Transformer blocks of each model chunk (p x v entries, in order); empty: as even as possible.
  std::vector<int> layers_per_stage{};
  /// Count the embedding and the loss (the head) as one block each when splitting (Megatron's
  /// --account-for-embedding-in-pipeline-split and ...-loss-...).
  bool account_for_embedding = false;
  /// Interleaved: micro-batches run through the chunks in groups of this many (Megatron-core's
  /// microbatch_group_size_per_vp_stage, in [p, m], the last group 0 or at least p); 0: the
  /// smallest such group (p when m is a multiple of p).
  int microbatch_group = 0;
  /// Without sequence parallelism (t > 1), each tensor rank sends 1/t of a pipeline message over
  /// its own NIC and the receiving stage all-gathers it over its tensor group (Megatron-LM's
  /// --scatter-gather-tensors-in-pipeline, on by default before Megatron-Core; Narayanan et al.
  /// 2021, section 4.1). With sequence parallelism each rank sends its 1/t already.
  bool scatter_gather = false;
  bool operator==(const PipelineConfig&) const = default;
};

/// none: a block's tensor-parallel collectives run between its GEMMs, on the critical path;
/// collective: each overlaps the GEMM next to it (TorchTitan's async TP, Megatron's userbuffers).
enum class TensorOverlap : uint8_t { None, Collective };
constexpr std::string_view name_of(TensorOverlap v) {
  switch (v) {
    case TensorOverlap::None:
      return "none";
    case TensorOverlap::Collective:
      return "collective";
  }
  return {};
}

struct TensorConfig {
  TensorOverlap overlap = TensorOverlap::None;
  bool operator==(const TensorConfig&) const = default;
};

struct SchemeConfig {
  Scheme scheme = Scheme::AllReduce;
  Mode mode = Mode::Sync;
  PsConfig ps;
  AllReduceConfig allreduce;
  FsdpConfig fsdp;
  Optimizer optimizer = Optimizer::Adam;
  /// training.grad_reduce_in_fp32: gradients accumulated and reduced in fp32 (4 bytes) rather than
  /// at the model's 16-bit precision, as Megatron-LM does under bf16 and TorchTitan's FSDP
  /// (mixed_precision_reduce: float32); scheme::reduced_share gives the factor.
  bool grad_reduce_fp32 = false;
  ParallelConfig parallel;
  PipelineConfig pipeline;
  TensorConfig tensor;
  bool operator==(const SchemeConfig&) const = default;
};

}  // namespace stepcast::scheme
