// The shape of a decoder-only transformer: what its parameter layout, FLOPs, activation sizes and
// the parallel layouts' collectives follow from. A plain value: the zoo builds models from it
// (zoo/model_zoo.hpp: make_transformer checks it) and a Workload carries it in its ModelFacts, so
// the stage programs of tensor, context and pipeline parallelism can size their transfers.
//
//   TransformerShape s{.layers = 32, .hidden = 4096, .ffn_hidden = 14336, .heads = 32,
//                      .kv_heads = 8, .vocab = 128256, .seq_len = 8192};
//
// Widths the attention and the MLPs use follow from it: q_width() (heads x head_dim, hidden
// unless head_dim_override decouples them, as Qwen3's 32 heads of 128 on a hidden of 2048),
// kv_width(), expert_width(); and which blocks are mixtures of experts (is_moe_block).
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
  int64_t hidden = 0;      ///< model width (heads x head_dim unless head_dim_override is set)
  int64_t ffn_hidden = 0;  ///< a dense MLP's inner width (and each expert's unless expert_ffn_hidden)
  int64_t heads = 0;       ///< query heads; must divide hidden unless head_dim_override is set
  int64_t kv_heads = 0;    ///< key/value heads (grouped-query attention when < heads); divides heads
  int64_t vocab = 0;
  bool swiglu = true;            ///< gate, up and down matrices (else up and down with GELU)
  bool tied_embeddings = false;  ///< the LM head reuses the token embedding (no parameters of its own)
  int64_t experts = 1;           ///< 1 = dense MLP; > 1 = mixture of routed experts with a router
  int64_t top_k = 1;             ///< routed experts each token runs through
  int64_t seq_len = 0;           ///< tokens per sample (one sequence), for the FLOPs
  TransformerNorm norm = TransformerNorm::RMSNorm;
  bool linear_biases = false;  ///< attention and MLP linears have biases (GPT-2); the head never does
  PositionEncoding positions = PositionEncoding::Rotary;
  int64_t max_positions = 0;  ///< rows of the learned position table (Learned only); >= seq_len
  TransformerLayout layout = TransformerLayout::Llama;
  /// Width of a query, key and value head; 0: hidden / heads. Set where the attention is wider
  /// or narrower than the model (Qwen3-30B-A3B: hidden 2048, 32 heads of 128, so q_proj maps
  /// 2048 to 4096 and o_proj 4096 back to 2048).
  int64_t head_dim_override = 0;
  bool qk_norm = false;           ///< RMSNorm of head_dim on each query and key head (Qwen3's q_norm, k_norm)
  int64_t expert_ffn_hidden = 0;  ///< each routed and shared expert's inner width; 0: ffn_hidden
  /// Always-active expert MLPs beside the routed ones in each MoE block (DeepSeek's shared
  /// experts), of expert_width() each; every token runs through all of them.
  int64_t shared_experts = 0;
  /// The first blocks have a dense MLP of ffn_hidden instead of experts (DeepSeek-V3: 3 of 61).
  int64_t dense_layers_first = 0;

  /// The effective head width: head_dim_override, or hidden / heads.
  [[nodiscard]] int64_t head_dim() const {
    if (head_dim_override > 0) return head_dim_override;
    return heads > 0 ? hidden / heads : 0;
  }
  /// Width of the queries (and of the attention output the o projection reads): heads x head_dim.
  [[nodiscard]] int64_t q_width() const { return heads * head_dim(); }
  /// Width of the keys and of the values: kv_heads x head_dim.
  [[nodiscard]] int64_t kv_width() const { return kv_heads * head_dim(); }
  /// Inner width of one expert MLP (routed or shared).
  [[nodiscard]] int64_t expert_width() const {
    return expert_ffn_hidden > 0 ? expert_ffn_hidden : ffn_hidden;
  }
  /// Blocks whose MLP is a mixture of experts: all but the first dense_layers_first when
  /// experts > 1, none otherwise.
  [[nodiscard]] int64_t moe_blocks() const { return experts > 1 ? layers - dense_layers_first : 0; }
  /// Whether block `block` (0-based) is a mixture of experts.
  [[nodiscard]] bool is_moe_block(int64_t block) const { return experts > 1 && block >= dense_layers_first; }
  bool operator==(const TransformerShape&) const = default;
};

}  // namespace stepcast::workload
