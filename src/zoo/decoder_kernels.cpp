#include "stepcast/zoo/decoder_kernels.hpp"

#include <fmt/format.h>

#include "stepcast/error.hpp"

namespace stepcast::zoo {

namespace {

int64_t divide_up(int64_t value, int64_t by) { return (value + by - 1) / by; }

/// Appends one layer's kernels, forward and backward, in the order they run.
class KernelList {
 public:
  explicit KernelList(LayerKernels& layer) : layer_(layer) {}

  /// A forward GEMM and its two backward GEMMs (input and weight gradient).
  void gemm(const std::string& name, int64_t m, int64_t n, int64_t k, AttentionPart part, int64_t count = 1) {
    layer_.forward.push_back(make_gemm(name, m, n, k, part, count));
    backward_.push_back(make_gemm(name + " dgrad", m, k, n, part, count));
    backward_.push_back(make_gemm(name + " wgrad", k, n, m, part, count));
    mark(3);
  }
  /// A batched GEMM of two activations over `batch` heads (the unfused attention core), and its
  /// two backward products: the gradient of the first operand (m, k, n) and of the second (k, n, m).
  void batched_gemm(const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch) {
    auto batched = [batch](Kernel kernel) {
      kernel.batch = batch;
      kernel.flops *= static_cast<double>(batch);
      kernel.activations_only = true;
      return kernel;
    };
    layer_.forward.push_back(batched(make_gemm(name, m, n, k, AttentionPart::Core, 1)));
    backward_.push_back(batched(make_gemm(name + " grad a", m, k, n, AttentionPart::Core, 1)));
    backward_.push_back(batched(make_gemm(name + " grad b", k, n, m, AttentionPart::Core, 1)));
  }
  /// The kernels added from now on are (or are not) a MoE layer's routed experts'.
  void routed_experts(bool on) { routed_ = on; }
  /// A memory-bound kernel moving `forward_bytes`, and its backward moving `backward_bytes`.
  void memory(const std::string& name, double forward_bytes, double backward_bytes,
              AttentionPart part = AttentionPart::Before) {
    layer_.forward.push_back(
        {.name = name, .kind = KernelKind::MemoryBound, .bytes = forward_bytes, .part = part});
    if (backward_bytes > 0) {
      backward_.push_back({.name = name + " backward",
                           .kind = KernelKind::MemoryBound,
                           .bytes = backward_bytes,
                           .part = part});
    }
    mark(backward_bytes > 0 ? 2 : 1);
  }
  void attention(double forward_flops) {
    layer_.forward.push_back({.name = "attention core",
                              .kind = KernelKind::Attention,
                              .flops = forward_flops,
                              .part = AttentionPart::Core});
    backward_.push_back({.name = "attention core backward",
                         .kind = KernelKind::Attention,
                         .flops = 2 * forward_flops,
                         .part = AttentionPart::Core});
  }
  /// The backward runs the forward's kernels in reverse order.
  ~KernelList() { layer_.backward.assign(backward_.rbegin(), backward_.rend()); }
  KernelList(const KernelList&) = delete;
  KernelList& operator=(const KernelList&) = delete;

