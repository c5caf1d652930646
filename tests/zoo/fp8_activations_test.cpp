// Activations under fp8 training (Transformer Engine's recipe): the inputs of the four
// projections (QKV, attention output, FC1, FC2) are saved as their fp8 casts, 1 byte an element,
// everything else as in bf16; flash attention keeps its own bf16 output beside the output
// projection's fp8 copy. Each block is counted here term by term from Korthikanti's list, the
// element size of each term written out.
#include <gtest/gtest.h>

#include "stepcast/zoo/activation_memory.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::zoo {
namespace {
namespace fp8_activations_test {  // this file's own names: test files are compiled several to a unit

using workload::ActivationCheckpointing;
using workload::Precision;

constexpr ActivationCheckpointing kNone = ActivationCheckpointing::None;
constexpr ActivationCheckpointing kSelective = ActivationCheckpointing::Selective;
constexpr ActivationCheckpointing kFull = ActivationCheckpointing::Full;

// A small Llama block (RMSNorm, SwiGLU, rotary, no dropout) with grouped-query attention:
// h = 64, f = 160, a = 4 heads of 16, 2 key/value heads (q = 64, g = 32), s = 32.
TransformerShape small(int64_t experts = 1, int64_t top_k = 1, int64_t shared = 0) {
  return TransformerShape{.layers = 1,
                          .hidden = 64,
                          .ffn_hidden = 160,
                          .heads = 4,
                          .kv_heads = 2,
                          .vocab = 100,
                          .experts = experts,
                          .top_k = top_k,
                          .seq_len = 32,
                          .shared_experts = shared};
}

constexpr double kSequences = 2;
constexpr double T = 32 * kSequences;  // tokens
constexpr double h = 64, f = 160, q = 64, g = 32, a = 4, s = 32;
constexpr double e = 2, e8 = 1;  // bf16 activations, fp8 GEMM inputs

TEST(Fp8Activations, TheRecipeSavesTheProjectionsInputsInOneByte) {
  const ElementBytes fp8 = activation_element_bytes(Precision::FP8);
  EXPECT_EQ(fp8.activation, 2);
  EXPECT_EQ(fp8.gemm_input, 1);
  for (Precision p : {Precision::FP32, Precision::FP16, Precision::BF16}) {
    const ElementBytes one = activation_element_bytes(p);
    EXPECT_EQ(one.activation, workload::bytes_per_element(p));
    EXPECT_EQ(one.gemm_input, workload::bytes_per_element(p));
  }
}

TEST(Fp8Activations, BlockIsTheClosedFormTermByTerm) {
  // Standard attention, no recomputation:
  const double attention = e * T * h              // norm input
                           + e8 * T * h           // Q/K/V projection input (fp8 cast)
                           + e * T * (q + 2 * g)  // Q, K, V
                           + e8 * T * q           // output projection input (fp8 cast)
                           + e * a * s * T;       // softmax output (the core)
  const double mlp = e * T * h                    // norm input
                     + e8 * T * h                 // FC1 input (fp8 cast)
                     + 2 * e * T * f              // gate and up outputs (the SwiGLU's inputs)
                     + e8 * T * f;                // FC2 input (fp8 cast)
  const ElementBytes fp8 = activation_element_bytes(Precision::FP8);
  EXPECT_DOUBLE_EQ(block_activation_bytes(small(), 2, kNone, fp8, false), attention + mlp);
  // Selective drops the core; full keeps the block's input, in bf16 (the residual stream).
  EXPECT_DOUBLE_EQ(block_activation_bytes(small(), 2, kSelective, fp8, false),
                   attention + mlp - e * a * s * T);
  EXPECT_DOUBLE_EQ(block_activation_bytes(small(), 2, kFull, fp8, false), e * T * h);
  // Flash attention: the core is the fp32 log-sum-exp and the attention's own bf16 output, which
  // its backward reads (the output projection saved only its fp8 copy).
  const double flash_core = 4 * a * T + e * T * q;
  EXPECT_DOUBLE_EQ(block_activation_bytes(small(), 2, kNone, fp8, true),
                   attention - e * a * s * T + flash_core + mlp);
  EXPECT_DOUBLE_EQ(block_activation_bytes(small(), 2, kSelective, fp8, true),
                   attention - e * a * s * T + mlp);
}

TEST(Fp8Activations, Bf16LessFp8IsTheProjectionsInputsAtOneByte) {
  const ElementBytes fp8 = activation_element_bytes(Precision::FP8);
  const ElementBytes bf16 = activation_element_bytes(Precision::BF16);
  // The four GEMM inputs: QKV (h), output projection (q), FC1 (h), FC2 (f), a byte each saved.
  const double gemm_inputs = T * (h + q + h + f);
  for (ActivationCheckpointing mode : {kNone, kSelective}) {
    const double lo = block_activation_bytes(small(), 2, mode, fp8, false);
    const double hi = block_activation_bytes(small(), 2, mode, bf16, false);
    EXPECT_LT(lo, hi);
    EXPECT_DOUBLE_EQ(hi - lo, gemm_inputs * (e - e8)) << static_cast<int>(mode);
  }
  // Flash attention with the core kept: the output projection's input is a second tensor in fp8
  // (its fp8 copy beside flash attention's bf16 output), so that term saves nothing and costs
  // one byte more (2 in bf16, 2 + 1 in fp8); the other three inputs save a byte each.
  EXPECT_DOUBLE_EQ(block_activation_bytes(small(), 2, kNone, bf16, true) -
                       block_activation_bytes(small(), 2, kNone, fp8, true),
                   T * (h + h + f) * (e - e8) - e8 * T * q);
  EXPECT_DOUBLE_EQ(block_activation_bytes(small(), 2, kSelective, bf16, true) -
                       block_activation_bytes(small(), 2, kSelective, fp8, true),
                   gemm_inputs * (e - e8));
  // Full recomputation stores the same block inputs; what differs is the block recomputed.
  EXPECT_DOUBLE_EQ(block_activation_bytes(small(), 2, kFull, fp8, true),
                   block_activation_bytes(small(), 2, kFull, bf16, true));
  EXPECT_LT(activation_bytes(small(), 2, kFull, fp8, false),
            activation_bytes(small(), 2, kFull, bf16, false));
  // The head and the loss are not fp8 (the LM head stays bf16 in both recipes).
  EXPECT_DOUBLE_EQ(head_activation_bytes(small(), 2, fp8, {}), head_activation_bytes(small(), 2, bf16, {}));
}

TEST(Fp8Activations, TensorParallelKeepsTheNormInputsAndFirstInputsWhole) {
  // Without sequence parallelism a rank keeps whole the two norm inputs (e T h each) and the
  // inputs of the QKV and FC1 projections (e8 T h each), and 1/t of the rest; with it, 1/t of all.
  const ElementBytes fp8 = activation_element_bytes(Precision::FP8);
  const double whole = block_activation_bytes(small(), 2, kSelective, fp8, true);
  const double replicated = 2 * e * T * h + 2 * e8 * T * h;
  EXPECT_DOUBLE_EQ(block_activation_bytes(small(), 2, kSelective, fp8, true, ActivationSplit{.tensor = 2}),
                   replicated + (whole - replicated) / 2);
  EXPECT_DOUBLE_EQ(block_activation_bytes(small(), 2, kSelective, fp8, true,
                                          ActivationSplit{.tensor = 2, .sequence_parallel = true}),
                   whole / 2);
}

TEST(Fp8Activations, ExpertsSaveTheirInputsInFp8AndTheRouterInBf16) {
  // Four experts, top 2: each token's expert input (FC1's) and down projection input in fp8 in
  // both of its experts; the router's input (the norm output) stays bf16. A shared expert saves
  // its own fp8 copy of that input (T h at e8) besides its FC2 input (T f at e8).
  const ElementBytes fp8 = activation_element_bytes(Precision::FP8);
  const ElementBytes bf16 = activation_element_bytes(Precision::BF16);
  const double k = 2;
  const double attention_inputs = T * (h + q);
  const double routed = k * T * (h + f);
  EXPECT_DOUBLE_EQ(block_activation_bytes(small(4, 2), 2, kSelective, bf16, true) -
                       block_activation_bytes(small(4, 2), 2, kSelective, fp8, true),
                   (attention_inputs + routed) * (e - e8));
  const double shared = T * f * (e - e8) - e8 * T * h;
  EXPECT_DOUBLE_EQ(block_activation_bytes(small(4, 2, 1), 2, kSelective, bf16, true) -
                       block_activation_bytes(small(4, 2, 1), 2, kSelective, fp8, true),
                   (attention_inputs + routed) * (e - e8) + shared);
}

}  // namespace fp8_activations_test
}  // namespace
}  // namespace stepcast::zoo
