// Where each rank sits in a parallel layout: its (tensor, context, data, pipeline) coordinates
// and the groups it communicates in (the expert groups folded over each stage's t c d ranks). The one
// mapping from ranks to coordinates; every exchange, plan and report asks it. Megatron-LM's rule:
// with the order's dimensions D0 (fastest) .. D3 and sizes n0 .. n3, rank = x0 + n0 (x1 + n1 (x2 +
// n2 x3)); a group of dimension D holds the ranks that agree on every other coordinate, in the
// order of their D coordinate.
//
//   RankLayout layout(config.parallel, 64);          // t 8, p 4: d = 2
//   layout.coordinates(19);                           // {tensor 3, context 0, data 0, pipeline 1}
//   layout.group(ParallelDimension::Tensor, 19);      // ranks 16 .. 23
#pragma once

#include <array>
#include <string>
#include <vector>

#include "stepcast/scheme/scheme_config.hpp"

namespace stepcast::scheme {

struct RankCoordinates {
  std::array<int, kRankDimensions> at{};  ///< indexed by ParallelDimension (the rank dimensions)
  [[nodiscard]] int operator[](ParallelDimension d) const { return at[static_cast<size_t>(d)]; }
  bool operator==(const RankCoordinates&) const = default;
};

class RankLayout {
 public:
  /// `workers` = t c d p. Asserts that the degrees divide the workers and that the order names
  /// every dimension once (validate() reports both as bad input first). `data_shard`: with hybrid
  /// sharding, the gradient group's ranks a shard group holds (it divides d x c; hybrid_shard_ranks);
  /// 0: the whole gradient group, no replicas.
  RankLayout(const ParallelConfig& parallel, int workers, int data_shard = 0);

  [[nodiscard]] int workers() const { return workers_; }
  /// The degree of a dimension (d is workers / (t c p); expert data t c d / (e x ETP)).
  [[nodiscard]] int size(ParallelDimension d) const { return size_[static_cast<size_t>(d)]; }
  [[nodiscard]] RankCoordinates coordinates(int rank) const;
  [[nodiscard]] int rank(const RankCoordinates& at) const;
  /// The ranks of `rank`'s group along `d`, in the order of their coordinate along d. The expert
  /// groups fold over the stage's ranks (expert_fold): ETP consecutive ones form an expert-tensor
  /// group, e such blocks an expert group (its members ETP apart), and the ranks at the same place
  /// in every expert group an expert-data group. With ETP = t (the default) an expert-tensor group
  /// is a tensor group and an expert group holds e consecutive ranks of a gradient group.
  [[nodiscard]] std::vector<int> group(ParallelDimension d, int rank) const;
  /// Every group along `d` whose members are in pipeline stage `stage`, ordered by their lowest
  /// rank; all stages' groups when stage < 0. (Pipeline groups span the stages: stage is ignored.)
  [[nodiscard]] std::vector<std::vector<int>> groups(ParallelDimension d, int stage = -1) const;
  /// The ranks that hold the same parameters and reduce their gradients together: data x context.
  [[nodiscard]] std::vector<int> gradient_group(int rank) const;
  /// All gradient groups of pipeline stage `stage`, ordered by their lowest rank.
  [[nodiscard]] std::vector<std::vector<int>> gradient_groups(int stage) const;
  /// The ranks the Data dimension's collectives run in: the gradient group, or with hybrid
  /// sharding its shard group (data_shard consecutive members of it in rank order, the ranks of a
  /// node first as NCCL orders them). A replica group (DataReplicate) holds the members at one
  /// place in every shard group of the gradient group.
  [[nodiscard]] std::vector<int> data_group(int rank) const;
  /// All of stage `stage`'s data groups, ordered by their lowest rank.
  [[nodiscard]] std::vector<std::vector<int>> data_groups(int stage) const;
  /// Ranks of a data group: data_shard, or d x c.
  [[nodiscard]] int data_group_size() const { return shard_; }
  /// "tp4 cp1 pp8 vp12 dp336": the layout as the table prints it; with hybrid sharding's shard
  /// groups of `data_shard` ranks, "dp32 (hsdp 4x8)": 4 replicas of shard groups of 8.
  [[nodiscard]] static std::string describe(const ParallelConfig& parallel, int workers, int data_shard = 0);

 private:
  /// Stage `stage`'s ranks in the order the expert layout folds them (Megatron's parallel
  /// folding): tensor coordinate fastest, then the place in the rank-ordered gradient group.
  [[nodiscard]] std::vector<int> expert_fold(int stage) const;
  /// The ranks, ascending, whose coordinate along each rank dimension is fixed[d] (any where -1).
  [[nodiscard]] std::vector<int> ranks_where(const std::array<int, kRankDimensions>& fixed) const;
  /// The replica group of `rank` (DataReplicate).
  [[nodiscard]] std::vector<int> replica_group(int rank) const;
  /// The members of the expert-kind group of dimension `d` holding fold[at].
  [[nodiscard]] std::vector<int> expert_members(ParallelDimension d, const std::vector<int>& fold,
                                                int at) const;

  int workers_;
  int shard_;  ///< ranks of a data group (data_shard, or d x c)
  std::array<int, kParallelDimensions> size_{};
  std::array<int, kRankDimensions> stride_{};  ///< rank distance of one step along a dimension
};

/// The data-parallel degree d = workers / (t c p), 0 when that does not divide.
[[nodiscard]] int data_parallel_degree(const ParallelConfig& parallel, int workers);

/// Hybrid sharding in a parallel layout (fsdp, sharding hybrid, composed): the gradient group's
/// ranks a unit is sharded over: training.fsdp.shard_group, or with 0 those of rank 0's gradient
/// group that sit in its node (at least 1). 0 for every other scheme. Not checked: validate()
/// reports one that does not divide d x c.
[[nodiscard]] int hybrid_shard_ranks(const SchemeConfig& scheme, int workers, int workers_per_node);

/// Micro-batches per step: global_batch / (d x micro_batch), or 1 without a global batch.
/// Assumes they divide (validate() checks).
[[nodiscard]] int micro_batches(const ParallelConfig& parallel, int workers, int micro_batch);

/// Megatron-core's micro-batch group of the interleaved schedule (microbatch_group_size_per_vp_stage)
/// for m micro-batches on p stages: `configured` (pipeline.microbatch_group) when it is valid, that
/// is in [p, m] with a last group m mod g of 0 or at least p (a shorter one would wait on itself);
/// with 0, the smallest valid group (p when m is a multiple of p). 0 when there is none (m < p, or
/// a configured group out of those bounds).
[[nodiscard]] int interleaved_group(int configured, int p, int64_t m);

/// Samples (sequences) each worker's step accounts for, so that summed over the workers they are
/// the step's batch: `batch_per_worker`, or under a composed layout the d replicas' m
/// micro-batches of `batch_per_worker` sequences shared by each replica's t c p ranks.
[[nodiscard]] double samples_per_worker_step(const ParallelConfig& parallel, int workers, int batch_per_worker);

}  // namespace stepcast::scheme