 private:
  static Kernel make_gemm(const std::string& name, int64_t m, int64_t n, int64_t k, AttentionPart part,
                          int64_t count) {
    return {.name = name,
            .kind = KernelKind::Gemm,
            .m = m,
            .n = n,
            .k = k,
            .flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
            .bytes = 0,
            .count = count,
            .part = part};
  }
  /// Marks the last `added` kernels (the forward one and its backward ones) as routed experts'.
  void mark(int added) {
    if (!routed_) return;
    layer_.forward.back().routed_expert = true;
    for (int k = 1; k < added; ++k) backward_[backward_.size() - static_cast<size_t>(k)].routed_expert = true;
  }
  LayerKernels& layer_;
  bool routed_ = false;
  // Built forward, each backward group in its forward kernel's order (dgrad, wgrad), then reversed:
  // so kept reversed within a GEMM too, which is the order autograd runs them in (weight gradient
  // first is as good as any: they are independent).
  std::vector<Kernel> backward_;
};

}  // namespace

std::vector<LayerKernels> decoder_kernels(const ModelSpec& model, const KernelSplit& split) {
  if (!model.transformer) {
    throw Error({"", 0, "workload.model"},
                fmt::format("model \"{}\" is not a transformer decoder: compute from shapes needs its shape",
                            model.name));
  }
  const TransformerShape& s = *model.transformer;
  STEPCAST_ASSERT(split.micro_batch >= 1 && split.tensor >= 1 && split.context >= 1);
  const int64_t t = split.tensor;
  const double e = split.element_bytes;
  // Tokens a rank multiplies (its context shard of every sequence, whole across the tensor group)
  // and those its norms and residuals touch (a tensor shard of them under sequence parallelism).
  const int64_t tokens = split.micro_batch * s.seq_len / split.context;
  const double norm_tokens =
      static_cast<double>(tokens) / static_cast<double>(split.sequence_parallel && t > 1 ? t : 1);
  const auto h = static_cast<double>(s.hidden);
  const int64_t q_width = s.q_width();
  const int64_t kv_width = s.key_width();  // = value_width() without MLA
  const int64_t out_width = s.attention_out_width();
  const int64_t ffn = divide_up(s.ffn_hidden, t);
  const int64_t expert_ffn = divide_up(s.expert_width(), t);  // a shared expert's, split as a dense MLP
  // Routed experts: E / e on the rank, each on f / ETP of its width.
  STEPCAST_ASSERT(split.expert >= 1 && s.experts % split.expert == 0);
  const int64_t etp = split.expert_tensor > 0 ? split.expert_tensor : t;
  const int64_t local_experts = s.experts / split.expert;
  const int64_t routed_ffn = divide_up(s.expert_width(), etp);
  const auto tok = static_cast<double>(tokens);
  // A norm reads and writes its rows; its backward reads the input and the gradient and writes one.
  auto norm = [&](KernelList& list, const std::string& name) {
    list.memory(name, 2 * norm_tokens * h * e, 3 * norm_tokens * h * e);
  };
  // A residual addition reads two rows and writes one; its backward adds the gradient likewise.
  // With dropout the branch's dropout is fused into it (Megatron's bias-dropout-add), which writes
  // a 1-byte mask forward and reads it backward.
  const double mask = s.dropout ? 1.0 : 0.0;
  auto residual = [&](KernelList& list, AttentionPart part) {
    list.memory(s.dropout ? "dropout add" : "residual add", (3 * e + mask) * norm_tokens * h,
                (3 * e + mask) * norm_tokens * h, part);
  };
  // Dropout on `elements`: reads them, writes them and a 1-byte mask; its backward reads the
  // gradient and the mask and writes the gradient.
  auto dropout = [&](KernelList& list, const std::string& kernel, double elements, AttentionPart part) {
    list.memory(kernel, (2 * e + 1) * elements, (2 * e + 1) * elements, part);
  };
  // The MLP's activation on `rows` tokens: SwiGLU reads gate and up and writes their product
  // (backward: reads gate, up and the gradient, writes two gradients); GELU reads one and writes one.
  auto activation = [&](KernelList& list, double rows, int64_t inner) {
    const auto width = static_cast<double>(inner);
    if (s.swiglu) {
      list.memory("swiglu", 3 * rows * width * e, 5 * rows * width * e);
    } else {
      list.memory("gelu", 2 * rows * width * e, 3 * rows * width * e);
    }
  };

  std::vector<LayerKernels> out(model.layers.size());
  for (size_t l = 0; l < model.layers.size(); ++l) {
    const std::string& name = model.layers[l].name;
    KernelList list(out[l]);
    if (name == "embeddings") {
      // Vocabulary-parallel lookup: every rank writes all its tokens' rows (zeros outside its
      // shard); the backward accumulates the gradient rows into the table.
      list.memory("embedding lookup", 2 * tok * h * e, 2 * tok * h * e);
      if (s.positions == PositionEncoding::Learned) list.memory("position add", 3 * tok * h * e, 0);
      // Under sequence parallelism Megatron scatters the embeddings over the tensor group first.
      if (s.dropout) dropout(list, "embedding dropout", norm_tokens * h, AttentionPart::Before);
    } else if (name == "head") {
      norm(list, "final norm");
      const int64_t vocab = divide_up(s.vocab, t);
      list.gemm("lm head", tokens, vocab, s.hidden, AttentionPart::Before);
      // Cross-entropy over the rank's vocabulary shard: reads the logits and writes the
      // probabilities; its backward reads them and writes the logits' gradient.
      const double logits = tok * static_cast<double>(vocab) * e;
      list.memory("cross-entropy", 2 * logits, 2 * logits);
    } else if (name.ends_with(".attention")) {
      norm(list, "attention norm");
      double core_flops = 0;
      if (s.mla()) {
        // Multi-head latent attention (DeepseekV3Attention). The down projections to the query
        // and key-value latents (and their norms) run whole on every rank of a tensor group:
        // their outputs feed all heads. The up projections and o_proj are split by heads.
        auto latent_norm = [&](const std::string& kernel, int64_t width) {
          const double rows = tok * static_cast<double>(width) * e;
          list.memory(kernel, 2 * rows, 3 * rows);
        };
        if (s.q_lora_rank > 0) {
          list.gemm("q down", tokens, s.q_lora_rank, s.hidden, AttentionPart::Before);
          latent_norm("q latent norm", s.q_lora_rank);
          list.gemm("q up", tokens, divide_up(q_width, t), s.q_lora_rank, AttentionPart::Before);
        } else {
          list.gemm("q", tokens, divide_up(q_width, t), s.hidden, AttentionPart::Before);
        }
        list.gemm("kv down", tokens, s.kv_lora_rank + s.qk_rope_head_dim, s.hidden, AttentionPart::Before);
        latent_norm("kv latent norm", s.kv_lora_rank);
        list.gemm("kv up", tokens, divide_up(s.heads * (s.qk_nope_head_dim + s.v_head_dim), t),
                  s.kv_lora_rank, AttentionPart::Before);
        // The rotary part of the rank's query heads and the one rotary key they share.
        const double rotated =
            tok * static_cast<double>(divide_up(s.heads * s.qk_rope_head_dim, t) + s.qk_rope_head_dim) * e;
        if (s.positions == PositionEncoding::Rotary) list.memory("rotary", 2 * rotated, 2 * rotated);
        // The zoo's 2 s^2 (heads x qk_head_dim + heads x v_head_dim) / (t c): Q K^T, then P V.
        core_flops = 2.0 * tok * static_cast<double>(s.seq_len) * static_cast<double>(q_width + out_width) /
                     static_cast<double>(t);
      } else {
        list.gemm("qkv", tokens, divide_up(q_width + 2 * kv_width, t), s.hidden, AttentionPart::Before);
        // Q and K of the rank's heads: normalized per head (Qwen3), then rotated.
        const double rotated = tok * static_cast<double>(divide_up(q_width + kv_width, t)) * e;
        if (s.qk_norm) list.memory("qk norm", 2 * rotated, 3 * rotated);
        if (s.positions == PositionEncoding::Rotary) list.memory("rotary", 2 * rotated, 2 * rotated);
        core_flops = 4.0 * tok * static_cast<double>(s.seq_len) * static_cast<double>(q_width) /
                     static_cast<double>(t);  // the zoo's 4 s^2 q / (t c), q = heads x head_dim
      }
      if (split.flash_attention) {
        list.attention(core_flops);
      } else {
        // Megatron-LM's unfused core on the rank's heads: scores Q K^T, the softmax (and dropout)
        // of the scores written and read back, then P V. Its FLOPs are core_flops.
        const int64_t heads = split.micro_batch * divide_up(s.heads, t);
        const int64_t queries = s.seq_len / split.context;
        const int64_t value_dim = s.attention_out_width() / s.heads;
        list.batched_gemm("scores", queries, s.seq_len, s.qk_head_dim(), heads);
        const double scores =
            static_cast<double>(heads) * static_cast<double>(queries) * static_cast<double>(s.seq_len);
        list.memory("softmax", 2 * e * scores, 3 * e * scores, AttentionPart::Core);
        if (s.dropout) dropout(list, "attention dropout", scores, AttentionPart::Core);
        list.batched_gemm("context", queries, value_dim, s.seq_len, heads);
      }
      list.gemm("attention out", tokens, s.hidden, divide_up(out_width, t), AttentionPart::After);
      residual(list, AttentionPart::After);
    } else if (name.ends_with(".mlp")) {
      norm(list, "mlp norm");
      list.gemm(s.swiglu ? "gate up" : "up", tokens, (s.swiglu ? 2 : 1) * ffn, s.hidden,
                AttentionPart::Before);
      activation(list, tok, ffn);
      list.gemm("down", tokens, s.hidden, ffn, AttentionPart::Before);
      residual(list, AttentionPart::Before);
    } else if (name.ends_with(".moe")) {
      norm(list, "moe norm");
      list.gemm("router", tokens, s.experts, s.hidden, AttentionPart::Before);
      // The rows the rank's experts receive: its expert-parallel group's tokens (e ETP ranks of
      // b s / (c t) tokens each under sequence parallelism) x top_k, over the E / e experts
      // it holds (balanced). Each row copied to its experts and back (permute, unpermute).
      list.routed_experts(true);
      const int64_t expert_tokens = divide_up(tokens * s.top_k * split.expert * etp, t * s.experts);
      const double routed =
          tok * static_cast<double>(s.top_k * etp) / static_cast<double>(t);  // rows received
      list.memory("token permute", 2 * routed * h * e, 2 * routed * h * e);
      list.gemm(s.swiglu ? "expert gate up" : "expert up", expert_tokens, (s.swiglu ? 2 : 1) * routed_ffn,
                s.hidden, AttentionPart::Before, local_experts);
      activation(list, routed, routed_ffn);
      list.gemm("expert down", expert_tokens, s.hidden, routed_ffn, AttentionPart::Before, local_experts);
      list.memory("token unpermute", 2 * routed * h * e, 2 * routed * h * e);
      list.routed_experts(false);
      if (s.shared_experts > 0) {
        // The shared experts run on every token, split over the tensor group like a dense MLP.
        list.gemm(s.swiglu ? "shared expert gate up" : "shared expert up", tokens,
                  (s.swiglu ? 2 : 1) * expert_ffn, s.hidden, AttentionPart::Before, s.shared_experts);
        activation(list, tok * static_cast<double>(s.shared_experts), expert_ffn);
        list.gemm("shared expert down", tokens, s.hidden, expert_ffn, AttentionPart::Before,
                  s.shared_experts);
      }
      residual(list, AttentionPart::Before);
    } else {
      throw Error({"", 0, "workload.model"},
                  fmt::format("layer \"{}\" of \"{}\" is not a decoder layer", name, model.name));
    }
  }
  return out;
}

}  // namespace stepcast::zoo
