// Activation memory of a decoder (Korthikanti et al. 2022, section 4), tensor by tensor from the
// block's shape; the formula and what each term is are in activation_memory.hpp.
#include "stepcast/zoo/activation_memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "stepcast/error.hpp"

namespace stepcast::zoo {

namespace {

using workload::ActivationCheckpointing;

constexpr double kMaskBytes = 1;  // a dropout mask: PyTorch's bool tensor, one byte an element
constexpr double kFp32Bytes = 4;  // log-sum-exp, router probabilities, the loss's upcast logits

void require_positive(int64_t value, const std::string& key) {
  if (value < 1) throw Error({"", 0, key}, fmt::format("expected an integer >= 1, got {}", value));
}

void require_not_negative(int64_t value, const std::string& key) {
  if (value < 0) throw Error({"", 0, key}, fmt::format("expected an integer >= 0, got {}", value));
}

void validate(const TransformerShape& s, int64_t sequences, const ElementBytes& element_bytes) {
  require_positive(s.seq_len, "workload.seq_len");
  require_positive(sequences, "workload.batch_per_worker");
  require_positive(s.layers, "workload.transformer.layers");
  require_positive(s.hidden, "workload.transformer.hidden");
  require_positive(s.ffn_hidden, "workload.transformer.ffn_hidden");
  require_positive(s.heads, "workload.transformer.heads");
  require_positive(s.kv_heads, "workload.transformer.kv_heads");
  require_positive(s.vocab, "workload.transformer.vocab");
  require_positive(s.experts, "workload.transformer.experts");
  require_positive(s.top_k, "workload.transformer.top_k");
  require_not_negative(s.head_dim_override, "workload.transformer.head_dim");
  require_not_negative(s.expert_ffn_hidden, "workload.transformer.expert_ffn_hidden");
  require_not_negative(s.shared_experts, "workload.transformer.shared_experts");
  require_not_negative(s.dense_layers_first, "workload.transformer.dense_layers_first");
  if (s.dense_layers_first > s.layers) {
    throw Error(
        {"", 0, "workload.transformer.dense_layers_first"},
        fmt::format("expected at most the {} decoder blocks, got {}", s.layers, s.dense_layers_first));
  }
  STEPCAST_ASSERT(element_bytes.activation > 0 && element_bytes.gemm_input > 0);
}

// The sizes of the formula for one kind of block (dense or mixture of experts), as doubles:
// products reach 1e12 and more.
struct Terms {
  double tokens = 0;  // T = s b
  double seq = 0;     // s
  double h = 0;
  double f = 0;  // the block's MLP width: ffn_hidden (dense) or each expert's (MoE)
  double q = 0;  // query width, heads x head_dim (h unless head_dim is set)
  double a = 0, g = 0, vocab = 0, experts = 0, top_k = 0;
  double shared = 0;  // shared experts of a MoE block
  double e = 0;       // bytes of an activation element
  double gemm_in = 0;    // bytes of a saved GEMM input element (ElementBytes::gemm_input; e but in fp8)
  bool dropout = false;  // dropout after the embeddings, on the scores and on both residual branches
  bool swiglu = false;
  bool qk_norm = false;
  bool moe = false;
  double value = 0;   // value width (g without MLA)
  double out = 0;     // the o projection's input width (q without MLA)
  double latent = 0;  // MLA: q_lora_rank and kv_lora_rank, each a norm's input and an up projection's input
  double expert_load = 1;  // the busiest expert GPU's tokens over the mean (ActivationSplit)
};

// Whether the output projection saves a copy of its input of its own (fp8: the cast it computes
// with) beside the attention output, which flash attention keeps for its backward; in one type
// the two are one tensor.
bool own_output_copy(const Terms& t) { return t.gemm_in != t.e; }

// The terms of a dense block (moe_block false) or of a MoE block of `s`.
Terms terms(const TransformerShape& s, int64_t sequences, const ElementBytes& element_bytes, bool moe_block) {
  return Terms{.tokens = static_cast<double>(s.seq_len) * static_cast<double>(sequences),
               .seq = static_cast<double>(s.seq_len),
               .h = static_cast<double>(s.hidden),
               .f = static_cast<double>(moe_block ? s.expert_width() : s.ffn_hidden),
               .q = static_cast<double>(s.q_width()),
               .a = static_cast<double>(s.heads),
               .g = static_cast<double>(s.key_width()),
               .vocab = static_cast<double>(s.vocab),
               .experts = static_cast<double>(s.experts),
               .top_k = static_cast<double>(s.top_k),
               .shared = static_cast<double>(moe_block ? s.shared_experts : 0),
               .e = element_bytes.activation,
               .gemm_in = element_bytes.gemm_input,
               .dropout = s.dropout,
               .swiglu = s.swiglu,
               .qk_norm = s.qk_norm,
               .moe = moe_block,
               .value = static_cast<double>(s.value_width()),
               .out = static_cast<double>(s.attention_out_width()),
               .latent = s.mla() ? 2.0 * static_cast<double>(s.q_lora_rank + s.kv_lora_rank) : 0.0};
}

// Terms for what lies outside the blocks (the head, the loss), which no MLP width enters.
Terms outside_terms(const TransformerShape& s, int64_t sequences, const ElementBytes& element_bytes) {
  return terms(s, sequences, element_bytes, false);
}

// The kinds of block `s` has, as (how many, MoE or not): one kind, or DeepSeek's dense blocks
// first and MoE blocks after.
struct BlockKind {
  int64_t count = 0;
  bool moe = false;
};
std::vector<BlockKind> block_kinds(const TransformerShape& s) {
  std::vector<BlockKind> kinds;
  if (s.layers - s.moe_blocks() > 0) kinds.push_back({s.layers - s.moe_blocks(), false});
  if (s.moe_blocks() > 0) kinds.push_back({s.moe_blocks(), true});
  return kinds;
}

// The attention core that selective recomputation runs again: what standard attention keeps of
// the scores (softmax output; with dropout its mask and output too), or flash attention's
// log-sum-exp, and in fp8 its output (e wide; the output projection saves its own fp8 copy, as
// Transformer Engine's attention saves q, k, v and out unless its fp8 attention is on). Standard
// attention's backward reads the probabilities and V, not its output.
double attention_core(const Terms& t, bool flash_attention) {
  if (flash_attention)
    return kFp32Bytes * t.a * t.tokens + (own_output_copy(t) ? t.e * t.tokens * t.out : 0.0);
  const double scores = t.a * t.seq * t.tokens;  // a s^2 b elements
  double bytes = t.e * scores;                   // softmax output, the input of probs x V
  if (t.dropout) bytes += kMaskBytes * scores + t.e * scores;
  return bytes;
}

// Attention less its core: norm input, Q/K/V input, Q, K, V, output projection input (q wide),
// with Qwen3's q and k norms their inputs, and the output dropout mask. For Korthikanti's block
// with e = 2: 2 + 2 + 6 + 2 + 1 = 13 s b h. The two projections' inputs are GEMM inputs
// (gemm_in bytes), the rest e.
// Multi-head latent attention keeps Q, K (every head's) and V at their widths, the o
// projection's input at the value width, and the two latents twice each (norm input, e; up
// projection input, gemm_in); its down projections read the norm output, the Q/K/V input.
double attention_outside_core(const Terms& t) {
  double bytes = t.e * t.tokens * (t.h + (t.q + t.g + t.value)) + t.gemm_in * t.tokens * (t.h + t.out);
  if (t.latent > 0) bytes += (t.e + t.gemm_in) * t.tokens * t.latent / 2;
  if (t.qk_norm) bytes += t.e * t.tokens * (t.q + t.g);
  if (t.dropout) bytes += kMaskBytes * t.tokens * t.h;
  return bytes;
}

// One MLP's inner tensors on `tokens` tokens: 3 (SwiGLU) or 2 (GELU) f-wide tensors, the first
// projection's outputs (2 SwiGLU, 1 GELU; e) and the down projection's input (gemm_in).
double mlp_inner(const Terms& t, double tokens) {
  return t.e * tokens * (t.swiglu ? 2 : 1) * t.f + t.gemm_in * tokens * t.f;
}

// One MLP (dense, or one routed expert) on `tokens` tokens: its input (the first projection's,
// gemm_in), then its inner tensors.
double mlp(const Terms& t, double tokens) { return t.gemm_in * tokens * t.h + mlp_inner(t, tokens); }

// The MLP half: norm input, the MLP or router + top_k experts, the output dropout mask. For
// Korthikanti's block with e = 2: 2 + 2 + 16 + 1 = 21 s b h.
double feed_forward(const Terms& t) {
  double bytes = t.e * t.tokens * t.h;  // norm input
  if (t.moe) {
    // Router input (the norm output; the router's GEMM is not fp8) and its fp32 probabilities;
    // each token's expert input and activations in top_k experts; the shared experts'
    // activations (their input is the router's, counted once; in fp8 their first projection
    // saves its own fp8 copy of it, one for the shared experts as one MLP, as Megatron's).
    bytes += t.e * t.tokens * t.h + kFp32Bytes * t.experts * t.tokens +
             mlp(t, t.top_k * t.tokens) * t.expert_load + t.shared * mlp_inner(t, t.tokens);
    if (t.shared > 0 && own_output_copy(t)) bytes += t.gemm_in * t.tokens * t.h;
  } else {
    bytes += mlp(t, t.tokens);
  }
  if (t.dropout) bytes += kMaskBytes * t.tokens * t.h;
  return bytes;
}

double block_bytes(const Terms& t, ActivationCheckpointing checkpointing, bool flash_attention) {
  switch (checkpointing) {
    case ActivationCheckpointing::None:
      return attention_outside_core(t) + attention_core(t, flash_attention) + feed_forward(t);
    case ActivationCheckpointing::Selective:
      return attention_outside_core(t) + feed_forward(t);
    case ActivationCheckpointing::Full:
      return t.e * t.tokens * t.h;  // the block's input
  }
  return 0;
}

// Final norm input, LM head input; GPT-2's embedding dropout mask. The loss is loss_bytes'.
double head_inputs(const Terms& t) {
  double bytes = 2 * t.e * t.tokens * t.h;
  if (t.dropout) bytes += kMaskBytes * t.tokens * t.h;
  return bytes;
}

// What the loss holds of t.tokens tokens over `vocab` logits (the rank's share of the
// vocabulary); the formulas and their sources are in activation_memory.hpp and docs/memory.md.
LossMemory loss_bytes(const Terms& t, double vocab, workload::LossMode loss) {
  const double logits = t.tokens * vocab;         // elements of the logits
  const bool upcast = t.e < kFp32Bytes;           // .float() copies only from 2-byte logits
  const double copy = upcast ? kFp32Bytes : 0.0;  // c: the fp32 copy
  const double cast_back = upcast ? t.e : 0.0;    // b: a gradient cast back to the logits' type
  switch (loss) {
    case workload::LossMode::Fp32Logits:
      // PyTorch's cross_entropy = nll_loss(log_softmax(x)): log_softmax saves its output, which
      // nll_loss reads too; its input (the fp32 copy) is freed once the loss returns. Backward:
      // nll_loss_backward writes a dense gradient, _log_softmax_backward_data a second one.
      return {.saved = kFp32Bytes * logits,
              .forward_peak = (t.e + copy + kFp32Bytes) * logits,
              .backward_peak = 3 * kFp32Bytes * logits};
    case workload::LossMode::Fp32InPlace:
      // Megatron-LM: x.float() overwritten by exp, then by the softmax it saves, which the
      // backward overwrites by the gradient and casts back to the logits' type.
      return {.saved = kFp32Bytes * logits,
              .forward_peak = (kFp32Bytes + cast_back) * logits,
              .backward_peak = (kFp32Bytes + cast_back) * logits};
    case workload::LossMode::Bf16Logits:
      return {.saved = t.e * logits, .forward_peak = 2 * t.e * logits, .backward_peak = 3 * t.e * logits};
    case workload::LossMode::Chunked: {
      // TorchTitan's ChunkedLossWrapper: per chunk the head, the fp32 loss and its backward at
      // once, the hidden states' gradient summed in an fp32 buffer, handed on in e bytes.
      const double hidden = t.tokens * t.h;
      const double chunk = (t.e + 3 * kFp32Bytes) * logits / kLossChunks;
      return {.saved = t.e * hidden,
              .forward_peak = kFp32Bytes * hidden + std::max(chunk, cast_back * hidden),
              .backward_peak = t.e * hidden};
    }
  }
  return {};
}

/// What a rank of a tensor group of t holds of a block's activations (Korthikanti et al. 2022,
/// sections 4.1-4.2): with sequence parallelism (or t = 1) everything divided by t; without,
/// the norm inputs, the inputs of the Q/K/V and first MLP linears and the dropout masks are
/// whole on every rank (10 s b h of Korthikanti's 34) and the rest divided by t.
double block_bytes(const Terms& t, ActivationCheckpointing checkpointing, bool flash_attention,
                   const ActivationSplit& split) {
  const double whole = block_bytes(t, checkpointing, flash_attention);
  const auto tensor = static_cast<double>(split.tensor);
  if (split.sequence_parallel || split.tensor == 1) return whole / tensor;
  double replicated = 0;
  switch (checkpointing) {
    case ActivationCheckpointing::None:
    case ActivationCheckpointing::Selective:
      // Attention's norm input and Q/K/V input, the MLP's norm input and MLP input, masks.
      replicated =
          2 * (t.e + t.gemm_in) * t.tokens * t.h + (t.dropout ? 2 * kMaskBytes * t.tokens * t.h : 0.0);
      // MLA's latents come from the down projections every rank runs whole.
      replicated += (t.e + t.gemm_in) * t.tokens * t.latent / 2;
      if (t.moe) replicated += t.e * t.tokens * t.h;  // the router's input as well
      // In fp8 the shared experts' own copy of it (feed_forward).
      if (t.moe && t.shared > 0 && own_output_copy(t)) replicated += t.gemm_in * t.tokens * t.h;
      break;
    case ActivationCheckpointing::Full:
      replicated = whole;  // the block's input
      break;
  }
  return replicated + (whole - replicated) / tensor;
}

}  // namespace

ElementBytes activation_element_bytes(workload::Precision precision) {
  const double element = workload::bytes_per_element(precision);
  switch (precision) {
    case workload::Precision::FP32:
    case workload::Precision::FP16:
    case workload::Precision::BF16:
      return {element};
    case workload::Precision::FP8:
      // Transformer Engine's recipe: the projections save the fp8 casts they compute with (on
      // Hopper the transposed copy the weight gradient's GEMM reads), 1 byte; the rest bf16.
      return {element, 1.0};
  }
  return {element};
}

double block_activation_bytes_of_kind(const TransformerShape& shape, int64_t sequences,
                                      ActivationCheckpointing checkpointing,
                                      const ElementBytes& element_bytes, bool flash_attention,
                                      const ActivationSplit& split, bool moe_block) {
  validate(shape, sequences, element_bytes);
  STEPCAST_ASSERT(split.tensor >= 1 && split.context >= 1);
  STEPCAST_ASSERT(moe_block ? shape.moe_blocks() > 0 : shape.layers > shape.moe_blocks());
  Terms t = terms(shape, sequences, element_bytes, moe_block);
  t.tokens /= split.context;  // a context group splits the sequence; each rank keeps its own tokens
  t.expert_load = split.expert_load;
  return block_bytes(t, checkpointing, flash_attention, split);
}

double block_activation_bytes(const TransformerShape& shape, int64_t sequences,
                              ActivationCheckpointing checkpointing, const ElementBytes& element_bytes,
                              bool flash_attention, const ActivationSplit& split) {
  double most = 0;
  for (const BlockKind& kind : block_kinds(shape)) {
    most = std::max(most, block_activation_bytes_of_kind(shape, sequences, checkpointing, element_bytes,
                                                         flash_attention, split, kind.moe));
  }
  return most;
}

LossMemory loss_memory(const TransformerShape& shape, int64_t sequences, const ElementBytes& element_bytes,
                       workload::LossMode loss, const ActivationSplit& split) {
  validate(shape, sequences, element_bytes);
  STEPCAST_ASSERT(split.tensor >= 1 && split.context >= 1);
  Terms t = outside_terms(shape, sequences, element_bytes);
  t.tokens /= split.context;
  return loss_bytes(t, t.vocab / static_cast<double>(split.tensor), loss);
}

double head_activation_bytes(const TransformerShape& shape, int64_t sequences,
                             const ElementBytes& element_bytes, const ActivationSplit& split,
                             workload::LossMode loss) {
  validate(shape, sequences, element_bytes);
  Terms t = outside_terms(shape, sequences, element_bytes);
  t.tokens /= split.context;
  const auto tensor = static_cast<double>(split.tensor);
  // The final norm's input and the head's input (whole on every rank without sequence
  // parallelism), and what the loss saves over the rank's share of the vocabulary.
  const double inputs = 2 * t.e * t.tokens * t.h;
  return (split.sequence_parallel ? inputs / tensor : inputs) + loss_bytes(t, t.vocab / tensor, loss).saved;
}

double block_activation_bytes(const TransformerShape& shape, int64_t sequences,
                              ActivationCheckpointing checkpointing, const ElementBytes& element_bytes,
                              bool flash_attention) {
  validate(shape, sequences, element_bytes);
  double most = 0;
  for (const BlockKind& kind : block_kinds(shape)) {
    most = std::max(
        most, block_bytes(terms(shape, sequences, element_bytes, kind.moe), checkpointing, flash_attention));
  }
  return most;
}

double activation_bytes(const TransformerShape& shape, int64_t sequences,
                        ActivationCheckpointing checkpointing, const ElementBytes& element_bytes,
                        bool flash_attention, workload::LossMode loss) {
  validate(shape, sequences, element_bytes);
  const Terms t = outside_terms(shape, sequences, element_bytes);
  double kept = head_inputs(t);
  double recomputed = 0;  // the largest block, which full recomputation holds whole for a moment
  for (const BlockKind& kind : block_kinds(shape)) {
    const Terms block = terms(shape, sequences, element_bytes, kind.moe);
    kept += static_cast<double>(kind.count) * block_bytes(block, checkpointing, flash_attention);
    recomputed = std::max(recomputed, block_bytes(block, ActivationCheckpointing::None, flash_attention));
  }
  const LossMemory l = loss_bytes(t, t.vocab, loss);
  // The loss's two moments (end of the forward, start of the backward), each with everything
  // the blocks and the head keep.
  double bytes = kept + std::max(l.forward_peak, l.backward_peak);
  if (checkpointing == ActivationCheckpointing::Full) {
    // The block being recomputed in the backward holds all its activations at once.
    bytes = std::max(bytes, kept + l.saved + recomputed);
  }
  return bytes;
}

}  // namespace stepcast::zoo
