// Decoder-only transformers (GPT-2, Llama, Mixtral and any decoder by shape): builds the layers
// and Hugging Face-named tensors from a TransformerShape, checks the shape, and derives the
// per-token FLOPs that MFU is quoted with. One file because the parameter layout, the FLOPs and
// the active-parameter count of a mixture of experts all follow from the same shape.
#include <fmt/format.h>

#include <string>
#include <utility>

#include "layer_builders.hpp"
#include "stepcast/error.hpp"

namespace stepcast::zoo {

namespace {

// The bound the key table puts on every width (workload.transformer.*: at most 2^24), kept for
// the attention width heads x head_dim too, so that hidden x that width stays within int64.
constexpr int64_t kMaxAttentionWidth = int64_t{1} << 24;

void add_param(Layer& layer, std::string name, int64_t elements) {
  layer.params.push_back(ParamTensor{.name = std::move(name), .elements = elements});
}

// A linear layer under the Megatron accounting: 2 x in x out FLOPs per token; the bias is a
// parameter but its addition is not counted (elementwise work is left out throughout).
void linear(Layer& layer, const std::string& prefix, int64_t in, int64_t out, double tokens, bool bias) {
  add_param(layer, prefix + ".weight", in * out);
  if (bias) add_param(layer, prefix + ".bias", out);
  layer.forward_flops += 2.0 * static_cast<double>(in) * static_cast<double>(out) * tokens;
}

// A norm over `width` features (the model width unless given: Qwen3's q_norm and k_norm normalize
// each head, head_dim wide, with one weight shared by all heads).
void norm(Layer& layer, const std::string& prefix, const TransformerShape& shape, int64_t width = 0) {
  if (width == 0) width = shape.hidden;
  add_param(layer, prefix + ".weight", width);
  if (shape.norm == TransformerNorm::LayerNorm) add_param(layer, prefix + ".bias", width);
}

[[noreturn]] void bad_shape(const std::string& field, const std::string& message) {
  throw Error({"", 0, "workload.transformer." + field}, message);
}

void require_positive(int64_t value, const std::string& field) {
  if (value < 1) bad_shape(field, fmt::format("expected an integer >= 1, got {}", value));
}

void require_not_negative(int64_t value, const std::string& field, const char* zero_means) {
  if (value < 0) bad_shape(field, fmt::format("expected an integer >= 0 (0: {}), got {}", zero_means, value));
}

// Tensors and FLOPs of one MLP of inner width `width` (a dense block's, or one expert's) on
// `tokens` tokens.
void mlp(Layer& layer, const std::string& prefix, const TransformerShape& s, int64_t width, double tokens,
         const char* gate_name, const char* up_name, const char* down_name) {
  if (s.swiglu) linear(layer, prefix + "." + gate_name, s.hidden, width, tokens, s.linear_biases);
  linear(layer, prefix + "." + up_name, s.hidden, width, tokens, s.linear_biases);
  linear(layer, prefix + "." + down_name, width, s.hidden, tokens, s.linear_biases);
}

// Parameters of one routed expert's MLP, to leave out the experts a token is not routed to.
int64_t expert_parameters(const TransformerShape& s) {
  const int64_t matrices = s.swiglu ? 3 : 2;
  const int64_t width = s.expert_width();
  const int64_t biases = s.linear_biases ? (matrices - 1) * width + s.hidden : 0;
  return matrices * s.hidden * width + biases;
}

// Multi-head latent attention's fields: all 0 without it (kv_lora_rank = 0), else a query and
// key head and a value head of some width, every head with its own keys (no grouping).
void validate_mla(const TransformerShape& s) {
  if (!s.mla()) {
    for (const auto& [value, field] :
         {std::pair{s.q_lora_rank, "q_lora_rank"}, std::pair{s.qk_nope_head_dim, "qk_nope_head_dim"},
          std::pair{s.qk_rope_head_dim, "qk_rope_head_dim"}, std::pair{s.v_head_dim, "v_head_dim"}}) {
      if (value != 0) {
        bad_shape(field, fmt::format("expected 0 without multi-head latent attention "
                                     "(workload.transformer.kv_lora_rank = 0), got {}",
                                     value));
      }
    }
    return;
  }
  if (s.qk_nope_head_dim + s.qk_rope_head_dim < 1) {
    bad_shape("qk_nope_head_dim",
              "expected qk_nope_head_dim + qk_rope_head_dim >= 1 with multi-head latent attention "
              "(kv_lora_rank > 0), got 0 + 0");
  }
  if (s.v_head_dim < 1) {
    bad_shape(
        "v_head_dim",
        fmt::format("expected an integer >= 1 with multi-head latent attention (kv_lora_rank > 0), got {}",
                    s.v_head_dim));
  }
  if (s.heads > 0 &&
      (s.qk_head_dim() > kMaxAttentionWidth / s.heads || s.v_head_dim > kMaxAttentionWidth / s.heads ||
       s.qk_nope_head_dim + s.v_head_dim > kMaxAttentionWidth / s.heads)) {
    bad_shape("heads",
              fmt::format("expected heads x (qk_nope_head_dim + qk_rope_head_dim), heads x v_head_dim "
                          "and heads x (qk_nope_head_dim + v_head_dim) at most {}, got {} heads",
                          kMaxAttentionWidth, s.heads));
  }
  if (s.head_dim_override != 0) {
    bad_shape("head_dim", fmt::format("expected 0 with multi-head latent attention, whose head widths are "
                                      "qk_nope_head_dim, qk_rope_head_dim and v_head_dim, got {}",
                                      s.head_dim_override));
  }
  if (s.kv_heads != s.heads) {
    bad_shape("kv_heads", fmt::format("expected heads ({}) with multi-head latent attention: every head "
                                      "up-projects its own key and value, got {}",
                                      s.heads, s.kv_heads));
  }
  if (s.qk_norm)
    bad_shape("qk_norm", "expected false with multi-head latent attention (no per-head q and k norms)");
}

// The moe_layers pattern: only with experts (checked with the other MoE-only fields), within
// the decoder's blocks and the pattern's 1024, and the same blocks as dense_layers_first says
// when both are given.
void validate_moe_layers(const TransformerShape& s) {
  if (!s.moe_layers) return;
  if (s.experts == 1) {
    bad_shape("moe_layers", "expected \"all\" for a dense model (experts = 1): a mixture of experts only");
  }
  if (s.layers > workload::kMaxPatternBlocks) {
    bad_shape("moe_layers", fmt::format("a pattern covers at most {} decoder blocks, got {} blocks",
                                        workload::kMaxPatternBlocks, s.layers));
  }
  for (int64_t b = s.layers; b < workload::kMaxPatternBlocks; ++b) {
    if (s.moe_layers->test(static_cast<size_t>(b))) {
      bad_shape("moe_layers", fmt::format("expected blocks 0 to {} (of the {} decoder blocks), got block {}",
                                          s.layers - 1, s.layers, b));
    }
  }
  if (s.dense_layers_first > 0) {
    workload::BlockSet after_dense;
    for (int64_t b = s.dense_layers_first; b < s.layers; ++b) after_dense.set(static_cast<size_t>(b));
    if (*s.moe_layers != after_dense) {
      bad_shape(
          "moe_layers",
          fmt::format("with workload.transformer.dense_layers_first = {}, expected blocks {}-{} (or give one "
                      "of the two keys only)",
                      s.dense_layers_first, s.dense_layers_first, s.layers - 1));
    }
  }
}

const TransformerShape& decoder_shape(const ModelSpec& model) {
  if (!model.transformer) {
    throw Error({"", 0, "workload.model"},
                fmt::format("model \"{}\" is not a transformer decoder, so it has no tokens", model.name));
  }
  return *model.transformer;
}

}  // namespace

void validate(const TransformerShape& s) {
  require_positive(s.layers, "layers");
  require_positive(s.hidden, "hidden");
  require_positive(s.ffn_hidden, "ffn_hidden");
  require_positive(s.heads, "heads");
  require_positive(s.kv_heads, "kv_heads");
  require_positive(s.vocab, "vocab");
  require_positive(s.experts, "experts");
  require_positive(s.top_k, "top_k");
  require_not_negative(s.head_dim_override, "head_dim", "hidden / heads");
  require_not_negative(s.expert_ffn_hidden, "expert_ffn_hidden", "ffn_hidden");
  require_not_negative(s.shared_experts, "shared_experts", "none");
  require_not_negative(s.dense_layers_first, "dense_layers_first", "none");
  require_not_negative(s.q_lora_rank, "q_lora_rank", "a plain q projection");
  require_not_negative(s.kv_lora_rank, "kv_lora_rank", "no multi-head latent attention");
  require_not_negative(s.qk_nope_head_dim, "qk_nope_head_dim", "none");
  require_not_negative(s.qk_rope_head_dim, "qk_rope_head_dim", "none");
  require_not_negative(s.v_head_dim, "v_head_dim", "none");
  validate_mla(s);
  // Every block and expert is built as layers and tensors of their own: 16 million blocks or
  // experts took minutes and tens of gigabytes before anything was predicted.
  if (s.experts > kMaxBlockExperts / s.layers) {  // layers x experts, without overflow
    bad_shape(s.experts > 1 ? "experts" : "layers",
              fmt::format("expected at most {} decoder blocks x experts per MLP, got {} x {}", kMaxBlockExperts,
                          s.layers, s.experts));
  }
  if (s.shared_experts > kMaxBlockExperts / s.layers - s.experts) {  // experts bounded just above
    bad_shape("shared_experts",
              fmt::format("expected at most {} decoder blocks x (experts + shared experts), "
                          "got {} x ({} + {})",
                          kMaxBlockExperts, s.layers, s.experts, s.shared_experts));
  }
  if (!s.mla() && s.head_dim_override == 0 && s.hidden % s.heads != 0) {
    bad_shape("heads",
              fmt::format("expected a divisor of hidden ({}) unless workload.transformer.head_dim is "
                          "set, got {}",
                          s.hidden, s.heads));
  }
  // Any head width is a valid shape, but the projections' parameters (hidden x heads x head_dim)
  // must stay within int64: the same bound as every other width.
  if (s.head_dim_override > 0 && s.head_dim_override > kMaxAttentionWidth / s.heads) {
    bad_shape("head_dim", fmt::format("expected heads x head_dim at most {}, got {} x {}", kMaxAttentionWidth,
                                      s.heads, s.head_dim_override));
  }
  if (s.heads % s.kv_heads != 0) {
    // Grouped-query attention shares each K/V head among heads / kv_heads query heads.
    bad_shape("kv_heads", fmt::format("expected a divisor of heads ({}), got {}", s.heads, s.kv_heads));
  }
  if (s.top_k > s.experts) {
    bad_shape("top_k", fmt::format("expected at most experts ({}), got {}", s.experts, s.top_k));
  }
  if (s.experts == 1) {
    // A dense model would silently ignore them, which hides a forgotten workload.transformer.experts.
    for (const auto& [value, field] :
         {std::pair{s.expert_ffn_hidden, "expert_ffn_hidden"}, std::pair{s.shared_experts, "shared_experts"},
          std::pair{s.dense_layers_first, "dense_layers_first"}}) {
      if (value != 0) {
        bad_shape(field, fmt::format("expected 0 for a dense model (experts = 1): a mixture of experts only, "
                                     "got {}",
                                     value));
      }
    }
  }
  if (s.dense_layers_first > s.layers) {
    bad_shape("dense_layers_first",
              fmt::format("expected at most the {} decoder blocks, got {}", s.layers, s.dense_layers_first));
  }
  validate_moe_layers(s);
  if (s.seq_len < 1) {
    throw Error({"", 0, "workload.seq_len"}, fmt::format("expected an integer >= 1, got {}", s.seq_len));
  }
  if (s.positions == PositionEncoding::Learned) {
    require_positive(s.max_positions, "max_positions");
    if (s.seq_len > s.max_positions) {
      throw Error(
          {"", 0, "workload.seq_len"},
          fmt::format("expected at most the {} learned positions, got {}", s.max_positions, s.seq_len));
    }
  }
  if (s.layout == TransformerLayout::Gpt2) {
    // GPT2LMHeadModel has no names for a gated MLP or experts; a shape that needs them uses
    // the Llama layout.
    if (s.swiglu) bad_shape("swiglu", "the GPT-2 layout has a GELU MLP; use the Llama layout for SwiGLU");
    if (s.experts != 1) bad_shape("experts", "the GPT-2 layout is dense; use the Llama layout for experts");
    if (s.qk_norm) bad_shape("qk_norm", "the GPT-2 layout has no query and key norms; use the Llama layout");
    if (s.mla()) bad_shape("kv_lora_rank", "the GPT-2 layout has no latent attention; use the Llama layout");
  }
}

ModelSpec make_transformer(std::string name, std::string description, const TransformerShape& shape) {
  validate(shape);
  const TransformerShape& s = shape;
  const bool gpt2 = s.layout == TransformerLayout::Gpt2;
  const auto tokens = static_cast<double>(s.seq_len);
  const int64_t q_width = s.q_width();
  const int64_t key_width = s.key_width();
  const int64_t value_width = s.value_width();
  const int64_t out_width = s.attention_out_width();

  ModelSpec model{
      .name = std::move(name), .description = std::move(description), .layers = {}, .transformer = s};

  Layer embeddings = detail::make_layer("embeddings");
  add_param(embeddings, gpt2 ? "transformer.wte.weight" : "model.embed_tokens.weight", s.vocab * s.hidden);
  if (s.positions == PositionEncoding::Learned) {
    add_param(embeddings, gpt2 ? "transformer.wpe.weight" : "model.embed_positions.weight",
              s.max_positions * s.hidden);
  }
  model.layers.push_back(std::move(embeddings));

  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string block = (gpt2 ? "transformer.h." : "model.layers.") + std::to_string(i);

    Layer attention = detail::make_layer(block + ".attention");
    if (gpt2) {
      norm(attention, block + ".ln_1", s);
      // Conv1D c_attn holds Q, K and V side by side.
      linear(attention, block + ".attn.c_attn", s.hidden, q_width + key_width + value_width, tokens,
             s.linear_biases);
    } else if (s.mla()) {
      // Multi-head latent attention, as Hugging Face's DeepseekV3Attention: the query through a
      // low-rank bottleneck (or one q_proj), the keys and values up-projected from a shared
      // latent; kv_a_proj_with_mqa also yields the rotary key all heads share.
      norm(attention, block + ".input_layernorm", s);
      const std::string attn = block + ".self_attn";
      if (s.q_lora_rank > 0) {
        linear(attention, attn + ".q_a_proj", s.hidden, s.q_lora_rank, tokens, s.linear_biases);
        norm(attention, attn + ".q_a_layernorm", s, s.q_lora_rank);
        linear(attention, attn + ".q_b_proj", s.q_lora_rank, q_width, tokens, false);
      } else {
        linear(attention, attn + ".q_proj", s.hidden, q_width, tokens, false);
      }
      linear(attention, attn + ".kv_a_proj_with_mqa", s.hidden, s.kv_lora_rank + s.qk_rope_head_dim, tokens,
             s.linear_biases);
      norm(attention, attn + ".kv_a_layernorm", s, s.kv_lora_rank);
      linear(attention, attn + ".kv_b_proj", s.kv_lora_rank, s.heads * (s.qk_nope_head_dim + s.v_head_dim),
             tokens, false);
    } else {
      norm(attention, block + ".input_layernorm", s);
      linear(attention, block + ".self_attn.q_proj", s.hidden, q_width, tokens, s.linear_biases);
      linear(attention, block + ".self_attn.k_proj", s.hidden, key_width, tokens, s.linear_biases);
      linear(attention, block + ".self_attn.v_proj", s.hidden, value_width, tokens, s.linear_biases);
      if (s.qk_norm) {
        // Qwen3: each query and key head normalized before the rotary embedding (validate()
        // keeps these to the Llama layout).
        norm(attention, block + ".self_attn.q_norm", s, s.head_dim());
        norm(attention, block + ".self_attn.k_norm", s, s.head_dim());
      }
    }
    if (s.mla()) {
      // Q K^T over each head's qk_nope + qk_rope features, probabilities x V over its v_head_dim.
      attention.forward_flops += 2.0 * tokens * tokens * static_cast<double>(q_width) +
                                 2.0 * tokens * tokens * static_cast<double>(out_width);
    } else {
      // Q K^T and probabilities x V, seq x seq x head_dim per query head: GQA shares K and V
      // among query heads but every query head still computes its own scores and context.
      attention.forward_flops += 2.0 * 2.0 * tokens * tokens * static_cast<double>(q_width);
    }
    linear(attention, block + (gpt2 ? ".attn.c_proj" : ".self_attn.o_proj"), out_width, s.hidden, tokens,
           s.linear_biases);
    model.layers.push_back(std::move(attention));

    if (!s.is_moe_block(i)) {
      // Named "<block>.mlp" as a dense model's, which is how the rest of the program tells a
      // dense block from a mixture of experts (DeepSeek's first blocks are dense).
      Layer feed_forward = detail::make_layer(block + ".mlp");
      if (gpt2) {
        norm(feed_forward, block + ".ln_2", s);
        mlp(feed_forward, block + ".mlp", s, s.ffn_hidden, tokens, "", "c_fc",
            "c_proj");  // validate(): no SwiGLU
      } else {
        norm(feed_forward, block + ".post_attention_layernorm", s);
        mlp(feed_forward, block + ".mlp", s, s.ffn_hidden, tokens, "gate_proj", "up_proj", "down_proj");
      }
      model.layers.push_back(std::move(feed_forward));
    } else {
      Layer moe = detail::make_layer(block + ".moe");
      norm(moe, block + ".post_attention_layernorm", s);
      const std::string sparse = block + ".block_sparse_moe";
      linear(moe, sparse + ".gate", s.hidden, s.experts, tokens, false);  // the router, as Mixtral: no bias
      // Every expert's parameters, but with balanced routing each token runs through top_k of
      // them: the experts' FLOPs are top_k / experts of what all of them on every token would be.
      const double tokens_per_expert = tokens * static_cast<double>(s.top_k) / static_cast<double>(s.experts);
      for (int64_t e = 0; e < s.experts; ++e) {
        // Mixtral: w1 gate, w3 up, w2 down.
        mlp(moe, sparse + ".experts." + std::to_string(e), s, s.expert_width(), tokens_per_expert, "w1", "w3",
            "w2");
      }
      // Shared experts run on every token. Their names must not contain ".experts.": the expert
      // parallel layouts find a routed expert's tensors by that marker (scheme::expert_of_tensor)
      // and keep shared experts, which are not routed, on every rank.
      for (int64_t e = 0; e < s.shared_experts; ++e) {
        mlp(moe, sparse + ".shared_experts." + std::to_string(e), s, s.expert_width(), tokens, "w1", "w3",
            "w2");
      }
      model.layers.push_back(std::move(moe));
    }
  }

