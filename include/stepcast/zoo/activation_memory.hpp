// Activation memory of a decoder-only transformer: the bytes of the tensors autograd saves for
// the backward pass, counted tensor by tensor from the block's architecture (TransformerShape)
// after Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models", section 4, for no, selective or full recomputation. No tensor or pipeline
// parallelism (t = p = 1). Units: bytes. docs/memory.md has the derivation.
//
//   const TransformerShape& s = *get_model("llama2-7b").transformer;
//   double bytes = activation_bytes(s, 2, workload::ActivationCheckpointing::Selective, 2.0);
//
// Notation: T = s b tokens (s = shape.seq_len, b = sequences), e = bytes of an activation
// element, e8 = bytes of a saved GEMM input's element (ElementBytes: e, but 1 in fp8),
// h = hidden, f = ffn_hidden (a MoE block's: each expert's width, expert_ffn_hidden if set),
// q = heads x head_dim (the query width, h unless head_dim is set), a = heads,
// g = kv_heads x head_dim (the K and V width, q without grouped-query attention), V = vocab,
// k = top_k, E = experts, S = shared_experts, L = layers.
// Dropout masks are 1 byte per element (PyTorch's bool mask), as Korthikanti counts them.
//
// Per block, no recomputation:
//   attention:  e T h   norm input
//             + e8 T h  Q/K/V projection input (the norm output)
//             + e T (q + 2g)   Q, K and V (after rotary embeddings)
//             + qk_norm: e T (q + g)   the q and k norms' inputs
//             + e8 T q  output projection input (= the attention output flash attention keeps)
//             + core:   standard attention: softmax output e a s T (GPT-2 layout: plus the
//                       attention-dropout mask a s T and its output e a s T);
//                       flash attention: the softmax log-sum-exp, fp32, 4 a T (the dropout mask
//                       is regenerated from the RNG seed, not stored), and when e8 != e its
//                       output e T q, which the output projection's own e8 copy does not replace
//             + GPT-2 layout: attention output dropout mask T h
//   MLP:        e T h   norm input
//             + dense: e8 T h input + e T f x (2 SwiGLU: gate output, up output; 1 GELU: up
//                      output) + e8 T f down projection input
//               MoE:   e T h router input + 4 E T router probabilities (fp32 softmax, as
//                      Mixtral) + k x [e8 T h expert input + inner] (every token's activations
//                      in its top_k experts, balanced routing or not; inner = e T f x (2 | 1)
//                      + e8 T f) + S x inner (the shared experts, on every token; their input
//                      is the router's, and when e8 != e their own e8 T h copy of it)
//             + GPT-2 layout: MLP output dropout mask T h
// The e8 terms are the saved inputs of the four projections Transformer Engine runs in fp8
// (QKV, output, FC1, FC2: Linear, LayerNormLinear and LayerNormMLP save the fp8 casts), with
// e8 = e in one type; docs/memory.md has the mapping.
// For Korthikanti's GPT block (LayerNorm, 4h GELU MLP, dropout, g = h, standard attention,
// e = 2) this is s b h (34 + 5 a s / h). SwiGLU counts the tensors a fused kernel keeps;
// unfused PyTorch also keeps silu(gate), e T f more. Hugging Face's eager attention copies K
// and V to all heads under GQA (repeat_kv); counted here at their own width g, as flash
// attention and SDPA keep them.
//
// A shape with dense_layers_first or moe_layers has two kinds of block: dense ones (f =
// ffn_hidden) and MoE ones (f = the experts' width); the whole model sums each block's own bytes.
// Multi-head latent attention keeps Q, K and V at their widths (heads x (qk_nope + qk_rope) for
// Q and K, heads x v_head_dim for V and the output projection's input) and each latent
// (q_lora_rank, kv_lora_rank) twice: its norm's input and its up projection's input, whole on
// every rank of a tensor group.
//
// Checkpointing:
//   none:      L x block + outside
//   selective: the attention core (scores, softmax, dropout) is recomputed: the block less its
//              core terms (for the GPT block, 34 s b h); L x that + outside
//   full:      each block's input e T h is stored, and one block's activations (no
//              recomputation) exist while it is recomputed in the backward:
//              L x e T h + block (the largest kind) + outside
// Outside the blocks, in every mode: the final norm input e T h, the LM head input e T h, plus
// for the GPT-2 layout the embedding dropout mask T h, and what the loss holds of the logits
// (loss_memory below; Korthikanti counts 4 s b V of fp32 logits). The embeddings' output is
// block 0's input, counted in the block; the token ids (8 bytes a token) are left out.
//
// The loss, with V' = V / t (the vocabulary split over a tensor group), c = 4 if the logits
// are upcast (e < 4) else 0, b = e if e < 4 else 0 (the cast back), N = 8 chunks; bytes a
// micro-batch holds (saved: from the loss's forward to its backward; the two moments: the most
// held at once in the loss's forward and at the start of its backward, saved included):
//   fp32_logits:   saved 4 T V' (log-softmax output);   forward (e + c + 4) T V' (logits,
//                  fp32 copy, log-softmax); backward 12 T V' (log-softmax, its gradient, the
//                  fp32 logits' gradient)
//   fp32_in_place: saved 4 T V' (softmax);  forward and backward (4 + b) T V' (the fp32 copy
//                  overwritten in place, beside the logits or the gradient cast back)
//   bf16_logits:   saved e T V';  forward 2 e T V';  backward 3 e T V'
//   chunked:       saved e T h (the head input's gradient, computed in the forward); forward
//                  4 T h + max((e + 12) T V' / N, b T h) (the fp32 gradient accumulator, and
//                  one chunk's fp32_logits path with its logits, or the accumulator's cast);
//                  backward e T h. T h whole on every rank of a tensor group (TorchTitan
//                  replicates the hidden states before chunking)
// The peak of a step is the largest of: everything saved plus the forward moment, everything
// saved plus the backward moment, and with full recomputation everything saved plus the block
// being recomputed (which overstates that moment slightly: the loss and the head have freed
// their tensors by then).
#pragma once

