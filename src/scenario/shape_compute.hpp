// Private to scenario/: workload.compute: shapes. Times every kernel of a decoder's layers
// (zoo/decoder_kernels.hpp) on one rank of the scenario's layout: GEMMs from cluster.gpu.gemm
// (or the spec sheet's roofline without one), the attention core at cluster.gpu.attention_flops
// (or cluster.gpu.peak_flops), memory-bound kernels at cluster.gpu.memory_bandwidth, each kernel
// plus cluster.gpu.kernel_overhead. A layer's backward holds what its checkpointing recomputes.
#pragma once

#include <string>
#include <vector>

#include "stepcast/scenario/scenario.hpp"
#include "stepcast/workload/workload.hpp"
#include "stepcast/zoo/decoder_kernels.hpp"

namespace stepcast::scenario::detail {

/// The time of one rank's layers, by model layer.
struct ShapeTimes {
  std::vector<double> forward;   ///< s per layer
  std::vector<double> backward;  ///< s per layer, its recomputation included
  workload::AttentionShares attention_forward{}, attention_backward{};
  /// Of a MoE layer's forward and backward (its recomputation included), the routed experts'
  /// kernels at balanced routing (0 without MoE layers).
  double experts_forward = 0, experts_backward = 0;
  std::vector<std::string> notes;  ///< GEMM shapes clamped to the table, one line each
};

/// The rates a kernel is timed at.
struct KernelRates {
  const cluster::GemmTable* gemm = nullptr;  ///< nullptr or empty: the roofline
  cluster::GemmDtype dtype = cluster::GemmDtype::BF16;
  double element_bytes = 2;       ///< bytes of an element the memory-bound kernels move
  double gemm_element_bytes = 2;  ///< bytes of a GEMM's input element (1 in fp8)
  double peak_flops = 0;          ///< FLOP/s of the GEMMs' roofline (the fp8 peak in fp8)
  /// The GEMMs of two activations (the unfused attention core): their dtype and roofline peak,
  /// the training precision's even in fp8 (zoo::Kernel::activations_only).
  cluster::GemmDtype activation_dtype = cluster::GemmDtype::BF16;
  double activation_peak_flops = 0;
  double attention_flops = 0;  ///< FLOP/s
  double memory_bw = 0;        ///< bytes/s
  double kernel_overhead = 0;  ///< s
};

[[nodiscard]] KernelRates kernel_rates(const Scenario& scenario);
/// The GEMM dtype of a workload precision.
[[nodiscard]] cluster::GemmDtype gemm_dtype(workload::Precision precision);

/// s of `kernel` (all `count` launches, each of its `batch` GEMMs) at `rates`, with one
/// cluster.gpu.kernel_overhead a launch; a GEMM clamped to the table adds a line to `notes`.
[[nodiscard]] double kernel_time(const zoo::Kernel& kernel, const KernelRates& rates,
                                 std::vector<std::string>& notes);

/// Every layer of `model` (a decoder) timed for one rank of `scenario`'s layout and micro-batch.
[[nodiscard]] ShapeTimes time_from_shapes(const zoo::ModelSpec& model, const Scenario& scenario);

}  // namespace stepcast::scenario::detail