  Layer head = detail::make_layer("head");
  norm(head, gpt2 ? "transformer.ln_f" : "model.norm", s);
  if (s.tied_embeddings) {
    // The logits multiply by the token embedding matrix, which belongs to "embeddings".
    head.forward_flops += 2.0 * static_cast<double>(s.hidden) * static_cast<double>(s.vocab) * tokens;
  } else {
    linear(head, "lm_head", s.hidden, s.vocab, tokens, false);
  }
  model.layers.push_back(std::move(head));
  return model;
}

int64_t active_parameters(const ModelSpec& model) {
  const TransformerShape& s = decoder_shape(model);
  int64_t looked_up_only = s.tied_embeddings ? 0 : s.vocab * s.hidden;
  if (s.positions == PositionEncoding::Learned) looked_up_only += s.max_positions * s.hidden;
  const int64_t idle_experts = s.moe_blocks() * (s.experts - s.top_k) * expert_parameters(s);
  return model.num_parameters() - looked_up_only - idle_experts;
}

double flops_per_token_6n(const ModelSpec& model) {
  return 6.0 * static_cast<double>(active_parameters(model));
}

double training_flops_per_token(const ModelSpec& model) {
  const TransformerShape& s = decoder_shape(model);
  return 3.0 * model.forward_flops() / static_cast<double>(s.seq_len);
}

}  // namespace stepcast::zoo
