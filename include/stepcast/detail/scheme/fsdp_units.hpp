// Sharded data parallelism's structure, shared by the fine, coarse and analytic predictors: the
// units FSDP gathers together, and the plans of its three collectives (all-gather and
// reduce-scatter over each shard group, HSDP's all-reduce across groups).
//
//   auto units = fsdp_units(workload, scheme.fsdp.unit_blocks);   // forward order
//   FsdpPlans plans = make_fsdp_plans(cluster, scheme.fsdp);
#pragma once

#include <utility>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {

/// One FSDP unit: the parameters gathered together.
struct FsdpUnit {
  double bytes = 0;               ///< unsharded parameter bytes
  std::vector<int> tensors;       ///< workload tensors
  std::vector<int> forward_ops;   ///< ops that read them
  std::vector<int> backward_ops;  ///< ops that produce their gradients
};

/// Units of `workload` in forward order: consecutive model blocks (Workload::block_of_layer,
/// else each layer), `unit_blocks` at a time; a block's layers are those of the forward ops that
/// read its tensors. Embedding and head are blocks of their own in the zoo's decoders. Throws
/// Error (key "training.scheme") when a tensor has no forward op reading it or no backward op
/// producing it: FSDP gathers before a forward and reduces after a backward, and there is none.
[[nodiscard]] std::vector<FsdpUnit> fsdp_units(const workload::Workload& workload, int unit_blocks);

/// The bytes of `unit` one rank of a parallel layout holds: its dense tensors over the tensor
/// group and, with expert parallelism (e > 1), its experts, the rank's experts / e of each layer's,
/// over the expert-tensor group. Returns (dense, experts); experts is 0 with e = 1.
[[nodiscard]] std::pair<double, double> unit_bytes_on_rank(const workload::Workload& workload,
                                                           const FsdpUnit& unit,
                                                           const ParallelConfig& parallel);

/// Bytes a parameter all-gather moves per byte of the parameters as the workload holds them
/// (Tensor::bytes, FsdpUnit::bytes): 1, or with fsdp.fp8_all_gather the fp8 copy's 1 byte over
/// the bf16 weight's 2, 1/2. Every predictor sizes FSDP's and the distributed optimizer's
/// all-gathers by it (reduce-scatters and all-reduces move gradients, at 1). Asserts
/// fp8_all_gather only with precision fp8 (scheme::validate checks it).
[[nodiscard]] double gathered_share(const workload::Workload& workload, const FsdpConfig& fsdp);
/// The bytes a gradient reduction moves (and a gradient buffer holds) per byte of the parameters'
/// tensors: 4 / their element bytes with training.grad_reduce_in_fp32 (2 under bf16 or fp16, whose
/// Tensor bytes fp8 keeps too), 1 otherwise.
[[nodiscard]] double reduced_share(const workload::Workload& workload, const SchemeConfig& scheme);

/// Units in the order their backward runs (by their first backward op): unit_at_rank[j].
[[nodiscard]] std::vector<int> fsdp_backward_order(const std::vector<FsdpUnit>& units);

/// The three collectives of the scheme, as plans on a cluster (or a reduced network's links).
struct FsdpPlans {
  CollectivePlan gather;     ///< all-gather over each shard group; empty with groups of one
  CollectivePlan reduce;     ///< reduce-scatter over each shard group
  CollectivePlan replicate;  ///< hybrid: all-reduce across groups (ranks of the same index); else empty
  int shard_degree = 1;      ///< workers in a shard group
  int replicas = 1;          ///< shard groups
};
[[nodiscard]] FsdpPlans make_fsdp_plans(const cluster::Cluster& cluster, const FsdpConfig& fsdp);

}  // namespace stepcast::scheme
