// Multi-head latent attention (DeepSeek-V2/V3), the moe_layers pattern and DeepSeek-V3 in the
// zoo: parameter and FLOP counts against closed forms written out here from the config values,
// never from the program's output; the shapes without MLA unchanged; bad fields named by key.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "expect_error.hpp"
#include "stepcast/error.hpp"
#include "stepcast/workload/moe_layers.hpp"
#include "stepcast/zoo/decoder_kernels.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::zoo {
namespace {
namespace mla_zoo_test {  // this file's own names: test files are compiled several to a unit

using stepcast::testing::expect_error;
using workload::BlockSet;

int64_t elements_where(const ModelSpec& m, const std::string& marker) {
  int64_t total = 0;
  for (const Layer& layer : m.layers) {
    for (const ParamTensor& p : layer.params) {
      if (p.name.find(marker) != std::string::npos) total += p.elements;
    }
  }
  return total;
}

void expect_bad_shape(const TransformerShape& shape, const std::string& key) {
  const Error e = expect_error([&] { (void)make_transformer("bad", "bad shape", shape); });
  EXPECT_EQ(e.where().key, key);
  EXPECT_TRUE(stepcast::testing::contains(e.what(), key)) << e.what();
}

// ---- A small MLA decoder: 2 dense blocks, hidden 64, 4 heads, q_lora_rank 32, kv_lora_rank 16,
// qk_nope 8, qk_rope 4, v 8, SwiGLU 256, vocabulary 1000, 16 tokens.
constexpr int64_t kH = 64, kHeads = 4, kQRank = 32, kKvRank = 16, kNope = 8, kRope = 4, kV = 8, kFfn = 256,
                  kVocab = 1000, kSeq = 16;

TransformerShape small_mla() {
  return {.layers = 2,
          .hidden = kH,
          .ffn_hidden = kFfn,
          .heads = kHeads,
          .kv_heads = kHeads,
          .vocab = kVocab,
          .seq_len = kSeq,
          .q_lora_rank = kQRank,
          .kv_lora_rank = kKvRank,
          .qk_nope_head_dim = kNope,
          .qk_rope_head_dim = kRope,
          .v_head_dim = kV};
}

// Hugging Face DeepseekV3Attention's weights: q_a_proj, q_a_layernorm, q_b_proj,
// kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj.
int64_t mla_weights(int64_t h, int64_t heads, int64_t q_rank, int64_t kv_rank, int64_t nope, int64_t rope,
                    int64_t v) {
  const int64_t q =
      q_rank > 0 ? h * q_rank + q_rank + q_rank * heads * (nope + rope) : h * heads * (nope + rope);
  return q + h * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + v) + heads * v * h;
}

TEST(MlaShape, ParameterCountIsTheClosedForm) {
  // 64 x 32 + 32 + 32 x 4 x 12 + 64 x 20 + 16 + 16 x 4 x 16 + 4 x 8 x 64
  // = 2048 + 32 + 1536 + 1280 + 16 + 1024 + 2048 = 7984.
  EXPECT_EQ(mla_weights(kH, kHeads, kQRank, kKvRank, kNope, kRope, kV), 7984);
  const TransformerShape s = small_mla();
  EXPECT_EQ(s.attention_weights(), 7984);
  const ModelSpec m = make_transformer("mla", "small MLA", s);
  const int64_t block = 7984 + 2 * kH + 3 * kH * kFfn;  // attention, two norms, SwiGLU
  EXPECT_EQ(m.num_parameters(), 2 * block + 2 * kVocab * kH + kH);
  EXPECT_EQ(elements_where(m, "q_a_proj"), 2 * kH * kQRank);
  EXPECT_EQ(elements_where(m, "kv_b_proj"), 2 * kKvRank * kHeads * (kNope + kV));
  EXPECT_EQ(elements_where(m, "o_proj"), 2 * kHeads * kV * kH);

  // Without q_lora_rank: one q_proj of h x heads x (nope + rope).
  TransformerShape plain_q = s;
  plain_q.q_lora_rank = 0;
  EXPECT_EQ(plain_q.attention_weights(), mla_weights(kH, kHeads, 0, kKvRank, kNope, kRope, kV));
  const ModelSpec m2 = make_transformer("mla", "small MLA", plain_q);
  EXPECT_EQ(elements_where(m2, "self_attn.q_proj"), 2 * kH * kHeads * (kNope + kRope));
  EXPECT_EQ(elements_where(m2, "q_a_proj"), 0);
}

TEST(MlaShape, BlockFlopsAreTheGemmShapesAndTheCore) {
  const ModelSpec m = make_transformer("mla", "small MLA", small_mla());
  const auto t = static_cast<double>(kSeq);
  // Forward FLOPs of one sequence: 2 x tokens x each projection's in x out, Q K^T over the
  // heads' nope + rope features and P V over their value features, 2 T^2 each per feature.
  const double projections =
      2 * t *
      static_cast<double>(kH * kQRank + kQRank * kHeads * (kNope + kRope) + kH * (kKvRank + kRope) +
                          kKvRank * kHeads * (kNope + kV) + kHeads * kV * kH);
  const double core = 2 * t * t * static_cast<double>(kHeads * (kNope + kRope)) +
                      2 * t * t * static_cast<double>(kHeads * kV);
  ASSERT_EQ(m.layers[1].name, "model.layers.0.attention");
  EXPECT_DOUBLE_EQ(m.layers[1].forward_flops, projections + core);

  // The kernels of workload.compute: shapes add up to the same FLOPs, the backward twice them.
  const std::vector<LayerKernels> kernels = decoder_kernels(m, {.micro_batch = 1});
  double forward = 0, backward = 0;
  for (const Kernel& k : kernels[1].forward) forward += k.flops * static_cast<double>(k.count);
  for (const Kernel& k : kernels[1].backward) backward += k.flops * static_cast<double>(k.count);
  EXPECT_DOUBLE_EQ(forward, projections + core);
  EXPECT_DOUBLE_EQ(backward, 2 * (projections + core));

  // A tensor group of 2 splits the heads (q_b, kv_b, o_proj, the core); the down projections
  // (q_a, kv_a) run whole on every rank.
  const std::vector<LayerKernels> split = decoder_kernels(m, {.micro_batch = 1, .tensor = 2});
  double split_forward = 0;
  for (const Kernel& k : split[1].forward) split_forward += k.flops * static_cast<double>(k.count);
  const double down = 2 * t * static_cast<double>(kH * kQRank + kH * (kKvRank + kRope));
  EXPECT_DOUBLE_EQ(split_forward, down + (projections - down + core) / 2);
}

TEST(MlaShape, WidthsOfTheRingAndTheHeads) {
  const TransformerShape s = small_mla();
  EXPECT_EQ(s.q_width(), kHeads * (kNope + kRope));
  EXPECT_EQ(s.key_width(), kHeads * (kNope + kRope));
  EXPECT_EQ(s.value_width(), kHeads * kV);
  EXPECT_EQ(s.attention_out_width(), kHeads * kV);
  EXPECT_EQ(s.ring_kv_width(), kKvRank + kRope);  // the latent and the shared rotary key
}

TEST(MlaShape, ShapesWithoutMlaKeepTheirWidthsAndCounts) {
  // Llama 3 8B: 32 heads of 128, 8 K/V heads; the ring passes K and V, 2 x 8 x 128.
  const TransformerShape& llama = *get_model("llama3-8b").transformer;
  EXPECT_FALSE(llama.mla());
  EXPECT_EQ(llama.q_width(), 4096);
  EXPECT_EQ(llama.key_width(), 1024);
  EXPECT_EQ(llama.value_width(), 1024);
  EXPECT_EQ(llama.attention_out_width(), 4096);
  EXPECT_EQ(llama.ring_kv_width(), 2048);
  EXPECT_EQ(llama.attention_weights(), 4096 * 4096 * 2 + 2 * 4096 * 1024);
  // Qwen3-30B-A3B's q and k norms are attention weights too: 2048 x (4096 + 512 + 512) +
  // 4096 x 2048 + 2 x 128.
  EXPECT_EQ(get_model("qwen3-30b-a3b").transformer->attention_weights(),
            2048 * (4096 + 512 + 512) + 4096 * 2048 + 256);
}

TEST(MlaShape, RejectsInconsistentFieldsNamingTheirKey) {
  TransformerShape s = small_mla();
  s.v_head_dim = 0;
  expect_bad_shape(s, "workload.transformer.v_head_dim");
  s = small_mla();
  s.qk_nope_head_dim = 0;
  s.qk_rope_head_dim = 0;
  expect_bad_shape(s, "workload.transformer.qk_nope_head_dim");
  s = small_mla();
  s.q_lora_rank = -1;
  expect_bad_shape(s, "workload.transformer.q_lora_rank");
  s = small_mla();
  s.kv_lora_rank = -1;
  expect_bad_shape(s, "workload.transformer.kv_lora_rank");
  s = small_mla();
  s.kv_heads = 2;
  expect_bad_shape(s, "workload.transformer.kv_heads");
  s = small_mla();
  s.head_dim_override = 16;
  expect_bad_shape(s, "workload.transformer.head_dim");
  // Without kv_lora_rank the other MLA fields would be ignored; they are refused instead.
  TransformerShape dense = *get_model("llama2-7b").transformer;
  dense.v_head_dim = 128;
  expect_bad_shape(dense, "workload.transformer.v_head_dim");
  dense = *get_model("llama2-7b").transformer;
  dense.q_lora_rank = 128;
  expect_bad_shape(dense, "workload.transformer.q_lora_rank");
}

// ---- moe_layers: which blocks are mixtures of experts.

// 4 blocks, hidden 64, dense MLP 256, 8 experts of 32 (top-2), 4 heads.
TransformerShape small_moe() {
  return {.layers = 4,
          .hidden = 64,
          .ffn_hidden = 256,
          .heads = 4,
          .kv_heads = 4,
          .vocab = 1000,
          .experts = 8,
          .top_k = 2,
          .seq_len = 16,
          .expert_ffn_hidden = 32};
}

TEST(MoeLayers, EveryTwoHalvesTheRoutedExpertsParameters) {
  const ModelSpec all = make_transformer("all", "all MoE", small_moe());
  TransformerShape s = small_moe();
  s.moe_layers = workload::parse_moe_layers("every 2", s.layers, {"", 0, "k"});
  const ModelSpec every2 = make_transformer("every2", "every other block MoE", s);
  const int64_t expert = 3 * 64 * 32;  // one SwiGLU expert of 32 on a hidden of 64
  EXPECT_EQ(elements_where(all, ".experts."), 4 * 8 * expert);
  EXPECT_EQ(elements_where(every2, ".experts."), 2 * 8 * expert);
  EXPECT_EQ(s.moe_blocks(), 2);
  EXPECT_TRUE(s.is_moe_block(0));
  EXPECT_FALSE(s.is_moe_block(1));
  EXPECT_TRUE(s.is_moe_block(2));
  // Blocks 1 and 3 are dense: a router of 64 x 8 and 8 experts traded for a SwiGLU of 256.
  const int64_t moe_mlp = 64 * 8 + 8 * expert, dense_mlp = 3 * 64 * 256;
  EXPECT_EQ(all.num_parameters() - every2.num_parameters(), 2 * (moe_mlp - dense_mlp));
  EXPECT_EQ(every2.layers[4].name, "model.layers.1.mlp");
  EXPECT_EQ(every2.layers[6].name, "model.layers.2.moe");
  // 6 idle experts in each of the 2 MoE blocks.
  EXPECT_EQ(active_parameters(every2), every2.num_parameters() - 1000 * 64 - 2 * 6 * expert);
}

TEST(MoeLayers, AgreesWithDenseLayersFirstOrIsRefused) {
  TransformerShape by_count = small_moe();
  by_count.dense_layers_first = 1;
  TransformerShape by_pattern = small_moe();
  by_pattern.moe_layers = workload::parse_moe_layers("1-3", 4, {"", 0, "k"});
  EXPECT_EQ(make_transformer("a", "a", by_count).num_parameters(),
            make_transformer("b", "b", by_pattern).num_parameters());
  TransformerShape both = by_pattern;
  both.dense_layers_first = 1;  // the same blocks: accepted
  EXPECT_EQ(make_transformer("c", "c", both).num_parameters(),
            make_transformer("a", "a", by_count).num_parameters());
  both.moe_layers = workload::parse_moe_layers("every 2", 4, {"", 0, "k"});
  expect_bad_shape(both, "workload.transformer.moe_layers");
  TransformerShape dense = *get_model("llama2-7b").transformer;
  dense.moe_layers = BlockSet{}.set(0);
  expect_bad_shape(dense, "workload.transformer.moe_layers");
  TransformerShape past = small_moe();
  past.moe_layers = BlockSet{}.set(4);  // of blocks 0-3
  expect_bad_shape(past, "workload.transformer.moe_layers");
}

TEST(MoeLayers, ParsesEachForm) {
  const SourceLocation where{"s.yaml", 7, "workload.transformer.moe_layers"};
  EXPECT_FALSE(workload::parse_moe_layers("all", 61, where).has_value());
  const auto range = workload::parse_moe_layers("3-60", 61, where);
  ASSERT_TRUE(range.has_value());
  EXPECT_EQ(range->count(), 58u);
  EXPECT_FALSE(range->test(2));
  EXPECT_TRUE(range->test(3));
  EXPECT_TRUE(range->test(60));
  BlockSet expected;
  for (size_t b : {0, 2, 4, 5, 6, 7, 8, 9}) expected.set(b);
  EXPECT_EQ(workload::parse_moe_layers("[0, 2, \"4-9\"]", 12, where), expected);
  EXPECT_EQ(workload::parse_moe_layers("0,2,4-9", 12, where), expected);  // a YAML list, joined
  EXPECT_EQ(workload::format_moe_layers(expected), "[0, 2, 4-9]");
  EXPECT_EQ(workload::parse_moe_layers(workload::format_moe_layers(expected), 12, where), expected);
  const auto every = workload::parse_moe_layers("every 3", 8, where);
  ASSERT_TRUE(every.has_value());
  EXPECT_EQ(*every, BlockSet{}.set(0).set(3).set(6));
  EXPECT_EQ(workload::parse_moe_layers("5", 8, where), BlockSet{}.set(5));
}

TEST(MoeLayers, BadFormsNameTheKey) {
  const SourceLocation where{"s.yaml", 7, "workload.transformer.moe_layers"};
  for (const char* text : {"some", "every", "every 0", "every x", "3-", "5-2", "[]", "[1,,2]", "[1, 2", "-1",
                           "8", "0-8", "1.5"}) {
    SCOPED_TRACE(text);
    const Error e = expect_error([&] { (void)workload::parse_moe_layers(text, 8, where); });
    EXPECT_EQ(e.where().key, "workload.transformer.moe_layers");
    EXPECT_EQ(e.where().line, 7);
  }
  // The pattern holds 1024 blocks: a block past it, or a decoder of more blocks, is refused.
  const Error past = expect_error([&] { (void)workload::parse_moe_layers("1024", 2000, where); });
  EXPECT_TRUE(stepcast::testing::contains(past.what(), "1024")) << past.what();
  const Error long_decoder = expect_error([&] { (void)workload::parse_moe_layers("every 2", 1025, where); });
  EXPECT_EQ(long_decoder.where().key, "workload.transformer.moe_layers");
  EXPECT_TRUE(workload::parse_moe_layers("0-1023", 1024, where)->all());
}

// ---- DeepSeek-V3: Hugging Face deepseek-ai/DeepSeek-V3 config.json.

// hidden_size 7168, num_hidden_layers 61, num_attention_heads 128, q_lora_rank 1536,
// kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128,
// intermediate_size 18432, moe_intermediate_size 2048, n_routed_experts 256,
// num_experts_per_tok 8, n_shared_experts 1, first_k_dense_replace 3, vocab_size 129280,
// tie_word_embeddings false, attention_bias false; num_nextn_predict_layers 1 (the MTP module,
// left out as the published 671B leaves it out).
constexpr int64_t kDsHidden = 7168, kDsLayers = 61, kDsHeads = 128, kDsQRank = 1536, kDsKvRank = 512,
                  kDsNope = 128, kDsRope = 64, kDsV = 128, kDsFfn = 18432, kDsExpertWidth = 2048,
                  kDsExperts = 256, kDsTopK = 8, kDsShared = 1, kDsDense = 3, kDsVocab = 129280;

int64_t deepseek_attention() {
  return mla_weights(kDsHidden, kDsHeads, kDsQRank, kDsKvRank, kDsNope, kDsRope, kDsV);
}

// What the zoo models: every tensor of DeepseekV3ForCausalLM less the MTP module and the
// routers' e_score_correction_bias (256 a MoE block; the auxiliary-loss-free balancing sets it by
// a rule, not by gradients). With it the total is 671,026,419,200.
int64_t deepseek_total() {
  const int64_t h = kDsHidden;
  const int64_t block_common = deepseek_attention() + 2 * h;  // + input and post-attention RMSNorm
  const int64_t dense_mlp = 3 * h * kDsFfn;
  const int64_t expert = 3 * h * kDsExpertWidth;
  const int64_t moe_mlp = h * kDsExperts + (kDsExperts + kDsShared) * expert;  // router, experts
  const int64_t moe_blocks = kDsLayers - kDsDense;
  return kDsLayers * block_common + kDsDense * dense_mlp + moe_blocks * moe_mlp + 2 * kDsVocab * h + h;
}

TEST(DeepSeekV3Zoo, AttentionOfOneBlockIsTheConfigsClosedForm) {
  // q_a 7168 x 1536 = 11,010,048; q_a_layernorm 1536; q_b 1536 x 128 x 192 = 37,748,736;
  // kv_a 7168 x 576 = 4,128,768; kv_a_layernorm 512; kv_b 512 x 128 x 256 = 16,777,216;
  // o_proj 128 x 128 x 7168 = 117,440,512: 187,107,328.
  EXPECT_EQ(deepseek_attention(), 187'107'328);
  const ModelSpec& m = get_model("deepseek-v3");
  EXPECT_EQ(m.transformer->attention_weights(), 187'107'328);
  ASSERT_EQ(m.layers[1].name, "model.layers.0.attention");
  int64_t block0 = 0;
  for (const ParamTensor& p : m.layers[1].params) block0 += p.elements;
  EXPECT_EQ(block0, 187'107'328 + kDsHidden);  // + its input norm
}

TEST(DeepSeekV3Zoo, ParameterCountIsTheConfigsClosedFormAnd671B) {
  const ModelSpec& m = get_model("deepseek-v3");
  // 61 x (187,107,328 + 14,336) + 3 x 396,361,728 + 58 x (1,835,008 + 257 x 44,040,192)
  // + 2 x 926,679,040 + 7168 = 671,026,404,352.
  EXPECT_EQ(deepseek_total(), 671'026'404'352);
  EXPECT_EQ(m.num_parameters(), deepseek_total());
  EXPECT_EQ(std::llround(static_cast<double>(m.num_parameters()) / 1e9), 671);  // the published 671B
  EXPECT_EQ(m.transformer->moe_blocks(), 58);
  EXPECT_EQ(m.layers[2].name, "model.layers.0.mlp");
  EXPECT_EQ(m.layers[8].name, "model.layers.3.moe");
}

TEST(DeepSeekV3Zoo, ActiveParametersAreAbout37B) {
  // Active: attention, the dense MLPs, the shared expert, top-8 of the routed experts, the
  // routers, the norms and the LM head; not the embedding table (looked up, not multiplied).
  const int64_t expert = 3 * kDsHidden * kDsExpertWidth;
  const int64_t active =
      deepseek_total() - kDsVocab * kDsHidden - (kDsLayers - kDsDense) * (kDsExperts - kDsTopK) * expert;
  EXPECT_EQ(active, 36'625'603'584);
  const ModelSpec& m = get_model("deepseek-v3");
  EXPECT_EQ(active_parameters(m), active);
  EXPECT_EQ(std::llround(static_cast<double>(active) / 1e9), 37);  // the published 37B activated
}

TEST(DeepSeekV3Zoo, KernelsAddUpToTheZooFlops) {
  const ModelSpec& m = get_model("deepseek-v3");
  const std::vector<LayerKernels> kernels = decoder_kernels(m, {.micro_batch = 1});
  for (size_t l = 1; l < kernels.size(); ++l) {
    double forward = 0;
    for (const Kernel& k : kernels[l].forward) forward += k.flops * static_cast<double>(k.count);
    EXPECT_NEAR(forward, m.layers[l].forward_flops, 1e-12 * m.layers[l].forward_flops) << m.layers[l].name;
  }
}

}  // namespace mla_zoo_test
}  // namespace
}  // namespace stepcast::zoo
