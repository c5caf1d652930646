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
// key_width(), value_width(), attention_out_width(), ring_kv_width() (what context-parallel ring
// attention passes), attention_weights(), expert_width(); and which blocks are mixtures of
// experts (is_moe_block: dense_layers_first, or the moe_layers pattern).
//
// Multi-head latent attention (DeepSeek-V2/V3) when kv_lora_rank > 0: queries through an
// optional low-rank q_lora_rank bottleneck, keys and values up-projected from one shared latent
// of kv_lora_rank plus a rotary key of qk_rope_head_dim shared by all heads; each head's query
// and key are qk_nope_head_dim + qk_rope_head_dim wide, its value v_head_dim.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>

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

/// Most decoder blocks a moe_layers pattern can name (workload.transformer.moe_layers).
inline constexpr int64_t kMaxPatternBlocks = 1024;
/// Which blocks of a decoder are mixtures of experts: bit b for block b (0-based).
using BlockSet = std::bitset<kMaxPatternBlocks>;

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
  /// Dropout after the embeddings, on the attention probabilities and on each block's two
  /// residual branches (GPT-2; Megatron-LM's GPT with its default --attention-dropout and
  /// --hidden-dropout of 0.1); Llama-style decoders train without. Its masks are activations
  /// (zoo/activation_memory.hpp) and its kernels memory-bound work (zoo/decoder_kernels.hpp).
  bool dropout = false;
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
  /// Which blocks are mixtures of experts, when given (workload.transformer.moe_layers: a range,
  /// a list, "every N"); unset ("all"): every block from dense_layers_first on. Bits at and above
  /// `layers` are clear (validate). Given with dense_layers_first > 0, it must be exactly blocks
  /// dense_layers_first to layers - 1 (validate), so that both say the same.
  std::optional<BlockSet> moe_layers = std::nullopt;
  /// Multi-head latent attention (DeepSeek-V2/V3): the query's low-rank width (q_a_proj,
  /// q_a_layernorm, q_b_proj); 0: one q projection from the model width. MLA only.
  int64_t q_lora_rank = 0;
  /// Width of the latent the keys and values are up-projected from (kv_a_proj_with_mqa,
  /// kv_a_layernorm, kv_b_proj); 0: no MLA (the attention of heads, kv_heads and head_dim).
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;  ///< MLA: each head's query and key part without rotary embedding
  int64_t qk_rope_head_dim = 0;  ///< MLA: each head's rotary query part; the rotary key, shared by all heads
  int64_t v_head_dim = 0;        ///< MLA: each head's value width (and the o projection's input per head)

  /// Whether the attention is multi-head latent attention (kv_lora_rank > 0).
  [[nodiscard]] bool mla() const { return kv_lora_rank > 0; }
  /// The effective head width: head_dim_override, or hidden / heads. Without MLA.
  [[nodiscard]] int64_t head_dim() const {
    if (head_dim_override > 0) return head_dim_override;
    return heads > 0 ? hidden / heads : 0;
  }
  /// Width of one query (and key) head: head_dim(), or qk_nope_head_dim + qk_rope_head_dim (MLA).
  [[nodiscard]] int64_t qk_head_dim() const {
    return mla() ? qk_nope_head_dim + qk_rope_head_dim : head_dim();
  }
  /// Width of the queries: heads x qk_head_dim().
  [[nodiscard]] int64_t q_width() const { return heads * qk_head_dim(); }
  /// Width of the keys one token has: kv_heads x head_dim, or heads x qk_head_dim() (MLA: every
  /// head's key, up-projected from the latent, with the shared rotary part repeated).
  [[nodiscard]] int64_t key_width() const { return mla() ? heads * qk_head_dim() : kv_heads * head_dim(); }
  /// Width of the values one token has: kv_heads x head_dim, or heads x v_head_dim (MLA).
  [[nodiscard]] int64_t value_width() const { return mla() ? heads * v_head_dim : kv_heads * head_dim(); }
  /// Width of the attention output the o projection reads: q_width(), or heads x v_head_dim (MLA).
  [[nodiscard]] int64_t attention_out_width() const { return mla() ? heads * v_head_dim : q_width(); }
  /// Elements per token that context-parallel ring attention passes: K and V (key_width() +
  /// value_width()), or for MLA the latent and the shared rotary key (kv_lora_rank +
  /// qk_rope_head_dim), from which each rank up-projects its heads' keys and values.
  [[nodiscard]] int64_t ring_kv_width() const {
    return mla() ? kv_lora_rank + qk_rope_head_dim : key_width() + value_width();
  }
  /// Weights of one block's attention, its input norm left out: the q, k, v and o matrices (and
  /// Qwen3's q and k norms), or MLA's q_a_proj, q_a_layernorm, q_b_proj (q_proj without
  /// q_lora_rank), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj and o_proj. No biases, and each
  /// norm one weight vector (RMSNorm's); DeepSeek-V3: 187,107,328.
  [[nodiscard]] int64_t attention_weights() const {
    if (!mla()) {
      return hidden * (q_width() + key_width() + value_width()) + q_width() * hidden +
             (qk_norm ? 2 * head_dim() : 0);
    }
    const int64_t q =
        q_lora_rank > 0 ? hidden * q_lora_rank + q_lora_rank + q_lora_rank * q_width() : hidden * q_width();
    return q + hidden * (kv_lora_rank + qk_rope_head_dim) + kv_lora_rank +
           kv_lora_rank * heads * (qk_nope_head_dim + v_head_dim) + attention_out_width() * hidden;
  }
  /// Inner width of one expert MLP (routed or shared).
  [[nodiscard]] int64_t expert_width() const {
    return expert_ffn_hidden > 0 ? expert_ffn_hidden : ffn_hidden;
  }
  /// Blocks whose MLP is a mixture of experts when experts > 1 (none otherwise): those of
  /// moe_layers, or all but the first dense_layers_first.
  [[nodiscard]] int64_t moe_blocks() const {
    if (experts <= 1) return 0;
    return moe_layers ? static_cast<int64_t>(moe_layers->count()) : layers - dense_layers_first;
  }
  /// Whether block `block` (0-based) is a mixture of experts.
  [[nodiscard]] bool is_moe_block(int64_t block) const {
    if (experts <= 1) return false;
    if (moe_layers)
      return block >= 0 && block < kMaxPatternBlocks && moe_layers->test(static_cast<size_t>(block));
    return block >= dense_layers_first;
  }
  bool operator==(const TransformerShape&) const = default;
};

}  // namespace stepcast::workload
