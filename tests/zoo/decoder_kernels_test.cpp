// The kernels of workload.compute: shapes: a tensor degree t divides each block's GEMM FLOPs by t
// exactly (Megatron's column and row split), the backward's GEMMs are twice the forward's, the
// attention core shrinks by t and c, and the GEMMs add up to the zoo's FLOP accounting.
#include "stepcast/zoo/decoder_kernels.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::zoo {
namespace {
namespace decoder_kernels_test {  // this file's own names: test files are compiled several to a unit

double flops_of(const std::vector<Kernel>& kernels, KernelKind kind) {
  double total = 0;
  for (const Kernel& k : kernels) {
    if (k.kind == kind) total += k.flops * static_cast<double>(k.count);
  }
  return total;
}

bool in_block(const std::string& name) { return name != "embeddings" && name != "head"; }

TEST(DecoderKernels, TensorDegreeDividesEachBlockGemmFlopsExactly) {
  for (const char* name : {"llama3-8b", "llama2-70b", "gpt2-xl"}) {
    const ModelSpec& model = get_model(name);
    const std::vector<LayerKernels> whole = decoder_kernels(model, {.micro_batch = 2});
    for (int64_t t : {2, 4, 8}) {
      if (model.transformer->heads % t != 0 || model.transformer->ffn_hidden % t != 0) continue;
      SCOPED_TRACE(std::string(name) + " t=" + std::to_string(t));
      const std::vector<LayerKernels> split = decoder_kernels(model, {.micro_batch = 2, .tensor = t});
      for (size_t l = 0; l < whole.size(); ++l) {
        if (!in_block(model.layers[l].name)) continue;
        // Every dimension a GEMM splits divides by t here, so the FLOPs divide exactly.
        EXPECT_EQ(flops_of(split[l].forward, KernelKind::Gemm) * static_cast<double>(t),
                  flops_of(whole[l].forward, KernelKind::Gemm));
        EXPECT_EQ(flops_of(split[l].backward, KernelKind::Gemm) * static_cast<double>(t),
                  flops_of(whole[l].backward, KernelKind::Gemm));
        EXPECT_EQ(flops_of(split[l].forward, KernelKind::Attention) * static_cast<double>(t),
                  flops_of(whole[l].forward, KernelKind::Attention));
      }
    }
  }
}

TEST(DecoderKernels, GemmsAndCoreAddUpToTheZooFlops) {
  // Forward: the GEMMs and the attention core are the zoo's per-layer FLOPs (which count only
  // them) for b sequences; backward: twice the forward.
  for (const char* name : {"llama3-8b", "mixtral-8x7b", "gpt2", "qwen3-30b-a3b"}) {
    SCOPED_TRACE(name);
    const ModelSpec& model = get_model(name);
    const int64_t b = 3;
    const std::vector<LayerKernels> kernels = decoder_kernels(model, {.micro_batch = b});
    for (size_t l = 0; l < kernels.size(); ++l) {
      if (model.layers[l].name == "embeddings") continue;
      const double forward = flops_of(kernels[l].forward, KernelKind::Gemm) +
                             flops_of(kernels[l].forward, KernelKind::Attention);
      const double backward = flops_of(kernels[l].backward, KernelKind::Gemm) +
                              flops_of(kernels[l].backward, KernelKind::Attention);
      const double zoo = static_cast<double>(b) * model.layers[l].forward_flops;
      EXPECT_NEAR(forward, zoo, 1e-12 * zoo) << model.layers[l].name;
      EXPECT_NEAR(backward, 2 * zoo, 1e-12 * zoo) << model.layers[l].name;
    }
  }
}

TEST(DecoderKernels, SplitShapesFollowMegatron) {
  // Llama 3 8B at t = 4, c = 2, b = 1: m = 8192 / 2 tokens; Q/K/V fused column-parallel,
  // the output projection row-parallel, gate and up fused, down row-parallel.
  const ModelSpec& model = get_model("llama3-8b");
  const std::vector<LayerKernels> k = decoder_kernels(model, {.micro_batch = 1, .tensor = 4, .context = 2});
  const std::vector<Kernel>& attention = k[1].forward;
  const std::vector<Kernel>& mlp = k[2].forward;
  auto gemm = [](const std::vector<Kernel>& kernels, const std::string& name) {
    for (const Kernel& kernel : kernels) {
      if (kernel.name == name) return kernel;
    }
    ADD_FAILURE() << "no kernel " << name;
    return Kernel{};
  };
  const Kernel qkv = gemm(attention, "qkv"), out = gemm(attention, "attention out");
  EXPECT_EQ(qkv.m, 4096);
  EXPECT_EQ(qkv.n, (4096 + 2 * 1024) / 4);
  EXPECT_EQ(qkv.k, 4096);
  EXPECT_EQ(out.n, 4096);
  EXPECT_EQ(out.k, 1024);
  const Kernel up = gemm(mlp, "gate up"), down = gemm(mlp, "down");
  EXPECT_EQ(up.n, 2 * 14336 / 4);
  EXPECT_EQ(down.k, 14336 / 4);
  // The attention core: 4 b (s / c) s h / t.
  EXPECT_EQ(flops_of(attention, KernelKind::Attention), 4.0 * 4096 * 8192 * 4096 / 4);
  // Backward GEMMs: the input gradient (m, k, n) and the weight gradient (k, n, m).
  const Kernel dgrad = gemm(k[1].backward, "qkv dgrad"), wgrad = gemm(k[1].backward, "qkv wgrad");
  EXPECT_EQ(dgrad.m, qkv.m);
  EXPECT_EQ(dgrad.n, qkv.k);
  EXPECT_EQ(dgrad.k, qkv.n);
  EXPECT_EQ(wgrad.m, qkv.k);
  EXPECT_EQ(wgrad.n, qkv.n);
  EXPECT_EQ(wgrad.k, qkv.m);
}

Kernel find_kernel(const std::vector<Kernel>& kernels, const std::string& name) {
  for (const Kernel& kernel : kernels) {
    if (kernel.name == name) return kernel;
  }
  ADD_FAILURE() << "no kernel " << name;
  return Kernel{};
}

TEST(DecoderKernels, Qwen3AttentionIsHeadsTimesHeadDimWide) {
  // Qwen3-30B-A3B at t = 4, b = 1, s = 4096: Q/K/V fused to (32 x 128 + 2 x 4 x 128) / 4 = 1280
  // columns; the output projection reads 4096 / 4 = 1024 and writes the hidden 2048; the core
  // 4 b s s q / t with q = 4096; the q and k norms read and write the rank's Q and K.
  const ModelSpec& model = get_model("qwen3-30b-a3b");
  const std::vector<LayerKernels> k = decoder_kernels(model, {.micro_batch = 1, .tensor = 4});
  const std::vector<Kernel>& attention = k[1].forward;
  const Kernel qkv = find_kernel(attention, "qkv"), out = find_kernel(attention, "attention out");
  EXPECT_EQ(qkv.m, 4096);
  EXPECT_EQ(qkv.n, 1280);
  EXPECT_EQ(qkv.k, 2048);
  EXPECT_EQ(out.n, 2048);
  EXPECT_EQ(out.k, 1024);
  EXPECT_EQ(flops_of(attention, KernelKind::Attention), 4.0 * 4096 * 4096 * 4096 / 4);
  // Q and K of the rank's heads: 4096 tokens x (4096 + 512) / 4 columns x 2 bytes, read and written.
  EXPECT_EQ(find_kernel(attention, "qk norm").bytes, 2 * 4096.0 * 1152 * 2);
  // Experts: 4096 x 8 / 128 = 256 tokens each, 768 / 4 of each expert's width on the rank.
  const std::vector<Kernel>& moe = k[2].forward;
  const Kernel up = find_kernel(moe, "expert gate up"), down = find_kernel(moe, "expert down");
  EXPECT_EQ(up.m, 256);
  EXPECT_EQ(up.n, 2 * 768 / 4);
  EXPECT_EQ(up.count, 128);
  EXPECT_EQ(down.k, 768 / 4);
}

TEST(DecoderKernels, SharedExpertsAndDenseBlocksAddUpToTheZooFlops) {
  // One dense block (MLP 256), three with 8 experts of 32 (top-2) and a shared one; 4 heads of 32
  // on a hidden of 64. The shared expert runs on every token, the dense block as a dense MLP.
  const TransformerShape shape{.layers = 4,
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
  const ModelSpec model = make_transformer("small", "DeepSeek-like", shape);
  const int64_t b = 3;
  const std::vector<LayerKernels> kernels = decoder_kernels(model, {.micro_batch = b});
  for (size_t l = 1; l < kernels.size(); ++l) {
    const double forward =
        flops_of(kernels[l].forward, KernelKind::Gemm) + flops_of(kernels[l].forward, KernelKind::Attention);
    const double zoo = static_cast<double>(b) * model.layers[l].forward_flops;
    EXPECT_NEAR(forward, zoo, 1e-12 * zoo) << model.layers[l].name;
  }
  EXPECT_EQ(find_kernel(kernels[2].forward, "gate up").n, 2 * 256);  // block 0: dense
  const Kernel shared = find_kernel(kernels[4].forward, "shared expert gate up");
  EXPECT_EQ(shared.m, b * 16);  // every token
  EXPECT_EQ(shared.n, 2 * 32);
  EXPECT_EQ(shared.count, 1);
}

TEST(DecoderKernels, ExpertParallelismMovesTheSameExpertFlopsOntoFewerLargerGemms) {
  // Qwen3-30B-A3B (128 experts of 768, top-8), b = 1, s = 4096. Under expert parallelism e a rank
  // runs 128 / e experts, each on e x 256 rows (its group's tokens x top_k over the experts,
  // balanced), so the routed experts' GEMM FLOPs on a rank are those of e = 1; with t = 2 and ETP
  // = t each rank holds half of each expert's width and the expert-tensor group's rows, again the
  // same FLOPs as t = 2, e = 1. Only the routed experts' kernels are marked as such.
  const ModelSpec& model = get_model("qwen3-30b-a3b");
  auto routed_flops = [](const std::vector<Kernel>& kernels) {
    double total = 0;
    for (const Kernel& k : kernels) {
      if (k.routed_expert && k.kind == KernelKind::Gemm) total += k.flops * static_cast<double>(k.count);
    }
    return total;
  };
  for (int64_t t : {1, 2}) {
    const std::vector<LayerKernels> one =
        decoder_kernels(model, {.micro_batch = 1, .tensor = t, .sequence_parallel = t > 1});
    for (int64_t e : {2, 8, 32}) {
      SCOPED_TRACE("t " + std::to_string(t) + ", e " + std::to_string(e));
      const std::vector<LayerKernels> split =
          decoder_kernels(model, {.micro_batch = 1, .tensor = t, .sequence_parallel = t > 1, .expert = e});
      const Kernel up = find_kernel(split[2].forward, "expert gate up");
      EXPECT_EQ(up.count, 128 / e);
      EXPECT_EQ(up.m, 256 * e);
      EXPECT_EQ(up.n, 2 * 768 / t);
      EXPECT_TRUE(up.routed_expert);
      EXPECT_FALSE(find_kernel(split[2].forward, "router").routed_expert);
      EXPECT_EQ(routed_flops(split[2].forward), routed_flops(one[2].forward));
      EXPECT_EQ(routed_flops(split[2].backward), routed_flops(one[2].backward));
      EXPECT_GT(routed_flops(split[2].forward), 0);
    }
  }
  // ETP 1 under t = 2: every rank holds whole experts and computes its own rows only (b s / t x
  // top_k over the experts it holds), the same FLOPs again.
  const std::vector<LayerKernels> etp1 = decoder_kernels(
      model, {.micro_batch = 1, .tensor = 2, .sequence_parallel = true, .expert = 8, .expert_tensor = 1});
  const Kernel up = find_kernel(etp1[2].forward, "expert gate up");
  EXPECT_EQ(up.m, 256 * 8 / 2);
  EXPECT_EQ(up.n, 2 * 768);
  EXPECT_EQ(
      routed_flops(etp1[2].forward),
      routed_flops(
          decoder_kernels(model, {.micro_batch = 1, .tensor = 2, .sequence_parallel = true})[2].forward));
}

TEST(DecoderKernels, SequenceParallelismShrinksNormBytesByT) {
  const ModelSpec& model = get_model("llama2-7b");
  const auto plain = decoder_kernels(model, {.micro_batch = 1, .tensor = 4});
  const auto sequence = decoder_kernels(model, {.micro_batch = 1, .tensor = 4, .sequence_parallel = true});
  // The attention layer's first kernel is its norm: b s h x 2 bytes read and written, over t with SP.
  ASSERT_EQ(plain[1].forward.front().name, "attention norm");
  EXPECT_EQ(plain[1].forward.front().bytes, 2.0 * 4096 * 4096 * 2);
  EXPECT_EQ(sequence[1].forward.front().bytes * 4, plain[1].forward.front().bytes);
}

TEST(DecoderKernels, WithoutFlashAttentionTheCoreIsTwoBatchedGemmsOfTheSameFlops) {
  // Megatron-LM's unfused core on a rank: Q K^T (s / c, s, head_dim) and P V (s / c, head_dim, s),
  // batched over b x heads / t, the FLOPs the flash core counts (4 b (s / c) s q / t forward,
  // twice backward), both operands activations.
  for (const char* name : {"llama2-7b", "gpt2", "qwen3-30b-a3b"}) {  // heads divisible by t
    SCOPED_TRACE(name);
    const ModelSpec& model = get_model(name);
    const TransformerShape& shape = *model.transformer;
    const int64_t b = 2, t = 4, c = 2;
    const KernelSplit flash{.micro_batch = b, .tensor = t, .context = c};
    KernelSplit unfused = flash;
    unfused.flash_attention = false;
    const auto with = decoder_kernels(model, flash), without = decoder_kernels(model, unfused);
    const std::vector<Kernel>& forward = without[1].forward;
    EXPECT_EQ(flops_of(forward, KernelKind::Attention), 0);
    const Kernel scores = find_kernel(forward, "scores"), context = find_kernel(forward, "context");
    for (const Kernel& k : {scores, context}) {
      EXPECT_EQ(k.kind, KernelKind::Gemm);
      EXPECT_EQ(k.part, AttentionPart::Core);
      EXPECT_EQ(k.batch, b * shape.heads / t);
      EXPECT_TRUE(k.activations_only);
      EXPECT_EQ(k.flops, 2.0 * static_cast<double>(k.m * k.n * k.k * k.batch));
    }
    const int64_t queries = shape.seq_len / c;
    EXPECT_EQ(scores.m, queries);
    EXPECT_EQ(scores.n, shape.seq_len);
    EXPECT_EQ(scores.k, shape.head_dim());
    EXPECT_EQ(context.m, queries);
    EXPECT_EQ(context.n, shape.head_dim());
    EXPECT_EQ(context.k, shape.seq_len);
    auto core_gemms = [](const std::vector<Kernel>& kernels) {
      double total = 0;
      for (const Kernel& k : kernels) {
        if (k.kind == KernelKind::Gemm && k.part == AttentionPart::Core) total += k.flops;
      }
      return total;
    };
    const double flash_core = flops_of(with[1].forward, KernelKind::Attention);
    EXPECT_EQ(flash_core, 4.0 * static_cast<double>(b * queries * shape.seq_len * shape.q_width() / t));
    EXPECT_NEAR(core_gemms(forward), flash_core, 1e-12 * flash_core);
    EXPECT_NEAR(core_gemms(without[1].backward), 2 * flash_core, 1e-12 * flash_core);
    // The projections are the flash layer's: only the core changed.
    EXPECT_EQ(flops_of(with[1].forward, KernelKind::Gemm) + flash_core, flops_of(forward, KernelKind::Gemm));
  }
}

TEST(DecoderKernels, DropoutKernelsMoveTheirRowsAndOneByteMasks) {
  // A GPT block by hand, b = 1, t = 2 with sequence parallelism, e = 2 bytes: the embedding's
  // dropout and each residual's on s / t tokens, the attention dropout on the rank's scores.
  ModelSpec model = get_model("gpt2");
  TransformerShape shape = *model.transformer;
  ASSERT_TRUE(shape.dropout);
  const double s = static_cast<double>(shape.seq_len), h = static_cast<double>(shape.hidden);
  const double heads = static_cast<double>(shape.heads) / 2;
  const KernelSplit split{.micro_batch = 1, .tensor = 2, .sequence_parallel = true, .flash_attention = false};
  const auto kernels = decoder_kernels(model, split);
  const double rows = s / 2 * h;  // the rank's tokens under sequence parallelism
  const Kernel embedding = find_kernel(kernels[0].forward, "embedding dropout");
  EXPECT_EQ(embedding.bytes, (2 * 2 + 1) * rows);  // read, write, mask
  EXPECT_EQ(find_kernel(kernels[0].backward, "embedding dropout backward").bytes, (2 * 2 + 1) * rows);
  EXPECT_EQ(find_kernel(kernels[1].forward, "dropout add").bytes, (3 * 2 + 1) * rows);
  EXPECT_EQ(find_kernel(kernels[2].forward, "dropout add").bytes, (3 * 2 + 1) * rows);
  const double scores = heads * s * s;
  EXPECT_EQ(find_kernel(kernels[1].forward, "attention dropout").bytes, (2 * 2 + 1) * scores);
  EXPECT_EQ(find_kernel(kernels[1].forward, "attention dropout").part, AttentionPart::Core);
  // Without dropout: plain residual additions and no dropout kernel; flash attention drops inside
  // its own kernel.
  shape.dropout = false;
  model.transformer = shape;
  for (const LayerKernels& layer : decoder_kernels(model, split)) {
    for (const Kernel& k : layer.forward) EXPECT_EQ(k.name.find("dropout"), std::string::npos) << k.name;
  }
  KernelSplit flash = split;
  flash.flash_attention = true;
  const std::vector<LayerKernels> with_flash = decoder_kernels(get_model("gpt2"), flash);
  for (const Kernel& k : with_flash[1].forward) EXPECT_NE(k.name, "attention dropout");
}

}  // namespace decoder_kernels_test
}  // namespace
}  // namespace stepcast::zoo
