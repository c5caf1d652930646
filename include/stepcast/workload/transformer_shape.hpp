// The shape of a decoder-only transformer: what its parameter layout, FLOPs, activation sizes and
// the parallel layouts' collectives follow from. A plain value: the zoo builds models from it
// (zoo/model_zoo.hpp: make_transformer checks it) and a Workload carries it in its ModelFacts, so
// the stage programs of tensor, context and pipeline parallelism can size their transfers.
//
//   TransformerShape s{.layers = 32, .hidden = 4096, .ffn_hidden = 14336, .heads = 32,
//                      .kv_heads = 8, .vocab = 128256, .seq_len = 8192};
#pragma once

#include <cstdint>

namespace stepcast::workload {

/// Normalization of a decoder block: LayerNorm with scale and bias (GPT-2) or RMSNorm, a scale
/// only (Llama, Mixtral).
enum class TransformerNorm : uint8_t { LayerNorm, RMSNorm };

/// Where a decoder gets token positions from: a learned table of `max_positions` rows added to
/// the token embeddings (GPT-2's wpe), or rotary embeddings applied to Q and K, which have no
/// parameters (Llama, Mixtral).
enum class PositionEncoding : uint8_t { Learned, Rotary };

/// Which Hugging Face module layout names the tensors. It changes names and, for GPT-2, the
/// number of tensors: GPT2LMHeadModel fuses Q, K and V into one c_attn tensor per block, which
/// matters to gradient bucketing. Llama is LlamaForCausalLM, and MixtralForCausalLM's
/// block_sparse_moe when experts > 1. GPT-2's layout has a GELU MLP and no experts.
enum class TransformerLayout : uint8_t { Llama, Gpt2 };

/// The shape of any decoder-only transformer. The defaults are the Llama family's choices
/// (RMSNorm, rotary positions, SwiGLU, no biases, untied head); the sizes have no default and
/// must be set. make_transformer checks them.
struct TransformerShape {
  int64_t layers = 0;      ///< decoder blocks
  int64_t hidden = 0;      ///< model width; heads x head_dim
  int64_t ffn_hidden = 0;  ///< MLP inner width (of each expert for MoE)
  int64_t heads = 0;       ///< query heads; must divide hidden
  int64_t kv_heads = 0;    ///< key/value heads (grouped-query attention when < heads); divides heads
  int64_t vocab = 0;
  bool swiglu = true;            ///< gate, up and down matrices (else up and down with GELU)
  bool tied_embeddings = false;  ///< the LM head reuses the token embedding (no parameters of its own)
  int64_t experts = 1;           ///< 1 = dense MLP; > 1 = mixture of experts with a router
  int64_t top_k = 1;             ///< experts each token is routed to
  int64_t seq_len = 0;           ///< tokens per sample (one sequence), for the FLOPs
  TransformerNorm norm = TransformerNorm::RMSNorm;
  bool linear_biases = false;  ///< attention and MLP linears have biases (GPT-2); the head never does
  PositionEncoding positions = PositionEncoding::Rotary;
  int64_t max_positions = 0;  ///< rows of the learned position table (Learned only); >= seq_len
  TransformerLayout layout = TransformerLayout::Llama;

  [[nodiscard]] int64_t head_dim() const { return heads > 0 ? hidden / heads : 0; }
  bool operator==(const TransformerShape&) const = default;
};

}  // namespace stepcast::workload
