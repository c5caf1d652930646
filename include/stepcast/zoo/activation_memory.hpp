// Activation memory of a decoder-only transformer: the bytes of the tensors autograd saves for
// the backward pass, counted tensor by tensor from the block's architecture (TransformerShape)
// after Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models", section 4, for no, selective or full recomputation. No tensor or pipeline
// parallelism (t = p = 1). Units: bytes. docs/memory.md has the derivation.
//
//   const TransformerShape& s = *get_model("llama2-7b").transformer;
//   double bytes = activation_bytes(s, 2, workload::ActivationCheckpointing::Selective, 2.0);
//
// Notation: T = s b tokens (s = shape.seq_len, b = sequences), e = element_bytes of an
// activation, h = hidden, f = ffn_hidden, a = heads, g = kv_heads x head_dim (the K and V
// width, h without grouped-query attention), V = vocab, k = top_k, E = experts, L = layers.
// Dropout masks are 1 byte per element (PyTorch's bool mask), as Korthikanti counts them.
//
// Per block, no recomputation:
//   attention:  e T h   norm input
//             + e T h   Q/K/V projection input (the norm output)
//             + e T (h + 2g)   Q, K and V (after rotary embeddings)
//             + e T h   output projection input (= the attention output flash attention keeps)
//             + core:   standard attention: softmax output e a s T (GPT-2 layout: plus the
//                       attention-dropout mask a s T and its output e a s T);
//                       flash attention: the softmax log-sum-exp, fp32, 4 a T (the dropout mask
//                       is regenerated from the RNG seed, not stored)
//             + GPT-2 layout: attention output dropout mask T h
//   MLP:        e T h   norm input
//             + dense: e T h input + e T f x (3 SwiGLU: gate output, up output, down
//                      projection input; 2 GELU: up output, down projection input)
//               MoE:   e T h router input + 4 E T router probabilities (fp32 softmax, as
//                      Mixtral) + k x [e T h expert input + e T f x (3 | 2)] (every token's
//                      activations in its top_k experts, balanced routing or not)
//             + GPT-2 layout: MLP output dropout mask T h
// For Korthikanti's GPT block (LayerNorm, 4h GELU MLP, dropout, g = h, standard attention,
// e = 2) this is s b h (34 + 5 a s / h). SwiGLU counts the tensors a fused kernel keeps;
// unfused PyTorch also keeps silu(gate), e T f more. Hugging Face's eager attention copies K
// and V to all heads under GQA (repeat_kv); counted here at their own width g, as flash
// attention and SDPA keep them.
//
// Checkpointing:
//   none:      L x block + outside
//   selective: the attention core (scores, softmax, dropout) is recomputed: the block less its
//              core terms (for the GPT block, 34 s b h); L x that + outside
//   full:      each block's input e T h is stored, and one block's activations (no
//              recomputation) exist while it is recomputed in the backward:
//              L x e T h + block + outside
// Outside the blocks, in every mode: the final norm input e T h, the LM head input e T h and
// the logits 4 T V in fp32 (Hugging Face upcasts the logits to fp32 for the loss; Korthikanti
// counts 4 s b V too), plus for the GPT-2 layout the embedding dropout mask T h. The embeddings'
// output is block 0's input, counted in the block; the token ids (8 bytes a token) are left
// out. Summing the logits with full's recomputed block overstates full's peak slightly: the
// logits are freed before the first block is recomputed.
#pragma once

#include <cstdint>

#include "stepcast/workload/workload.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::zoo {

/// Bytes of activations one worker stores for the backward pass at the peak of a step:
/// `sequences` sequences of shape.seq_len tokens, activations of `element_bytes` bytes (2 for
/// fp16/bf16), standard or flash attention. The formula is in this header's comment.
/// Throws Error with key "workload.seq_len" for shape.seq_len < 1, "workload.batch_per_worker"
/// for sequences < 1, "workload.transformer.<field>" for a shape size < 1. Asserts
/// element_bytes > 0.
[[nodiscard]] double activation_bytes(const TransformerShape& shape, int64_t sequences,
                                      workload::ActivationCheckpointing checkpointing, double element_bytes,
                                      bool flash_attention = true);

/// The part of activation_bytes that one decoder block stores: with none or selective the
/// block's saved tensors as above; with full only its input, e T h (the recomputed block and
/// the tensors outside the blocks are in activation_bytes only). Throws as activation_bytes.
[[nodiscard]] double block_activation_bytes(const TransformerShape& shape, int64_t sequences,
                                            workload::ActivationCheckpointing checkpointing,
                                            double element_bytes, bool flash_attention = true);

/// How a parallel layout splits a block's activations over a rank: a tensor group of `tensor`
/// ranks (with or without Megatron's sequence parallelism) and a context group of `context`
/// ranks (each keeps the activations of its s / c tokens).
struct ActivationSplit {
  int tensor = 1;
  bool sequence_parallel = false;
  int context = 1;
};

/// One rank's share of block_activation_bytes under `split` (Korthikanti et al. 2022, sections
/// 4.1-4.2): with sequence parallelism everything / t; without, the norm inputs, the inputs of
/// the Q/K/V and first MLP linears and the dropout masks whole on every rank (10 s b h of
/// Korthikanti's 34) and the rest / t, so that for their GPT block it is s b h (10 + 24/t +
/// 5as/(ht)) with standard attention, s b h / t (34 + 5as/h) with sequence parallelism, and
/// without the attention core under selective recomputation; full recomputation keeps each
/// block's input, whole without sequence parallelism. Context parallelism divides the tokens.
/// Throws as block_activation_bytes.
[[nodiscard]] double block_activation_bytes(const TransformerShape& shape, int64_t sequences,
                                            workload::ActivationCheckpointing checkpointing, double element_bytes,
                                            bool flash_attention, const ActivationSplit& split);

/// What the last pipeline stage holds outside the blocks for one micro-batch under `split`: the
/// final norm's and the LM head's inputs (e T h each, whole without sequence parallelism) and the
/// fp32 logits split over the vocabulary (4 T V / t), T = s b / c tokens.
[[nodiscard]] double head_activation_bytes(const TransformerShape& shape, int64_t sequences, double element_bytes,
                                           const ActivationSplit& split);

}  // namespace stepcast::zoo
