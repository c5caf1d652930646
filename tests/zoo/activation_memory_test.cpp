// Activation memory against Korthikanti et al. 2022 ("Reducing Activation Recomputation in
// Large Transformer Models", section 4; t = p = 1): their GPT block stores s b h (34 + 5 a s / h)
// bytes, 34 s b h with selective recomputation and 2 s b h with full recomputation. Llama-style
// and MoE blocks are checked term by term against tensors counted by hand here, and the
// relations that hold for any shape (orders of the modes, linear in the batch, flash attention
// linear in the sequence length).
#include "stepcast/zoo/activation_memory.hpp"

#include <gtest/gtest.h>

#include "expect_error.hpp"
#include "stepcast/error.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::zoo {
namespace {
namespace activation_memory_test {  // this file's own names: test files are compiled several to a unit

using stepcast::testing::expect_error;
using workload::ActivationCheckpointing;

constexpr ActivationCheckpointing kNone = ActivationCheckpointing::None;
constexpr ActivationCheckpointing kSelective = ActivationCheckpointing::Selective;
constexpr ActivationCheckpointing kFull = ActivationCheckpointing::Full;

// GPT-3 175B's block as Korthikanti's table 3 has it: h = 12288, a = 96, s = 2048, a 4h GELU
// MLP, LayerNorm, dropout (the GPT-2 layout), standard attention.
TransformerShape gpt3_175b(int64_t layers = 96) {
  return TransformerShape{.layers = layers,
                          .hidden = 12288,
                          .ffn_hidden = 4 * 12288,
                          .heads = 96,
                          .kv_heads = 96,
                          .vocab = 51200,
                          .swiglu = false,
                          .tied_embeddings = true,
                          .seq_len = 2048,
                          .norm = TransformerNorm::LayerNorm,
                          .linear_biases = true,
                          .positions = PositionEncoding::Learned,
                          .max_positions = 2048,
                          .layout = TransformerLayout::Gpt2,
                          .dropout = true};
}

const TransformerShape& llama2_7b() { return *get_model("llama2-7b").transformer; }

// ---- Korthikanti's GPT block, 2-byte activations, 1-byte dropout masks.

TEST(ActivationMemory, GptBlockMatchesKorthikanti) {
  const TransformerShape shape = gpt3_175b(1);
  const double s = 2048, h = 12288, a = 96;
  for (int64_t b : {1, 4}) {
    const double expected = s * b * h * (34 + 5 * a * s / h);
    EXPECT_NEAR(block_activation_bytes(shape, b, kNone, 2, false), expected, 0.02 * expected) << b;
  }
}

TEST(ActivationMemory, GptBlockSelectiveIs34Sbh) {
  const double s = 2048, h = 12288, b = 2;
  const double expected = 34 * s * b * h;
  EXPECT_NEAR(block_activation_bytes(gpt3_175b(1), 2, kSelective, 2, false), expected, 0.02 * expected);
}

TEST(ActivationMemory, GptBlockFullIs2Sbh) {
  const double s = 2048, h = 12288, b = 2;
  EXPECT_DOUBLE_EQ(block_activation_bytes(gpt3_175b(1), 2, kFull, 2, false), 2 * s * b * h);
}

TEST(ActivationMemory, GptModelAddsBlocksAndOutputLayer) {
  // Outside the blocks (Korthikanti 4.3): embedding dropout mask s b h, final LayerNorm input
  // 2 s b h, LM head input 2 s b h; the fp32 loss at the start of the backward: the saved
  // log-softmax output, its gradient and the logits' gradient, 3 x 4 s b V (Korthikanti counts
  // the first, 4 s b V).
  const double L = 96, s = 2048, h = 12288, a = 96, V = 51200, b = 1;
  const double outside = s * b * h * (1 + 2 + 2) + 12 * s * b * V;
  const double block = s * b * h * (34 + 5 * a * s / h);
  const double none = L * block + outside;
  EXPECT_NEAR(activation_bytes(gpt3_175b(), 1, kNone, 2, false), none, 0.02 * none);
  const double selective = L * 34 * s * b * h + outside;
  EXPECT_NEAR(activation_bytes(gpt3_175b(), 1, kSelective, 2, false), selective, 0.02 * selective);
  // Full: every block's input, plus the one block being recomputed in the backward (beside the
  // saved log-softmax output, 4 s b V), which is more than the loss's moment here.
  const double full = L * 2 * s * b * h + block + s * b * h * (1 + 2 + 2) + 4 * s * b * V;
  EXPECT_NEAR(activation_bytes(gpt3_175b(), 1, kFull, 2, false), full, 0.02 * full);
}

TEST(ActivationMemory, GptBlockWithFlashAttentionKeepsNoScores) {
  // Flash attention keeps the output (the projection input, already among the 34) and the fp32
  // log-sum-exp, 4 bytes x a x s per sequence; its dropout mask is regenerated.
  const double s = 2048, h = 12288, a = 96, b = 1;
  EXPECT_DOUBLE_EQ(block_activation_bytes(gpt3_175b(1), 1, kNone, 2, true), 34 * s * b * h + 4 * a * s * b);
}

// ---- Llama-style blocks, counted by hand.

TEST(ActivationMemory, Llama2BlockCountedTensorByTensor) {
  // h = 4096, f = 11008, a = 32, s = 4096, no GQA, bf16 (e = 2), flash attention. Per token:
  // RMSNorm inputs 2 x 2h, Q/K/V input 2h, Q K V 3 x 2h, o_proj input 2h, MLP input 2h,
  // gate, up, down input 3 x 2f; log-sum-exp 4a.
  const double h = 4096, f = 11008, a = 32, s = 4096;
  const double per_token = 2 * (2 * h) + 2 * h + 3 * 2 * h + 2 * h + 2 * h + 3 * 2 * f + 4 * a;
  EXPECT_DOUBLE_EQ(block_activation_bytes(llama2_7b(), 1, kNone, 2, true), per_token * s);
  // Standard attention keeps the softmax output (no dropout) instead: 2 bytes x a x s per token.
  const double standard = per_token - 4 * a + 2 * a * s;
  EXPECT_DOUBLE_EQ(block_activation_bytes(llama2_7b(), 1, kNone, 2, false), standard * s);
}

TEST(ActivationMemory, Llama2ModelAddsHeadAndFp32Loss) {
  // Outside the blocks: final norm input and LM head input 2 x 2h per token; the fp32 loss at
  // the start of the backward 3 x 4 V per token (log-softmax output, its gradient, the logits').
  const TransformerShape& shape = llama2_7b();
  const double s = 4096, h = 4096, V = 32000;
  const double outside = s * (2 * 2 * h + 12 * V);
  EXPECT_DOUBLE_EQ(activation_bytes(shape, 1, kSelective, 2),
                   32 * block_activation_bytes(shape, 1, kSelective, 2) + outside);
}

// ---- The loss on a 128,256-token vocabulary (Llama 3 8B: h = 4096, s = 8192, one sequence,
// bf16 activations). T V = 8192 x 128,256 = 1,050,673,152 logits.

constexpr double kLlama3Logits = 1'050'673'152;
constexpr double kLlama3HiddenElements = 8192.0 * 4096;  // T h = 33,554,432

TEST(ActivationMemoryLoss, Fp32LossGrowsThePeakByTwoFp32CopiesOfTheLogits) {
  // Before the loss term stepcast counted the saved fp32 log-probabilities alone, 4 T V =
  // 4,202,692,608 bytes. At the start of the backward PyTorch also holds their gradient
  // (nll_loss_backward) and the fp32 logits' (_log_softmax_backward_data): 12 T V =
  // 12,608,077,824 bytes, 8,405,385,216 more.
  const TransformerShape& shape = *get_model("llama3-8b").transformer;
  ASSERT_EQ(shape.vocab, 128256);
  ASSERT_EQ(shape.seq_len, 8192);
  ASSERT_EQ(shape.hidden, 4096);
  const double blocks = 32 * block_activation_bytes(shape, 1, kSelective, 2);
  const double head_inputs = 2 * 2 * kLlama3HiddenElements;  // final norm input, LM head input
  const double before = blocks + head_inputs + 4'202'692'608.0;
  const double peak = activation_bytes(shape, 1, kSelective, 2, true, workload::LossMode::Fp32Logits);
  EXPECT_DOUBLE_EQ(peak, blocks + head_inputs + 12'608'077'824.0);
  EXPECT_DOUBLE_EQ(peak - before, 8'405'385'216.0);
}

TEST(ActivationMemoryLoss, EachModeCountedByHand) {
  const TransformerShape& shape = *get_model("llama3-8b").transformer;
  const double TV = kLlama3Logits, Th = kLlama3HiddenElements;
  // fp32_logits: saved log-softmax 4; forward: bf16 logits 2 + fp32 copy 4 + log-softmax 4.
  EXPECT_EQ(loss_memory(shape, 1, 2, workload::LossMode::Fp32Logits),
            (LossMemory{.saved = 4 * TV, .forward_peak = 10 * TV, .backward_peak = 12 * TV}));
  // fp32_in_place (Megatron): the fp32 softmax 4, beside the bf16 logits or gradient 2.
  EXPECT_EQ(loss_memory(shape, 1, 2, workload::LossMode::Fp32InPlace),
            (LossMemory{.saved = 4 * TV, .forward_peak = 6 * TV, .backward_peak = 6 * TV}));
  // bf16_logits: log-softmax 2; logits + log-softmax 4; log-softmax + 2 gradients 6.
  EXPECT_EQ(loss_memory(shape, 1, 2, workload::LossMode::Bf16Logits),
            (LossMemory{.saved = 2 * TV, .forward_peak = 4 * TV, .backward_peak = 6 * TV}));
  // chunked: fp32 accumulator 4 T h plus one of 8 chunks with bf16 logits 2 and 3 fp32 tensors
  // 12: 134,217,728 + 14 x 1,050,673,152 / 8 = 1,972,895,744 bytes; the gradient handed on 2 T h.
  EXPECT_EQ(loss_memory(shape, 1, 2, workload::LossMode::Chunked),
            (LossMemory{.saved = 2 * Th, .forward_peak = 1'972'895'744.0, .backward_peak = 2 * Th}));
}

TEST(ActivationMemoryLoss, Fp32ActivationsNeedNoUpcast) {
  // With 4-byte logits .float() returns them as they are: no copy and no cast back.
  const TransformerShape& shape = *get_model("llama3-8b").transformer;
  const double TV = kLlama3Logits;
  EXPECT_EQ(loss_memory(shape, 1, 4, workload::LossMode::Fp32Logits),
            (LossMemory{.saved = 4 * TV, .forward_peak = 8 * TV, .backward_peak = 12 * TV}));
  EXPECT_EQ(loss_memory(shape, 1, 4, workload::LossMode::Fp32InPlace),
            (LossMemory{.saved = 4 * TV, .forward_peak = 4 * TV, .backward_peak = 4 * TV}));
}

TEST(ActivationMemoryLoss, TensorGroupSplitsTheVocabularyContextGroupTheTokens) {
  // t = 8: 128,256 / 8 = 16,032 logits a token on each rank; c = 2: 4096 tokens.
  const TransformerShape& shape = *get_model("llama3-8b").transformer;
  const ActivationSplit split{.tensor = 8, .sequence_parallel = true, .context = 2};
  const double TV = 4096.0 * 16032;
  EXPECT_EQ(loss_memory(shape, 1, 2, workload::LossMode::Fp32Logits, split),
            (LossMemory{.saved = 4 * TV, .forward_peak = 10 * TV, .backward_peak = 12 * TV}));
  // The chunked loss's hidden-state buffers stay whole over the tensor group: 4096 x 4096 x 4.
  EXPECT_DOUBLE_EQ(loss_memory(shape, 1, 2, workload::LossMode::Chunked, split).forward_peak,
                   4 * 4096.0 * 4096 + 14 * TV / 8);
  // The head keeps its inputs (split by sequence parallelism) and the saved log-softmax.
  EXPECT_DOUBLE_EQ(head_activation_bytes(shape, 1, 2, split, workload::LossMode::Fp32Logits),
                   2 * 2 * 4096.0 * 4096 / 8 + 4 * TV);
}

TEST(ActivationMemoryLoss, FullRecomputationTakesTheLargerMoment) {
  // Llama 3 8B, full recomputation: 32 block inputs 2 T h, head inputs 2 x 2 T h; then the
  // larger of the loss's backward moment (12 T V) and the recomputed block beside the saved
  // log-softmax (4 T V + block). With 128,256 logits a token the loss is the larger.
  const TransformerShape& shape = *get_model("llama3-8b").transformer;
  const double TV = kLlama3Logits, Th = kLlama3HiddenElements;
  const double block = block_activation_bytes(shape, 1, kNone, 2);
  ASSERT_LT(block, 8 * TV);
  EXPECT_DOUBLE_EQ(activation_bytes(shape, 1, kFull, 2), 32 * 2 * Th + 4 * Th + 12 * TV);
  // Chunked: its forward moment (1,972,895,744 bytes, above) is still more than the recomputed
  // block beside the handed-on gradient 2 T h.
  ASSERT_LT(2 * Th + block, 1'972'895'744.0);
  EXPECT_DOUBLE_EQ(activation_bytes(shape, 1, kFull, 2, true, workload::LossMode::Chunked),
                   32 * 2 * Th + 4 * Th + 1'972'895'744.0);
}

TEST(ActivationMemory, GroupedQueryAttentionShrinksKAndV) {
  // Llama 2 70B: 8 K/V heads of 128 instead of 64: K and V lose 2 x (8192 - 1024) per token.
  TransformerShape gqa = *get_model("llama2-70b").transformer;
  TransformerShape mha = gqa;
  mha.kv_heads = mha.heads;
  const double s = 4096;
  EXPECT_DOUBLE_EQ(block_activation_bytes(mha, 1, kNone, 2) - block_activation_bytes(gqa, 1, kNone, 2),
                   2 * 2 * (8192 - 1024) * s);
}

TEST(ActivationMemory, MixtureOfExpertsKeepsTopKExpertsActivations) {
  // Mixtral 8x7B against the same block with one dense MLP of the same width: the router input
  // (2h), the fp32 router probabilities (4 x 8) and a second expert's input and SwiGLU tensors
  // (2h + 3 x 2f) per token.
  const TransformerShape& moe = *get_model("mixtral-8x7b").transformer;
  TransformerShape dense = moe;
  dense.experts = 1;
  dense.top_k = 1;
  const double h = 4096, f = 14336, s = 4096;
  const double extra = 2 * h + 4 * 8 + (2 * h + 3 * 2 * f);
  EXPECT_DOUBLE_EQ(block_activation_bytes(moe, 1, kNone, 2) - block_activation_bytes(dense, 1, kNone, 2),
                   extra * s);
}

TEST(ActivationMemory, Qwen3BlockCountsQueriesAtHeadsTimesHeadDim) {
  // Qwen3-30B-A3B: h = 2048, q = 32 x 128 = 4096, g = 4 x 128 = 512, a = 32, 128 experts of 768,
  // top-8, s = 4096, bf16, flash attention. Per token, attention: norm input 2h, Q/K/V input 2h,
  // Q K V 2 (q + 2g), the q and k norms' inputs 2 (q + g), o_proj input 2q, log-sum-exp 4a;
  // MoE: norm input 2h, router input 2h, fp32 router probabilities 4 x 128, and in each of 8
  // experts its input 2h and gate, up, down input 3 x 2 x 768.
  const TransformerShape& shape = *get_model("qwen3-30b-a3b").transformer;
  const double h = 2048, q = 4096, g = 512, a = 32, experts = 128, k = 8, f = 768, s = 4096;
  const double attention = 2 * h + 2 * h + 2 * (q + 2 * g) + 2 * (q + g) + 2 * q + 4 * a;
  const double moe = 2 * h + 2 * h + 4 * experts + k * (2 * h + 3 * 2 * f);
  EXPECT_DOUBLE_EQ(block_activation_bytes(shape, 1, kNone, 2, true), (attention + moe) * s);
  // A shared expert adds its SwiGLU tensors on every token; its input is the router's.
  TransformerShape shared = shape;
  shared.shared_experts = 1;
  EXPECT_DOUBLE_EQ(
      block_activation_bytes(shared, 1, kNone, 2, true) - block_activation_bytes(shape, 1, kNone, 2, true),
      3 * 2 * f * s);
}

TEST(ActivationMemory, DenseBlocksFirstAreCountedAsDenseBlocks) {
  // One dense block (MLP 256) then three MoE blocks (8 experts of 32, top-2, one shared); h = 64,
  // 4 heads of 32 (q = 128), 2 K/V heads (g = 64), q/k norms, s = 16, bf16, flash attention.
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
  const double h = 64, q = 128, g = 64, a = 4, f = 256, fe = 32, s = 16, vocab = 1000;
  const double attention = 2 * h + 2 * h + 2 * (q + 2 * g) + 2 * (q + g) + 2 * q + 4 * a;
  const double dense = attention + 2 * h + 2 * h + 3 * 2 * f;
  const double moe = attention + 2 * h + 2 * h + 4 * 8 + 2 * (2 * h + 3 * 2 * fe) + 3 * 2 * fe;
  // The larger kind of block is what one block of a stage is counted as: here the dense one.
  ASSERT_GT(dense, moe);
  EXPECT_DOUBLE_EQ(block_activation_bytes(shape, 1, kNone, 2, true), dense * s);
  // The model: each block its own, plus the final norm and head inputs (2 x 2h) and the fp32
  // loss at the start of the backward (3 x 4 V) per token.
  EXPECT_DOUBLE_EQ(activation_bytes(shape, 1, kNone, 2, true),
                   (dense + 3 * moe + 2 * 2 * h + 12 * vocab) * s);
}

// ---- Relations.

TEST(ActivationMemory, FullBelowSelectiveNotAboveNone) {
  for (const char* name : {"gpt2", "llama2-7b", "llama3-8b", "mixtral-8x7b"}) {
    const TransformerShape& shape = *get_model(name).transformer;
    for (bool flash : {false, true}) {
      const double none = activation_bytes(shape, 2, kNone, 2, flash);
      const double selective = activation_bytes(shape, 2, kSelective, 2, flash);
      const double full = activation_bytes(shape, 2, kFull, 2, flash);
      EXPECT_LT(full, selective) << name << " flash " << flash;
      EXPECT_LE(selective, none) << name << " flash " << flash;
    }
  }
}

TEST(ActivationMemory, LinearInSequences) {
  for (ActivationCheckpointing mode : {kNone, kSelective, kFull}) {
    const double one = activation_bytes(llama2_7b(), 1, mode, 2, false);
    EXPECT_DOUBLE_EQ(activation_bytes(llama2_7b(), 8, mode, 2, false), 8 * one);
  }
}

TEST(ActivationMemory, FlashBelowStandard) {
  for (const char* name : {"gpt2", "llama2-7b", "mixtral-8x7b"}) {
    const TransformerShape& shape = *get_model(name).transformer;
    EXPECT_LT(activation_bytes(shape, 1, kNone, 2, true), activation_bytes(shape, 1, kNone, 2, false)) << name;
  }
}

TEST(ActivationMemory, FlashIsLinearInSequenceLengthStandardIsNot) {
  // Without the s^2 scores, twice the tokens per sequence store twice the bytes.
  TransformerShape shape = llama2_7b();
  const double at_2k = [&] {
    shape.seq_len = 2048;
    return block_activation_bytes(shape, 1, kNone, 2, true);
  }();
  shape.seq_len = 4096;
  EXPECT_DOUBLE_EQ(block_activation_bytes(shape, 1, kNone, 2, true), 2 * at_2k);
  const double standard_4k = block_activation_bytes(shape, 1, kNone, 2, false);
  shape.seq_len = 2048;
  EXPECT_GT(standard_4k, 2 * block_activation_bytes(shape, 1, kNone, 2, false));
}

TEST(ActivationMemory, DropoutMasksStayOneByteInFp32) {
  // GPT block, fp32 activations, selective: 4-byte tensors where Korthikanti has 2-byte ones
  // (32 of the 34), the two 1-byte masks unchanged: 2 x 32 + 2 = 66 s b h.
  const double s = 2048, h = 12288;
  EXPECT_DOUBLE_EQ(block_activation_bytes(gpt3_175b(1), 1, kSelective, 4, false), 66 * s * h);
}

// ---- Errors.

TEST(ActivationMemory, RejectsEmptySequencesAndBatches) {
  TransformerShape shape = llama2_7b();
  EXPECT_EQ(expect_error([&] { (void)activation_bytes(shape, 0, kNone, 2); }).where().key,
            "workload.batch_per_worker");
  shape.seq_len = 0;
  EXPECT_EQ(expect_error([&] { (void)activation_bytes(shape, 1, kNone, 2); }).where().key, "workload.seq_len");
  EXPECT_EQ(expect_error([&] { (void)block_activation_bytes(shape, 1, kNone, 2); }).where().key,
            "workload.seq_len");
}


// ---- Korthikanti et al. 2022 section 4.2 (table 2) with tensor parallelism, and context
// parallelism dividing the tokens.

TEST(ActivationMemoryParallel, GptBlockUnderTensorAndSequenceParallelism) {
  const TransformerShape shape = gpt3_175b(1);
  const double s = 2048, h = 12288, a = 96, b = 1;
  for (int t : {2, 4, 8}) {
    const ActivationSplit tp{.tensor = t, .sequence_parallel = false, .context = 1};
    const ActivationSplit sp{.tensor = t, .sequence_parallel = true, .context = 1};
    const double none = s * b * h * (10 + 24.0 / t + 5 * a * s / (h * t));
    EXPECT_NEAR(block_activation_bytes(shape, 1, kNone, 2, false, tp), none, 0.02 * none) << t;
    const double none_sp = s * b * h / t * (34 + 5 * a * s / h);
    EXPECT_NEAR(block_activation_bytes(shape, 1, kNone, 2, false, sp), none_sp, 0.02 * none_sp) << t;
    const double selective = s * b * h * (10 + 24.0 / t);
    EXPECT_NEAR(block_activation_bytes(shape, 1, kSelective, 2, false, tp), selective, 0.02 * selective) << t;
    const double selective_sp = 34 * s * b * h / t;
    EXPECT_NEAR(block_activation_bytes(shape, 1, kSelective, 2, false, sp), selective_sp, 0.02 * selective_sp) << t;
    // Full recomputation keeps each block's input: whole on every rank, or its 1/t of the tokens.
    EXPECT_DOUBLE_EQ(block_activation_bytes(shape, 1, kFull, 2, false, tp), 2 * s * b * h);
    EXPECT_DOUBLE_EQ(block_activation_bytes(shape, 1, kFull, 2, false, sp), 2 * s * b * h / t);
  }
  // t = 1 is the block as before, sequence parallel or not.
  for (bool sequence : {false, true}) {
    const ActivationSplit one{.tensor = 1, .sequence_parallel = sequence, .context = 1};
    EXPECT_DOUBLE_EQ(block_activation_bytes(shape, 2, kNone, 2, true, one), block_activation_bytes(shape, 2, kNone, 2, true));
  }
}

TEST(ActivationMemoryParallel, ContextParallelismDividesTheTokens) {
  const TransformerShape& shape = llama2_7b();
  for (int c : {2, 4}) {
    const ActivationSplit cp{.tensor = 1, .sequence_parallel = false, .context = c};
    // Flash attention keeps nothing quadratic, so every term is linear in the tokens.
    EXPECT_NEAR(block_activation_bytes(shape, 2, kNone, 2, true, cp), block_activation_bytes(shape, 2, kNone, 2, true) / c,
                1e-9 * block_activation_bytes(shape, 2, kNone, 2, true));
  }
}

TEST(ActivationMemoryParallel, HeadHoldsItsInputsAndTheLogitsOverTheVocabulary) {
  const TransformerShape& shape = llama2_7b();
  const double s = 4096, h = 4096, V = 32000, b = 1;
  const ActivationSplit tp{.tensor = 4, .sequence_parallel = false, .context = 1};
  EXPECT_DOUBLE_EQ(head_activation_bytes(shape, 1, 2, tp), 2 * 2 * s * b * h + 4 * s * b * V / 4);
  const ActivationSplit sp{.tensor = 4, .sequence_parallel = true, .context = 1};
  EXPECT_DOUBLE_EQ(head_activation_bytes(shape, 1, 2, sp), 2 * 2 * s * b * h / 4 + 4 * s * b * V / 4);
}

}  // namespace activation_memory_test
}  // namespace
}  // namespace stepcast::zoo