#include <cstdint>

#include "stepcast/workload/workload.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::zoo {

/// Bytes of a saved activation's element, by what the tensor is (the header's e and e8).
/// Implicit from one number: every tensor in one type, as in fp16, bf16 or fp32 training.
struct ElementBytes {
  double activation = 2;              ///< e: every saved tensor but the projections' inputs
  double gemm_input = 2;              ///< e8: the inputs the Q/K/V, output, FC1 and FC2 projections save
  ElementBytes(double element_bytes)  // NOLINT(google-explicit-constructor): one type for all
      : activation(element_bytes), gemm_input(element_bytes) {}
  ElementBytes(double activation_bytes, double gemm_input_bytes)
      : activation(activation_bytes), gemm_input(gemm_input_bytes) {}
};

/// The element sizes of `precision`'s recipe: its bytes_per_element for every tensor, and for
/// fp8 (Transformer Engine) the projections' inputs saved as their fp8 casts, 1 byte, the rest
/// in bf16.
[[nodiscard]] ElementBytes activation_element_bytes(workload::Precision precision);

/// Bytes of activations one worker holds at the peak of a step: what it stores for the backward
/// pass and what the loss holds for a moment at the end of the forward or the start of the
/// backward. `sequences` sequences of shape.seq_len tokens, activations of `element_bytes` bytes
/// (2 for fp16/bf16; activation_element_bytes(precision)), standard or flash attention, the loss as `loss`
/// computes it. The formula is in this header's comment. Throws Error with key "workload.seq_len" for
/// shape.seq_len < 1, "workload.batch_per_worker" for sequences < 1, "workload.transformer.<field>" for a
/// shape size < 1. Asserts both element sizes > 0.
[[nodiscard]] double activation_bytes(const TransformerShape& shape, int64_t sequences,
                                      workload::ActivationCheckpointing checkpointing,
                                      const ElementBytes& element_bytes, bool flash_attention = true,
                                      workload::LossMode loss = workload::LossMode::Fp32Logits);

