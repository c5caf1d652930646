// The zoo's decoder-only transformers: parameter counts against the published (Hugging Face)
// numbers, the tensor layout autograd sees, FLOPs against closed forms written out here from
// the Megatron-LM paper (never from the program's output), and the shape checks.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "expect_error.hpp"
#include "stepcast/error.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::zoo {
namespace {
namespace transformer_zoo_test {  // this file's own names: test files are compiled several to a unit

using stepcast::testing::expect_error;

// ---- Parameter counts: sum(p.numel() for p in model.parameters()) of the HF model.

TEST(TransformerZoo, Gpt2HasHuggingFaceParameterCount) {
  // wte 50257 * 768 + wpe 1024 * 768 + 12 blocks * (12 * 768^2 + 13 * 768) + ln_f 2 * 768; the
  // tied LM head adds nothing.
  EXPECT_EQ(get_model("gpt2").num_parameters(), 124'439'808);
}

TEST(TransformerZoo, Gpt2XlHasHuggingFaceParameterCount) {
  // Per block: ln_1 and ln_2 4h, c_attn 3h^2 + 3h, c_proj h^2 + h, c_fc 4h^2 + 4h, mlp.c_proj
  // 4h^2 + h = 12 h^2 + 13 h = 30,740,800 for h = 1600.
  const int64_t h = 1600;
  const int64_t block = 12 * h * h + 13 * h;
  EXPECT_EQ(block, 30'740'800);
  const int64_t expected = 50257 * h + 1024 * h + 48 * block + 2 * h;
  EXPECT_EQ(expected, 1'557'611'200);
  EXPECT_EQ(get_model("gpt2-xl").num_parameters(), 1'557'611'200);
}

TEST(TransformerZoo, Llama2HasHuggingFaceParameterCounts) {
  // 7B: embed and lm_head 2 * 32000 * 4096, 32 * (4 * 4096^2 + 3 * 4096 * 11008 + 2 * 4096),
  // model.norm 4096.
  EXPECT_EQ(get_model("llama2-7b").num_parameters(), 6'738'415'616);
  EXPECT_EQ(get_model("llama2-13b").num_parameters(), 13'015'864'320);
  // 70B with grouped-query attention: K and V are 8192 x (8 * 128) each.
  EXPECT_EQ(get_model("llama2-70b").num_parameters(), 68'976'648'192);
}

TEST(TransformerZoo, Llama3HasHuggingFaceParameterCounts) {
  EXPECT_EQ(get_model("llama3-8b").num_parameters(), 8'030'261'248);
  EXPECT_EQ(get_model("llama3-70b").num_parameters(), 70'553'706'496);
  // Llama 3.1 405B's config (126 layers, hidden 16384, MLP 53248, 128 query and 8 key/value
  // heads, vocabulary 128256, untied head), counted by hand: embeddings and head 2 x 128256 x
  // 16384 = 4,202,692,608; per block 2 x 16384^2 + 2 x 16384 x 1024 (attention) + 3 x 16384 x
  // 53248 (MLP) + 2 x 16384 (norms) = 3,187,703,808, x 126 = 401,650,679,808; final norm 16384.
  EXPECT_EQ(get_model("llama3-405b").num_parameters(), 405'853'388'800);
}

TEST(TransformerZoo, MixtralHasHuggingFaceParameterCount) {
  // Per layer: attention 2 * 4096^2 + 2 * 4096 * 1024, router 4096 * 8, 8 experts of
  // 3 * 4096 * 14336, two RMSNorms 2 * 4096.
  EXPECT_EQ(get_model("mixtral-8x7b").num_parameters(), 46'702'792'704);
}

// ---- Layout: Hugging Face names and the pieces autograd finishes together.

std::set<std::string> tensor_names(const ModelSpec& m) {
  std::set<std::string> names;
  for (const Layer& layer : m.layers) {
    for (const ParamTensor& p : layer.params) names.insert(p.name);
  }
  return names;
}

int64_t tensor_elements(const ModelSpec& m, const std::string& name) {
  for (const Layer& layer : m.layers) {
    for (const ParamTensor& p : layer.params) {
      if (p.name == name) return p.elements;
    }
  }
  return -1;
}

TEST(TransformerZoo, Gpt2HasHuggingFaceTensors) {
  const ModelSpec& m = get_model("gpt2");
  // wte, wpe; per block ln_1, c_attn, c_proj, ln_2, c_fc, mlp.c_proj with weight and bias; ln_f.
  EXPECT_EQ(m.num_tensors(), 2u + 12u * 12u + 2u);
  const std::set<std::string> names = tensor_names(m);
  for (const char* name : {"transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.bias",
                           "transformer.h.0.attn.c_attn.weight", "transformer.h.11.mlp.c_proj.bias",
                           "transformer.ln_f.weight"}) {
    EXPECT_TRUE(names.contains(name)) << name;
  }
  EXPECT_FALSE(names.contains("lm_head.weight"));  // tied to wte
  EXPECT_EQ(tensor_elements(m, "transformer.h.0.attn.c_attn.weight"), 768 * 3 * 768);
}

TEST(TransformerZoo, LlamaAndMixtralHaveHuggingFaceTensors) {
  const ModelSpec& llama = get_model("llama2-7b");
  EXPECT_EQ(llama.num_tensors(), 1u + 32u * 9u + 2u);
  const std::set<std::string> names = tensor_names(llama);
  for (const char* name : {"model.embed_tokens.weight", "model.layers.0.input_layernorm.weight",
                           "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.o_proj.weight",
                           "model.layers.0.post_attention_layernorm.weight",
                           "model.layers.31.mlp.gate_proj.weight", "model.layers.31.mlp.up_proj.weight",
                           "model.layers.31.mlp.down_proj.weight", "model.norm.weight", "lm_head.weight"}) {
    EXPECT_TRUE(names.contains(name)) << name;
  }
  EXPECT_FALSE(names.contains("model.layers.0.self_attn.q_proj.bias"));
  EXPECT_EQ(tensor_elements(get_model("llama3-8b"), "model.layers.0.self_attn.k_proj.weight"),
            4096 * 8 * 128);

  const ModelSpec& mixtral = get_model("mixtral-8x7b");
  // Per layer: 2 norms, 4 attention projections, the router, 8 experts x 3 matrices.
  EXPECT_EQ(mixtral.num_tensors(), 1u + 32u * (2u + 4u + 1u + 24u) + 2u);
  EXPECT_EQ(tensor_elements(mixtral, "model.layers.0.block_sparse_moe.gate.weight"), 4096 * 8);
  EXPECT_EQ(tensor_elements(mixtral, "model.layers.31.block_sparse_moe.experts.7.w2.weight"), 14336 * 4096);
}

TEST(TransformerZoo, EachBlockIsAnAttentionLayerThenAnMlpLayer) {
  for (const char* name : {"gpt2", "llama2-7b", "mixtral-8x7b", "qwen3-30b-a3b"}) {
    const ModelSpec& m = get_model(name);
    ASSERT_TRUE(m.transformer.has_value()) << name;
    const int64_t blocks = m.transformer->layers;
    ASSERT_EQ(m.layers.size(), static_cast<size_t>(2 * blocks + 2)) << name;
    EXPECT_EQ(m.layers.front().name, "embeddings");
    EXPECT_EQ(m.layers.back().name, "head");
    const std::string mlp_suffix = m.transformer->experts > 1 ? ".moe" : ".mlp";
    for (int64_t b = 0; b < blocks; ++b) {
      EXPECT_TRUE(m.layers[static_cast<size_t>(1 + 2 * b)].name.ends_with(std::to_string(b) + ".attention"));
      EXPECT_TRUE(m.layers[static_cast<size_t>(2 + 2 * b)].name.ends_with(std::to_string(b) + mlp_suffix));
    }
  }
}

// ---- By shape.

TransformerShape llama2_7b_shape() {
  return {.layers = 32,
          .hidden = 4096,
          .ffn_hidden = 11008,
          .heads = 32,
          .kv_heads = 32,
          .vocab = 32000,
          .swiglu = true,
          .tied_embeddings = false,
          .seq_len = 4096};
}

TEST(TransformerZoo, ModelBuiltByShapeEqualsTheNamedOne) {
  const ModelSpec& named = get_model("llama2-7b");
  const ModelSpec built = make_transformer("llama2-7b", named.description, llama2_7b_shape());
  EXPECT_TRUE(built == named);

  const TransformerShape gpt2{.layers = 12,
                              .hidden = 768,
                              .ffn_hidden = 3072,
                              .heads = 12,
                              .kv_heads = 12,
                              .vocab = 50257,
                              .swiglu = false,
                              .tied_embeddings = true,
                              .seq_len = 1024,
                              .norm = TransformerNorm::LayerNorm,
                              .linear_biases = true,
                              .positions = PositionEncoding::Learned,
                              .max_positions = 1024,
                              .layout = TransformerLayout::Gpt2,
                              .dropout = true};
  const ModelSpec gpt2_built = make_transformer("any name", "any description", gpt2);
  EXPECT_EQ(gpt2_built.layers, get_model("gpt2").layers);
  EXPECT_EQ(gpt2_built.transformer, get_model("gpt2").transformer);
}

TEST(TransformerZoo, SequenceLengthScalesOnlyTheFlops) {
  TransformerShape shape = llama2_7b_shape();
  shape.seq_len = 2048;
  const ModelSpec shorter = make_transformer("short", "2048 tokens", shape);
  EXPECT_EQ(shorter.num_parameters(), 6'738'415'616);
  EXPECT_LT(shorter.forward_flops(), get_model("llama2-7b").forward_flops());
}

// ---- FLOPs, against closed forms from the Megatron-LM paper (Narayanan et al. 2021).

TEST(TransformerZoo, Llama2TrainingFlopsPerTokenMatchMegatronClosedForm) {
  // Per token: 6 x the weights of every matrix product (Q, K, V, O: 4 h^2; SwiGLU: 3 h f; the
  // LM head h V) plus the attention scores and context, 3 x 2 x 2 x s x h per layer.
  const double l = 32;
  const double h = 4096;
  const double f = 11008;
  const double s = 4096;
  const double v = 32000;
  const double matmul_weights = l * (4 * h * h + 3 * h * f) + h * v;
  const double expected = 6 * matmul_weights + 12 * l * h * s;
  EXPECT_NEAR(training_flops_per_token(get_model("llama2-7b")) / expected, 1.0, 1e-9);
}

TEST(TransformerZoo, Gpt2TrainingFlopsMatchMegatronFormula) {
  // Megatron's 72 B s l h^2 (1 + s / 6h + V / 12lh) per batch of B sequences of s tokens, for a
  // GPT block with a 4h MLP (bias additions are not in it, nor in the zoo's FLOPs).
  const double b = 1;
  const double s = 1024;
  const double l = 12;
  const double h = 768;
  const double v = 50257;
  const double per_batch = 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
  EXPECT_NEAR(training_flops_per_token(get_model("gpt2")) / (per_batch / (b * s)), 1.0, 1e-9);
  // Forward per sample (one sequence) is a third of that.
  EXPECT_NEAR(get_model("gpt2").forward_flops() / (per_batch / 3), 1.0, 1e-9);
}

TEST(TransformerZoo, GqaShrinksKeyValueProjectionsNotAttentionScores) {
  // Llama 3 8B: K and V are h x (8 x 128) each.
  const double l = 32;
  const double h = 4096;
  const double kv = 8 * 128;
  const double f = 14336;
  const double s = 8192;
  const double v = 128256;
  const double expected = 6 * (l * (2 * h * h + 2 * h * kv + 3 * h * f) + h * v) + 12 * l * h * s;
  EXPECT_NEAR(training_flops_per_token(get_model("llama3-8b")) / expected, 1.0, 1e-9);

  // Llama 2 70B against the same shape with full multi-head attention.
  const ModelSpec& gqa = get_model("llama2-70b");
  TransformerShape mha_shape = *gqa.transformer;
  mha_shape.kv_heads = mha_shape.heads;
  const ModelSpec mha = make_transformer("llama2-70b-mha", "without GQA", mha_shape);
  const int64_t saved = 80 * 2 * (int64_t{8192} * 8192 - int64_t{8192} * 1024);
  EXPECT_EQ(mha.num_parameters() - gqa.num_parameters(), saved);
  // Only the projections' 2 x s FLOPs per weight go; every attention layer keeps its
  // 2 x 2 x s^2 x h of scores and context.
  const double seq = 4096;
  EXPECT_NEAR((mha.forward_flops() - gqa.forward_flops()) / (2 * seq * static_cast<double>(saved)), 1.0,
              1e-9);
  for (const ModelSpec* m : {&gqa, &mha}) {
    for (const Layer& layer : m->layers) {
      if (!layer.name.ends_with(".attention")) continue;
      int64_t weights = 0;
      for (const ParamTensor& p : layer.params) {
        if (p.name.ends_with("_proj.weight")) weights += p.elements;
      }
      const double scores = layer.forward_flops - 2 * seq * static_cast<double>(weights);
      EXPECT_NEAR(scores / (4 * seq * seq * 8192), 1.0, 1e-9) << m->name << " " << layer.name;
    }
  }
}

TEST(TransformerZoo, MixtralRunsTopTwoExpertsPerToken) {
  const double l = 32;
  const double h = 4096;
  const double kv = 8 * 128;
  const double f = 14336;
  const double s = 4096;
  const double v = 32000;
  const double experts = 8;
  const double top_k = 2;
  // The router (h x experts) and two SwiGLU experts per token.
  const double expected =
      6 * (l * (2 * h * h + 2 * h * kv + h * experts + top_k * 3 * h * f) + h * v) + 12 * l * h * s;
  const ModelSpec& mixtral = get_model("mixtral-8x7b");
  const double training = training_flops_per_token(mixtral);
  EXPECT_NEAR(training / expected, 1.0, 1e-9);
  // Between a dense model of the ~13B parameters a token touches and one of all 46.7B.
  EXPECT_GT(training, 6 * 12.7e9);
  EXPECT_LT(training, 6 * 46.7e9 + 12 * l * h * s);
  TransformerShape dense = *mixtral.transformer;
  dense.experts = 1;
  dense.top_k = 1;
  EXPECT_LT(training_flops_per_token(make_transformer("mistral-like", "one expert", dense)), training);
}

TEST(TransformerZoo, SixNCountsParametersATokenMultipliesWith) {
  // Untied: the embedding lookup is left out, the LM head stays.
  EXPECT_EQ(active_parameters(get_model("llama2-7b")), 6'738'415'616 - 32000 * 4096);
  EXPECT_EQ(flops_per_token_6n(get_model("llama2-7b")), 6.0 * (6'738'415'616 - 32000 * 4096));
  // Tied (nanoGPT's get_num_params(non_embedding=True)): only the position table is left out.
  EXPECT_EQ(active_parameters(get_model("gpt2")), 124'439'808 - 1024 * 768);
  // Mixtral: six of eight experts idle per token. Mistral's "12.9B active parameters" counts
  // the embedding too: 12,879,925,248.
  const int64_t idle_experts = int64_t{32} * 6 * 3 * 4096 * 14336;
  const int64_t active = 46'702'792'704 - 32000 * 4096 - idle_experts;
  EXPECT_EQ(active_parameters(get_model("mixtral-8x7b")), active);
  EXPECT_EQ(active + 32000 * 4096, 12'879'925'248);
}

TEST(TransformerZoo, TokenFlopsNeedATransformer) {
  const Error e = expect_error([] { (void)flops_per_token_6n(get_model("resnet50")); });
  EXPECT_EQ(e.where().key, "workload.model");
  EXPECT_EQ(expect_error([] { (void)training_flops_per_token(get_model("bert-base")); }).where().key,
            "workload.model");
  EXPECT_FALSE(get_model("bert-base").transformer.has_value());
}

// ---- to_workload, unchanged, on a decoder.

TEST(TransformerZoo, ToWorkloadCarriesEveryParameterOnce) {
  const ModelSpec& m = get_model("llama3-8b");
  const workload::Workload fp32 = to_workload(m, {.batch_per_worker = 1, .step_time = 1.0});
  EXPECT_EQ(workload::validate(fp32), "");
  ASSERT_EQ(fp32.ops.size(), 2u * (2u * 32u + 2u));
  double bytes = 0;
  for (const workload::Tensor& t : fp32.tensors) bytes += t.bytes;
  EXPECT_EQ(bytes, 4.0 * 8'030'261'248);
  double time = 0;
  for (const workload::Op& op : fp32.ops) time += op.duration;
  EXPECT_NEAR(time, 1.0, 1e-12);
  for (workload::Precision half : {workload::Precision::FP16, workload::Precision::BF16}) {
    const workload::Workload w = to_workload(m, {.batch_per_worker = 1, .step_time = 1.0, .precision = half});
    double half_bytes = 0;
    for (const workload::Tensor& t : w.tensors) half_bytes += t.bytes;
    EXPECT_EQ(half_bytes, 2.0 * 8'030'261'248);
  }
}

// ---- Shapes that cannot be built.

void expect_bad_shape(const TransformerShape& shape, const std::string& key) {
  const Error e = expect_error([&] { (void)make_transformer("bad", "bad shape", shape); });
  EXPECT_EQ(e.where().key, key);
  EXPECT_TRUE(stepcast::testing::contains(e.what(), key)) << e.what();
}

TEST(TransformerZoo, RejectsShapesThatCannotBeBuilt) {
  TransformerShape s = llama2_7b_shape();
  s.heads = 30;  // 4096 / 30 is not whole
  s.kv_heads = 30;
  expect_bad_shape(s, "workload.transformer.heads");

  s = llama2_7b_shape();
  s.kv_heads = 5;  // 32 query heads cannot share 5 K/V heads evenly
  expect_bad_shape(s, "workload.transformer.kv_heads");
  s.kv_heads = 0;
  expect_bad_shape(s, "workload.transformer.kv_heads");

  s = llama2_7b_shape();
  s.experts = 8;
  s.top_k = 9;
  expect_bad_shape(s, "workload.transformer.top_k");
  s.top_k = 0;
  expect_bad_shape(s, "workload.transformer.top_k");

  s = llama2_7b_shape();
  s.layers = 0;
  expect_bad_shape(s, "workload.transformer.layers");

  s = llama2_7b_shape();
  s.vocab = -1;
  expect_bad_shape(s, "workload.transformer.vocab");

  s = llama2_7b_shape();
  s.seq_len = 0;
  expect_bad_shape(s, "workload.seq_len");

  // GPT-2 cannot run past its learned positions.
  TransformerShape gpt2 = *get_model("gpt2").transformer;
  gpt2.seq_len = 2048;
  expect_bad_shape(gpt2, "workload.seq_len");
  gpt2.seq_len = 1024;
  gpt2.swiglu = true;
  expect_bad_shape(gpt2, "workload.transformer.swiglu");
}

}  // namespace transformer_zoo_test
}  // namespace
}  // namespace stepcast::zoo
