// Per-GPU memory of data-parallel training: the model states (parameters, gradients, optimizer
// state) one worker holds under each scheme, as DeepSpeed counts them (ZeRO paper, Rajbhandari
// et al. 2020, sections 3.1 and 5), and the parameters and gradients FSDP holds unsharded while
// a unit computes. Pure functions of numbers; activations are zoo::activation_bytes. Units:
// bytes, parameters in elements. docs/memory.md has the tables.
//
//   scheme::SchemeConfig zero3;
//   zero3.scheme = scheme::Scheme::Fsdp;   // sharding full, Adam by default
//   Memory m = model_state_memory(7.5e9, workload::Precision::FP16, zero3, 64, 8);
//   // m.total() == 16 x 7.5e9 / 64 = 1.875e9 bytes
#pragma once

#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::predict {

/// Bytes one GPU holds for training, by kind.
struct Memory {
  double parameters = 0;   ///< bytes of parameters in the compute precision
  double gradients = 0;    ///< bytes of gradients
  double optimizer = 0;    ///< bytes of optimizer state, the fp32 master copy of mixed precision included
  double activations = 0;  ///< bytes of activations saved for the backward pass
  double buffers = 0;      ///< bytes of transient buffers (FSDP's gathered units)
  [[nodiscard]] double total() const;
  bool operator==(const Memory&) const = default;
};

/// Model states per worker: parameters, gradients and optimizer state (activations and buffers
/// 0), DeepSpeed's accounting (ZeRO paper, Rajbhandari et al. 2020, sections 3.1 and 5).
///
/// Bytes per parameter, before sharding:
///   fp16/bf16 (mixed precision): weights 2, gradients 2, optimizer K = fp32 master copy 4 plus
///     fp32 moments: adam 4 + 4 + 4 = 12, momentum 4 + 4 = 8, sgd 4 (the master copy alone);
///   fp32: weights 4, gradients 4, optimizer adam 8 (two moments), momentum 4, sgd 0.
/// Sharding divides by D = scheme::fsdp_shard_degree(scheme.fsdp, workers, workers_per_node):
///   all_reduce: nothing sharded, every worker a full replica;
///   parameter_server: a worker holds full parameters and gradients; the optimizer state lives
///     on the servers, which apply the gradients, so the worker's optimizer is 0;
///   fsdp optimizer (ZeRO-1): optimizer / D;
///   fsdp grad_op (ZeRO-2): optimizer and gradients / D; the parameters are whole from the
///     forward to the end of the backward (SHARD_GRAD_OP), so whole at the peak;
///   fsdp full (ZeRO-3) and hybrid: all three / D, if reshard_after_forward; without it each
///     unit's gathered parameters stay until its backward, so at the peak (the end of the
///     forward) every parameter is held whole, as with grad_op, and only gradients and
///     optimizer are divided.
/// fp8 with scheme.fsdp.fp8_all_gather: a whole copy is gathered as the fp8 copy only, so where
/// the parameters are held whole (grad_op, full without reshard_after_forward, optimizer) they
/// are the bf16 shard plus the whole fp8 copy, 2 / D + 1 bytes each, instead of 3.
/// Real division: FSDP pads each flat parameter to a multiple of D elements, at most D - 1
/// elements per unit, which is negligible against the parameters and left out.
/// Asserts parameters >= 0 and workers, workers_per_node and D >= 1 (scenario/ checks them).
[[nodiscard]] Memory model_state_memory(double parameters, workload::Precision precision,
                                        const scheme::SchemeConfig& scheme, int workers, int workers_per_node);

/// Bytes of the unsharded copies FSDP holds besides the model states, at the peak of a step,
/// for the largest unit (`largest_unit_parameters` elements; the unit of unit_blocks blocks, or
/// the embedding or head when larger), elements in the compute precision (2 bytes for
/// fp16/bf16, 4 for fp32):
///   fsdp full or hybrid with reshard_after_forward: the gathered parameters of prefetch + 1
///     units (the one computing and those prefetched) plus the unsharded gradient of one unit
///     before its reduce-scatter: (prefetch + 2) x unit x element bytes; with fp8 and
///     scheme.fsdp.fp8_all_gather the gathered parameters are 1 byte each (the gradient stays
///     bf16): (prefetch + 1) x unit + unit x 2 bytes;
///   fsdp grad_op, and full or hybrid without reshard_after_forward: the unsharded gradient of
///     one unit only, unit x element bytes (the parameters are already counted whole by
///     model_state_memory);
///   fsdp optimizer (ZeRO-1), all_reduce, parameter_server: 0 (parameters and gradients are
///     held whole already; DDP's gradient buckets, which copy the gradients unless
///     gradient_as_bucket_view, are not counted).
/// 0 as well when D = scheme::fsdp_shard_degree(...) is 1: a shard is then the whole unit, and
/// FSDP computes on it and reduces nothing, so there is no second copy.
/// Asserts largest_unit_parameters >= 0, prefetch >= 0 and workers, workers_per_node >= 1.
[[nodiscard]] double gathered_buffer_bytes(double largest_unit_parameters, workload::Precision precision,
                                           const scheme::SchemeConfig& scheme, int workers, int workers_per_node);

}  // namespace stepcast::predict
