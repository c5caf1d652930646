// The kernels one rank runs for each layer of a decoder (zoo::make_transformer), by shape: what
// `workload.compute: shapes` times one by one instead of spreading a step time by FLOPs. For each
// layer (embeddings, each block's attention and MLP or MoE, head) its forward kernels and its
// backward kernels (without recomputation, which the caller adds from the forward), under a
// tensor degree t, a context degree c and sequence parallelism, for a micro-batch of b sequences:
//
// - GEMMs (m, n, k: an m x k input times a k x n weight, 2 m n k FLOPs), m the tokens a rank
//   multiplies, b s / c (sequence parallelism gathers the sequence before each column-parallel
//   GEMM). Megatron's split: Q, K, V fused and column-parallel (n = (q + 2 g) / t, q = heads x
//   head_dim), the output projection row-parallel (k = q / t), gate and up fused and
//   column-parallel (n = 2 f / t), down row-parallel (k = f / t), the LM head vocabulary-parallel
//   (n = V / t, the vocabulary padded up to a multiple of t); a MoE's router whole, each routed
//   expert's GEMMs on b s / c x top_k / E tokens (balanced routing) and each shared expert's on
//   all b s / c, f then being the experts' width. Under expert parallelism (e, ETP) a rank runs
//   E / e experts, each on the rows its expert-parallel group routes to it, b s / c x top_k x e
//   ETP / (t E) (balanced), with f / ETP of each expert's width. Each forward GEMM's backward is two: the
//   input gradient (m, k, n) and the weight gradient (k, n, m).
// - The attention core (scores, softmax, context): with flash attention one kernel of FLOPs in the
//   zoo's accounting, 4 b (s / c) s q / t forward and twice that backward; without it what
//   Megatron-LM's unfused core runs, two batched GEMMs over the rank's b x heads / t heads, the
//   scores Q K^T (s / c, s, head_dim) and the context P V (s / c, head_dim, s), each with its two
//   backward products (the same FLOPs, 4 b (s / c) s q / t forward). Both operands of these are
//   activations, so an fp8 recipe leaves them in the training precision (`activations_only`).
// - Memory-bound kernels with the bytes they read and write (`element_bytes` per element):
//   norms, residual additions, the per-head q and k norms (Qwen3), rotary embeddings, the MLP's
//   activation, a MoE's token permutation, the embedding lookup, the cross-entropy of the
//   logits, and without flash attention the softmax of the s x s scores. Norms and residual
//   additions run on b s / (c t) tokens under sequence parallelism and on b s / c without.
// - With dropout (TransformerShape::dropout: GPT-2, Megatron-LM's GPT): the embeddings' dropout,
//   each residual addition fused with its branch's dropout (Megatron's bias-dropout-add: a
//   1-byte mask written forward and read backward), and without flash attention the attention
//   dropout on the scores (read, write, mask; flash attention drops inside its kernel).
// Biases are fused into their GEMMs.
//
//   auto kernels = decoder_kernels(get_model("llama3-8b"), {.micro_batch = 1, .tensor = 8});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::zoo {

enum class KernelKind : uint8_t { Gemm, Attention, MemoryBound };

/// Where a kernel of an attention layer sits: before the core (norm, Q/K/V projection, rotary),
/// the core, or after it (output projection, residual); other layers' kernels are all Before.
enum class AttentionPart : uint8_t { Before, Core, After };

struct Kernel {
  std::string name;  ///< e.g. "qkv", "qkv dgrad", "mlp norm"
  KernelKind kind = KernelKind::MemoryBound;
  int64_t m = 0, n = 0, k = 0;  ///< Gemm only
  double flops = 0;             ///< Gemm: 2 m n k; Attention: the core's FLOPs
  double bytes = 0;             ///< MemoryBound: bytes read and written
  int64_t count = 1;            ///< identical kernels launched one after another (a MoE's experts)
  /// Gemm only: independent GEMMs of one batched launch (the unfused attention core's heads), each
  /// m x n x k; `flops` counts them all.
  int64_t batch = 1;
  /// Gemm only: both operands are activations (the unfused attention core), which fp8 recipes
  /// (Transformer Engine's) leave in the training precision.
  bool activations_only = false;
  AttentionPart part = AttentionPart::Before;
  /// One of a MoE layer's routed-expert kernels (the GEMMs, their activation, the token
  /// permutation), whose time grows with the tokens the busiest expert GPU receives.
  bool routed_expert = false;
  bool operator==(const Kernel&) const = default;
};

/// The kernels of one layer of the model (model.layers order) on one rank.
struct LayerKernels {
  std::vector<Kernel> forward;
  std::vector<Kernel> backward;  ///< without recomputation
  bool operator==(const LayerKernels&) const = default;
};

struct KernelSplit {
  int64_t micro_batch = 1;         ///< sequences b
  int64_t tensor = 1;              ///< t
  int64_t context = 1;             ///< c; divides the sequence
  bool sequence_parallel = false;  ///< norms and residuals on s / t tokens (t > 1)
  double element_bytes = 2;        ///< of activations
  bool flash_attention = true;     ///< false: the softmax reads and writes the s x s scores
  /// Expert parallelism: e ranks split each MoE layer's experts (experts / e on a rank), each
  /// expert's weights over ETP ranks (expert_tensor; 0: t, Megatron's default).
  int64_t expert = 1;
  int64_t expert_tensor = 0;
};

/// One entry per layer of `model` (a decoder: model.transformer set; throws Error with key
/// "workload.model" otherwise).
[[nodiscard]] std::vector<LayerKernels> decoder_kernels(const ModelSpec& model, const KernelSplit& split);

}  // namespace stepcast::zoo