/// The part of activation_bytes that one decoder block stores: with none or selective the
/// block's saved tensors as above; with full only its input, e T h (the recomputed block and
/// the tensors outside the blocks are in activation_bytes only). For a shape with dense and MoE
/// blocks (dense_layers_first, moe_layers), the larger of the two kinds: a bound on any one block
/// (a layout's memory counts each kind, block_activation_bytes_of_kind). Throws as
/// activation_bytes.
[[nodiscard]] double block_activation_bytes(const TransformerShape& shape, int64_t sequences,
                                            workload::ActivationCheckpointing checkpointing,
                                            const ElementBytes& element_bytes, bool flash_attention = true);

/// How a parallel layout splits a block's activations over a rank: a tensor group of `tensor`
/// ranks (with or without Megatron's sequence parallelism) and a context group of `context`
/// ranks (each keeps the activations of its s / c tokens).
struct ActivationSplit {
  int tensor = 1;
  bool sequence_parallel = false;
  int context = 1;
  /// Expert parallelism: the tokens the busiest GPU's experts receive over the mean, by which
  /// their activations grow (1: balanced, or no expert parallelism).
  double expert_load = 1;
};

/// One rank's share of block_activation_bytes under `split` (Korthikanti et al. 2022, sections
/// 4.1-4.2): with sequence parallelism everything / t; without, the norm inputs, the inputs of
/// the Q/K/V and first MLP linears and the dropout masks whole on every rank (10 s b h of
/// Korthikanti's 34) and the rest / t, so that for their GPT block it is s b h (10 + 24/t +
/// 5as/(ht)) with standard attention, s b h / t (34 + 5as/h) with sequence parallelism, and
/// without the attention core under selective recomputation; full recomputation keeps each
/// block's input, whole without sequence parallelism. Context parallelism divides the tokens.
/// The larger kind of block, as block_activation_bytes. Throws as block_activation_bytes.
[[nodiscard]] double block_activation_bytes(const TransformerShape& shape, int64_t sequences,
                                            workload::ActivationCheckpointing checkpointing,
                                            const ElementBytes& element_bytes, bool flash_attention,
                                            const ActivationSplit& split);

/// One rank's share under `split` of what one block of one kind stores: a mixture of experts'
/// block when `moe_block` (the shape must have MoE blocks), a dense block otherwise (the shape
/// must have dense blocks). Throws as block_activation_bytes.
[[nodiscard]] double block_activation_bytes_of_kind(const TransformerShape& shape, int64_t sequences,
                                                    workload::ActivationCheckpointing checkpointing,
                                                    const ElementBytes& element_bytes, bool flash_attention,
                                                    const ActivationSplit& split, bool moe_block);

/// Chunks of tokens the `chunked` loss takes (TorchTitan's ChunkedLossWrapper, num_chunks = 8).
inline constexpr int kLossChunks = 8;

/// Bytes the loss holds for one micro-batch (the formulas are in this header's comment). Each
/// moment includes `saved`, so both are at least `saved`.
struct LossMemory {
  double saved = 0;          ///< kept from the loss's forward until its backward
  double forward_peak = 0;   ///< the most held at once during the loss's forward
  double backward_peak = 0;  ///< the most held at once at the start of the loss's backward
  bool operator==(const LossMemory&) const = default;
};

/// What the loss of `loss` holds of `sequences` sequences on a rank of `split`: T = s b / c
/// tokens, the vocabulary split over the tensor group (V / t, Megatron's and TorchTitan's
/// vocab-parallel cross entropy), activations of element_bytes. Throws as activation_bytes.
[[nodiscard]] LossMemory loss_memory(const TransformerShape& shape, int64_t sequences,
                                     const ElementBytes& element_bytes, workload::LossMode loss,
                                     const ActivationSplit& split = {});

/// What the last pipeline stage keeps outside the blocks for one micro-batch under `split`,
/// from its forward until its backward: the final norm's and the LM head's inputs (e T h each,
/// whole without sequence parallelism) and what the loss saves (loss_memory(...).saved; for
/// fp32_logits the fp32 log-probabilities over the vocabulary split, 4 T V / t), T = s b / c.
[[nodiscard]] double head_activation_bytes(const TransformerShape& shape, int64_t sequences,
                                           const ElementBytes& element_bytes, const ActivationSplit& split,
                                           workload::LossMode loss = workload::LossMode::Fp32Logits);

}  // namespace stepcast::zoo
