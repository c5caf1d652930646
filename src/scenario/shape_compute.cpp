#include "scenario/shape_compute.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace stepcast::scenario::detail {

cluster::GemmDtype gemm_dtype(workload::Precision precision) {
  switch (precision) {
    case workload::Precision::FP32:
      return cluster::GemmDtype::FP32;
    case workload::Precision::FP16:
      return cluster::GemmDtype::FP16;
    case workload::Precision::BF16:
      return cluster::GemmDtype::BF16;
    case workload::Precision::FP8:
      return cluster::GemmDtype::FP8;
  }
  return cluster::GemmDtype::FP32;
}

KernelRates kernel_rates(const Scenario& scenario) {
  const cluster::ClusterSpec& c = scenario.cluster;
  const bool fp8 = scenario.workload.precision == workload::Precision::FP8;
  return {.gemm = &c.gemm,
          .dtype = gemm_dtype(scenario.workload.precision),
          .element_bytes = workload::bytes_per_element(scenario.workload.precision),
          .gemm_element_bytes = fp8 ? 1.0 : workload::bytes_per_element(scenario.workload.precision),
          .peak_flops = fp8 ? c.gpu_peak_flops_fp8 : c.gpu_peak_flops,
          .activation_dtype = fp8 ? cluster::GemmDtype::BF16 : gemm_dtype(scenario.workload.precision),
          .activation_peak_flops = c.gpu_peak_flops,
          .attention_flops = c.gpu_attention_flops > 0 ? c.gpu_attention_flops : c.gpu_peak_flops,
          .memory_bw = c.gpu_memory_bw,
          .kernel_overhead = c.gpu_kernel_overhead};
}

double kernel_time(const zoo::Kernel& kernel, const KernelRates& rates, std::vector<std::string>& notes) {
  double one = 0;
  switch (kernel.kind) {
    case zoo::KernelKind::Gemm: {
      const cluster::GemmDtype dtype = kernel.activations_only ? rates.activation_dtype : rates.dtype;
      if (rates.gemm == nullptr || rates.gemm->empty()) {
        one = kernel.activations_only
                  ? cluster::gemm_roofline_time(kernel.m, kernel.n, kernel.k, rates.element_bytes,
                                                rates.activation_peak_flops, rates.memory_bw)
                  : cluster::gemm_roofline_time(kernel.m, kernel.n, kernel.k, rates.gemm_element_bytes,
                                                rates.peak_flops, rates.memory_bw);
      } else {
        const cluster::GemmLookup lookup =
            cluster::gemm_time(*rates.gemm, kernel.m, kernel.n, kernel.k, dtype);
        one = lookup.seconds;
        if (lookup.clamped) {
          std::string note = fmt::format(
              "GEMM m={} n={} k={} {} ({}) is outside the table {} (cluster.gpu.gemm): timed at the rate of "
              "its nearest edge, not extrapolated",
              kernel.m, kernel.n, kernel.k, cluster::to_string(dtype), kernel.name, rates.gemm->file);
          if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(std::move(note));
        }
      }
      one *= static_cast<double>(kernel.batch);
      break;
    }
    case zoo::KernelKind::Attention:
      one = kernel.flops / rates.attention_flops;
      break;
    case zoo::KernelKind::MemoryBound:
      one = kernel.bytes / rates.memory_bw;
      break;
  }
  return static_cast<double>(kernel.count) * (one + rates.kernel_overhead);
}

namespace {

/// s of a pass's kernels in each part of an attention layer (before, core, after).
struct PartTimes {
  double before = 0, core = 0, after = 0;
  double experts = 0;  ///< of the total, a MoE layer's routed experts' kernels
  [[nodiscard]] double total() const { return before + core + after; }
  [[nodiscard]] workload::AttentionShares shares() const {
    return {before / total(), core / total(), after / total()};
  }
};

PartTimes pass_time(const std::vector<zoo::Kernel>& kernels, const KernelRates& rates,
                    std::vector<std::string>& notes) {
  PartTimes out;
  for (const zoo::Kernel& kernel : kernels) {
    const double seconds = kernel_time(kernel, rates, notes);
    if (kernel.routed_expert) out.experts += seconds;
    switch (kernel.part) {
      case zoo::AttentionPart::Before:
        out.before += seconds;
        break;
      case zoo::AttentionPart::Core:
        out.core += seconds;
        break;
      case zoo::AttentionPart::After:
        out.after += seconds;
        break;
    }
  }
  return out;
}

}  // namespace

ShapeTimes time_from_shapes(const zoo::ModelSpec& model, const Scenario& scenario) {
  const scheme::ParallelConfig& parallel = scenario.scheme.parallel;
  const KernelRates rates = kernel_rates(scenario);
  const std::vector<zoo::LayerKernels> layers =
      zoo::decoder_kernels(model, {.micro_batch = scenario.workload.batch_per_worker,
                                   .tensor = parallel.tensor,
                                   .context = parallel.context,
                                   .sequence_parallel = parallel.sequence && parallel.tensor > 1,
                                   .element_bytes = rates.element_bytes,
                                   .flash_attention = scenario.workload.flash_attention,
                                   .expert = parallel.expert,
                                   .expert_tensor = parallel.expert_tensor_degree()});
  ShapeTimes out;
  bool first_attention = true, first_moe = true;
  for (size_t l = 0; l < layers.size(); ++l) {
    const PartTimes forward = pass_time(layers[l].forward, rates, out.notes);
    const PartTimes backward = pass_time(layers[l].backward, rates, out.notes);
    const std::string& name = model.layers[l].name;
    const bool in_block = name != "embeddings" && name != "head";
    double recompute = 0, recomputed_experts = 0;
    switch (scenario.workload.checkpointing) {
      case workload::ActivationCheckpointing::None:
        break;
      case workload::ActivationCheckpointing::Selective:
        // The attention core's forward again (Korthikanti et al. 2022), as zoo::recompute_flops.
        recompute = forward.core;
        break;
      case workload::ActivationCheckpointing::Full:
        if (in_block) {
          recompute = forward.total();
          recomputed_experts = forward.experts;
        }
        break;
    }
    out.forward.push_back(forward.total());
    out.backward.push_back(backward.total() + recompute);
    if (forward.experts > 0 && first_moe) {
      // Every MoE block has the same shape: the first one's routed experts' share is every one's.
      first_moe = false;
      out.experts_forward = forward.experts / forward.total();
      out.experts_backward = (backward.experts + recomputed_experts) / (backward.total() + recompute);
    }
    if (name.ends_with(".attention") && first_attention) {
      // Every block has the same shape: the first one's shares are every block's.
      first_attention = false;
      out.attention_forward = forward.shares();
      // Of the backward proper: stage_programs.cpp puts the recomputation with the core itself.
      out.attention_backward = backward.shares();
    }
  }
  return out;
}

}  // namespace stepcast::scenario::detail
