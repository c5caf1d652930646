// Mixtures of experts and attention wider than the model in the zoo: Qwen3-30B-A3B against its
// published parameter counts and a closed form of its config.json written out here, and the
// shape fields behind it (head_dim, qk_norm, expert_ffn_hidden, shared_experts,
// dense_layers_first) against parameter and FLOP counts derived by hand, never from the
// program's output.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "expect_error.hpp"
#include "stepcast/error.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::zoo {
namespace {
namespace moe_zoo_test {  // this file's own names: test files are compiled several to a unit

using stepcast::testing::expect_error;

int64_t tensor_elements(const ModelSpec& m, const std::string& name) {
  for (const Layer& layer : m.layers) {
    for (const ParamTensor& p : layer.params) {
      if (p.name == name) return p.elements;
    }
  }
  return -1;
}

// ---- Qwen3-30B-A3B: Hugging Face Qwen/Qwen3-30B-A3B config.json.

// The config's numbers: hidden_size 2048, num_hidden_layers 48, num_attention_heads 32,
// num_key_value_heads 4, head_dim 128, moe_intermediate_size 768, num_experts 128,
// num_experts_per_tok 8, vocab_size 151936, tie_word_embeddings false, attention_bias false,
// every block sparse (decoder_sparse_step 1, mlp_only_layers []).
constexpr int64_t kQwenHidden = 2048, kQwenLayers = 48, kQwenHeads = 32, kQwenKvHeads = 4, kQwenHeadDim = 128,
                  kQwenExpertWidth = 768, kQwenExperts = 128, kQwenTopK = 8, kQwenVocab = 151936;

// Qwen3MoeForCausalLM's parameters, module by module.
int64_t qwen3_block_parameters() {
  const int64_t h = kQwenHidden, q = kQwenHeads * kQwenHeadDim, kv = kQwenKvHeads * kQwenHeadDim;
  const int64_t attention = h * q + 2 * h * kv + q * h;  // q_proj, k_proj, v_proj, o_proj
  const int64_t head_norms = 2 * kQwenHeadDim;           // q_norm, k_norm: one weight of head_dim each
  const int64_t norms = 2 * h;                           // input and post-attention RMSNorm
  const int64_t router = h * kQwenExperts;               // mlp.gate, no bias
  const int64_t expert = 3 * h * kQwenExpertWidth;       // gate_proj, up_proj, down_proj
  return attention + head_norms + norms + router + kQwenExperts * expert;
}

int64_t qwen3_total_parameters() {
  // embed_tokens and the untied lm_head, then the final norm.
  return kQwenLayers * qwen3_block_parameters() + 2 * kQwenVocab * kQwenHidden + kQwenHidden;
}

TEST(Qwen3Zoo, ParameterCountIsTheConfigsClosedForm) {
  const ModelSpec& m = get_model("qwen3-30b-a3b");
  // Per block: attention 2048 x 4096 x 2 + 2048 x 512 x 2 = 18,874,368, q/k norms 256, norms
  // 4096, router 262,144, experts 128 x 4,718,592 = 603,979,776: 623,120,640; x 48 =
  // 29,909,790,720; embeddings and head 2 x 151936 x 2048 = 622,329,856; final norm 2048.
  EXPECT_EQ(qwen3_block_parameters(), 623'120'640);
  EXPECT_EQ(qwen3_total_parameters(), 30'532'122'624);
  EXPECT_EQ(m.num_parameters(), qwen3_total_parameters());
}

TEST(Qwen3Zoo, MatchesTheModelCardsPublishedCounts) {
  // Qwen's model card: "Number of Parameters: 30.5B in total and 3.3B activated; Number of
  // Parameters (Non-Embedding): 29.9B". The card truncates to one decimal (3.35B is given as
  // 3.3B), so each count must lie in [published, published + 0.1B).
  const ModelSpec& m = get_model("qwen3-30b-a3b");
  const auto in_published_range = [](double count, double published_billions) {
    return count >= published_billions * 1e9 && count < (published_billions + 0.1) * 1e9;
  };
  const auto total = static_cast<double>(m.num_parameters());
  EXPECT_TRUE(in_published_range(total, 30.5)) << total;
  const auto embedding = static_cast<double>(kQwenVocab * kQwenHidden);
  EXPECT_TRUE(in_published_range(total - 2 * embedding, 29.9)) << total - 2 * embedding;
  // Activated, as Qwen counts it (and as Mistral's 12.9B for Mixtral): every parameter a token
  // uses, the embedding row included. active_parameters() leaves the lookup out.
  const auto active = static_cast<double>(active_parameters(m));
  EXPECT_TRUE(in_published_range(active + embedding, 3.3)) << active + embedding;
}

TEST(Qwen3Zoo, ActiveParametersRunTopEightOfTheExperts) {
  // 120 of 128 experts idle in each of the 48 blocks, and the embedding lookup left out.
  const int64_t idle = kQwenLayers * (kQwenExperts - kQwenTopK) * 3 * kQwenHidden * kQwenExpertWidth;
  const int64_t active = qwen3_total_parameters() - kQwenVocab * kQwenHidden - idle;
  EXPECT_EQ(active, 3'041'867'776);
  EXPECT_EQ(active_parameters(get_model("qwen3-30b-a3b")), active);
  EXPECT_EQ(flops_per_token_6n(get_model("qwen3-30b-a3b")), 6.0 * static_cast<double>(active));
}

TEST(Qwen3Zoo, TensorsAreQwensWidthsUnderMixtralsNames) {
  const ModelSpec& m = get_model("qwen3-30b-a3b");
  // q_proj maps the hidden 2048 to 32 heads of 128 and o_proj back: 4096 wide, not 2048.
  EXPECT_EQ(tensor_elements(m, "model.layers.0.self_attn.q_proj.weight"), 2048 * 4096);
  EXPECT_EQ(tensor_elements(m, "model.layers.0.self_attn.k_proj.weight"), 2048 * 512);
  EXPECT_EQ(tensor_elements(m, "model.layers.0.self_attn.v_proj.weight"), 2048 * 512);
  EXPECT_EQ(tensor_elements(m, "model.layers.0.self_attn.o_proj.weight"), 4096 * 2048);
  EXPECT_EQ(tensor_elements(m, "model.layers.47.self_attn.q_norm.weight"), 128);
  EXPECT_EQ(tensor_elements(m, "model.layers.47.self_attn.k_norm.weight"), 128);
  EXPECT_EQ(tensor_elements(m, "model.layers.0.block_sparse_moe.gate.weight"), 2048 * 128);
  EXPECT_EQ(tensor_elements(m, "model.layers.47.block_sparse_moe.experts.127.w1.weight"), 2048 * 768);
  EXPECT_EQ(tensor_elements(m, "model.layers.47.block_sparse_moe.experts.127.w2.weight"), 768 * 2048);
  EXPECT_EQ(tensor_elements(m, "model.layers.0.mlp.gate_proj.weight"), -1);  // no dense MLP
  // Per block: 2 norms, 4 projections, 2 head norms, the router, 128 experts x 3 matrices.
  EXPECT_EQ(m.num_tensors(), 1u + 48u * (2u + 4u + 2u + 1u + 128u * 3u) + 2u);
  for (int64_t b = 0; b < kQwenLayers; ++b) {
    EXPECT_EQ(m.layers[static_cast<size_t>(2 + 2 * b)].name, "model.layers." + std::to_string(b) + ".moe");
  }
}

TEST(Qwen3Zoo, TrainingFlopsUseTheQueryWidthNotTheHidden) {
  // Megatron's accounting per token, x 3 for training: every matrix product of the block (q, k,
  // v, o; router; top-8 experts) and the LM head, plus 2 x 2 x s x heads x head_dim per block
  // for the scores and context, with heads x head_dim = 4096 (twice the hidden).
  const double l = kQwenLayers, h = kQwenHidden, q = kQwenHeads * kQwenHeadDim,
               g = kQwenKvHeads * kQwenHeadDim;
  const double s = 4096, v = kQwenVocab, e = kQwenExperts, k = kQwenTopK, f = kQwenExpertWidth;
  const double weights = l * (h * q + 2 * h * g + q * h + h * e + k * 3 * h * f) + h * v;
  const double expected = 6 * weights + 12 * l * q * s;
  EXPECT_NEAR(training_flops_per_token(get_model("qwen3-30b-a3b")) / expected, 1.0, 1e-12);
}

// ---- The shape fields on a small DeepSeek-like decoder: 4 blocks, the first dense (MLP 256),
// three with 8 routed experts of 32 (top-2) and one shared expert; hidden 64, 4 heads of 32
// (128 wide), 2 K/V heads, vocabulary 1000, 16 tokens.

TransformerShape small_moe() {
  return {.layers = 4,
          .hidden = 64,
          .ffn_hidden = 256,
          .heads = 4,
          .kv_heads = 2,
          .vocab = 1000,
          .experts = 8,
          .top_k = 2,
          .seq_len = 16,
          .head_dim_override = 32,
          .qk_norm = true,
          .expert_ffn_hidden = 32,
          .shared_experts = 1,
          .dense_layers_first = 1};
}

constexpr int64_t kH = 64, kQ = 4 * 32, kG = 2 * 32, kDense = 256, kExpert = 32, kVocab = 1000;
constexpr int64_t kAttention = kH * kQ + 2 * kH * kG + kQ * kH + 2 * 32 + kH;  // + q/k norms, input norm
constexpr int64_t kExpertMlp = 3 * kH * kExpert;

TEST(MoeShape, DenseBlocksFirstThenRoutedAndSharedExperts) {
  const ModelSpec m = make_transformer("small", "DeepSeek-like", small_moe());
  // Block 0: attention, a dense SwiGLU of 256 and its norm. Blocks 1-3: attention, the norm,
  // the router (64 x 8), 8 routed experts and 1 shared expert of 32.
  const int64_t dense_block = kAttention + kH + 3 * kH * kDense;
  const int64_t moe_block = kAttention + kH + kH * 8 + (8 + 1) * kExpertMlp;
  const int64_t total = dense_block + 3 * moe_block + 2 * kVocab * kH + kH;
  EXPECT_EQ(m.num_parameters(), total);
  // Six routed experts idle per MoE block; the shared expert and the dense block always run.
  EXPECT_EQ(active_parameters(m), total - kVocab * kH - 3 * 6 * kExpertMlp);

  EXPECT_EQ(m.layers[2].name, "model.layers.0.mlp");
  EXPECT_EQ(tensor_elements(m, "model.layers.0.mlp.gate_proj.weight"), kH * kDense);
  EXPECT_EQ(tensor_elements(m, "model.layers.0.block_sparse_moe.gate.weight"), -1);
  for (int b = 1; b < 4; ++b) {
    EXPECT_EQ(m.layers[static_cast<size_t>(2 + 2 * b)].name, "model.layers." + std::to_string(b) + ".moe");
  }
  EXPECT_EQ(tensor_elements(m, "model.layers.3.block_sparse_moe.experts.7.w3.weight"), kH * kExpert);
  EXPECT_EQ(tensor_elements(m, "model.layers.3.block_sparse_moe.shared_experts.0.w1.weight"), kH * kExpert);
  EXPECT_EQ(tensor_elements(m, "model.layers.3.block_sparse_moe.shared_experts.0.w2.weight"), kExpert * kH);
  EXPECT_EQ(tensor_elements(m, "model.layers.3.self_attn.o_proj.weight"), kQ * kH);
}

TEST(MoeShape, SharedExpertNamesDoNotLookRouted) {
  // Expert parallelism finds a routed expert's tensors by ".experts.<k>" in the name
  // (scheme::expert_of_tensor) and shards them; the shared experts stay on every rank.
  const ModelSpec m = make_transformer("small", "DeepSeek-like", small_moe());
  int routed = 0, shared = 0;
  for (const Layer& layer : m.layers) {
    for (const ParamTensor& p : layer.params) {
      const bool is_shared = p.name.find("shared_experts") != std::string::npos;
      const bool looks_routed = p.name.find(".experts.") != std::string::npos;
      if (is_shared) {
        ++shared;
        EXPECT_FALSE(looks_routed) << p.name;
      } else if (looks_routed) {
        ++routed;
      }
    }
  }
  EXPECT_EQ(shared, 3 * 3);      // one shared expert's 3 matrices in each MoE block
  EXPECT_EQ(routed, 3 * 8 * 3);  // 8 routed experts' 3 matrices in each MoE block
}

TEST(MoeShape, FlopsRunTopKRoutedEveryShared) {
  const ModelSpec m = make_transformer("small", "DeepSeek-like", small_moe());
  // Per token: attention projections h (q + 2g) + q h; the dense block's MLP 3 h f; each MoE
  // block's router h E and 2 routed + 1 shared experts; the LM head h V. Scores and context
  // 2 x 2 x s x q per block.
  const double s = 16;
  const double attention = static_cast<double>(kH * (kQ + 2 * kG) + kQ * kH);
  const double weights = 4 * attention + 3.0 * kH * kDense + 3 * (kH * 8.0 + 3.0 * kExpertMlp) +
                         static_cast<double>(kH * kVocab);
  const double forward_per_token = 2 * weights + 4 * 4 * s * static_cast<double>(kQ);
  EXPECT_NEAR(m.forward_flops() / (forward_per_token * s), 1.0, 1e-12);
  EXPECT_NEAR(training_flops_per_token(m) / (3 * forward_per_token), 1.0, 1e-12);
}

TEST(MoeShape, WorkloadKeepsTwoLayersPerBlock) {
  const ModelSpec m = make_transformer("small", "DeepSeek-like", small_moe());
  const workload::Workload w = to_workload(m, {.batch_per_worker = 1, .step_time = 1.0});
  EXPECT_EQ(workload::validate(w), "");
  EXPECT_EQ(w.block_of_layer, (std::vector<int>{-1, 0, 0, 1, 1, 2, 2, 3, 3, -1}));
  ASSERT_TRUE(w.facts.transformer.has_value());
  EXPECT_EQ(w.facts.transformer->dense_layers_first, 1);
}

TEST(MoeShape, DefaultsKeepTheModelAsItWas) {
  // head_dim equal to hidden / heads, or 0, builds the same layers: Llama 2 7B's 32 heads of 128.
  TransformerShape shape = *get_model("llama2-7b").transformer;
  EXPECT_EQ(shape.head_dim(), 128);
  EXPECT_EQ(shape.q_width(), shape.hidden);
  EXPECT_EQ(shape.expert_width(), shape.ffn_hidden);
  shape.head_dim_override = 128;
  EXPECT_EQ(make_transformer("x", "y", shape).layers, get_model("llama2-7b").layers);
  // Mixtral with every block a mixture and expert_ffn_hidden its ffn_hidden: the same layers.
  shape = *get_model("mixtral-8x7b").transformer;
  shape.expert_ffn_hidden = shape.ffn_hidden;
  shape.dense_layers_first = 0;
  EXPECT_EQ(make_transformer("x", "y", shape).layers, get_model("mixtral-8x7b").layers);
  // Every block dense: no idle experts at all.
  shape.dense_layers_first = shape.layers;
  const ModelSpec dense = make_transformer("x", "y", shape);
  EXPECT_EQ(active_parameters(dense), dense.num_parameters() - 32000 * 4096);
}

TEST(MoeShape, HeadDimNeedNotDivideTheHidden) {
  TransformerShape shape = small_moe();
  shape.heads = 3;  // 64 / 3 is not whole, 3 heads of 32 are fine
  shape.kv_heads = 3;
  const ModelSpec m = make_transformer("odd", "3 heads of 32", shape);
  EXPECT_EQ(tensor_elements(m, "model.layers.0.self_attn.q_proj.weight"), 64 * 96);
  EXPECT_EQ(tensor_elements(m, "model.layers.0.self_attn.o_proj.weight"), 96 * 64);
}

// ---- Shapes that cannot be built.

void expect_bad_shape(const TransformerShape& shape, const std::string& key) {
  const Error e = expect_error([&] { (void)make_transformer("bad", "bad shape", shape); });
  EXPECT_EQ(e.where().key, key);
  EXPECT_TRUE(stepcast::testing::contains(e.what(), key)) << e.what();
}

TEST(MoeShape, RejectsBadValuesNamingTheirKey) {
  TransformerShape s = small_moe();
  s.head_dim_override = -1;
  expect_bad_shape(s, "workload.transformer.head_dim");
  s.head_dim_override = int64_t{1} << 23;  // 4 heads x 2^23 is past the 2^24 every width keeps to
  expect_bad_shape(s, "workload.transformer.head_dim");
  s = small_moe();
  s.head_dim_override = 0;  // hidden / heads then: 64 / 3 is not whole
  s.heads = 3;
  s.kv_heads = 3;
  expect_bad_shape(s, "workload.transformer.heads");

  s = small_moe();
  s.expert_ffn_hidden = -32;
  expect_bad_shape(s, "workload.transformer.expert_ffn_hidden");
  s = small_moe();
  s.shared_experts = -1;
  expect_bad_shape(s, "workload.transformer.shared_experts");
  s.shared_experts = kMaxBlockExperts;  // 4 blocks x (8 + 2^16) experts to build
  expect_bad_shape(s, "workload.transformer.shared_experts");
  s = small_moe();
  s.dense_layers_first = 5;  // of 4 blocks
  expect_bad_shape(s, "workload.transformer.dense_layers_first");
  s.dense_layers_first = -1;
  expect_bad_shape(s, "workload.transformer.dense_layers_first");

  // A dense model would ignore the experts' fields; they are refused instead.
  TransformerShape dense = *get_model("llama2-7b").transformer;
  dense.shared_experts = 1;
  expect_bad_shape(dense, "workload.transformer.shared_experts");
  dense = *get_model("llama2-7b").transformer;
  dense.expert_ffn_hidden = 1024;
  expect_bad_shape(dense, "workload.transformer.expert_ffn_hidden");
  dense = *get_model("llama2-7b").transformer;
  dense.dense_layers_first = 1;
  expect_bad_shape(dense, "workload.transformer.dense_layers_first");

  // GPT2LMHeadModel has no q and k norms.
  TransformerShape gpt2 = *get_model("gpt2").transformer;
  gpt2.qk_norm = true;
  expect_bad_shape(gpt2, "workload.transformer.qk_norm");
}

}  // namespace moe_zoo_test
}  // namespace
}  // namespace stepcast::zoo
