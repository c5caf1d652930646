// Model-state memory per GPU against the ZeRO paper's worked numbers (Rajbhandari et al. 2020,
// figure 1 and section 5: 7.5B parameters, 64 GPUs, mixed-precision Adam), bytes per parameter
// written out from DeepSpeed's accounting, and the sharding relations that must hold whatever
// the numbers (hybrid = full within its group, more workers never cost memory); what the GPU
// reserves around the tensors.
#include "stepcast/predict/memory.hpp"

#include <gtest/gtest.h>

#include "stepcast/predict/result.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace memory_test {  // this file's own names: test files are compiled several to a unit

using scheme::FsdpSharding;
using scheme::Optimizer;
using scheme::Scheme;
using scheme::SchemeConfig;
using workload::Precision;

SchemeConfig scheme_of(Scheme kind, Optimizer optimizer = Optimizer::Adam) {
  SchemeConfig s;
  s.scheme = kind;
  s.optimizer = optimizer;
  return s;
}

SchemeConfig ddp(Optimizer optimizer = Optimizer::Adam) { return scheme_of(Scheme::AllReduce, optimizer); }

SchemeConfig fsdp(FsdpSharding sharding, Optimizer optimizer = Optimizer::Adam) {
  SchemeConfig s = scheme_of(Scheme::Fsdp, optimizer);
  s.fsdp.sharding = sharding;
  return s;
}

double states(const Memory& m) { return m.parameters + m.gradients + m.optimizer; }

// ---- ZeRO paper: Psi = 7.5B, N_d = 64, K = 12 (mixed-precision Adam).

constexpr double kPsi = 7.5e9;
constexpr double kGB = 1e9;

TEST(ModelStateMemory, ZeroPaperDataParallelIs120GB) {
  // (2 + 2 + K) Psi = 16 x 7.5e9 = 120 GB.
  const Memory m = model_state_memory(kPsi, Precision::FP16, ddp(), 64, 8);
  EXPECT_NEAR(m.total() / kGB, 120.0, 0.02 * 120.0);
}

TEST(ModelStateMemory, ZeroPaperStage1Is31_4GB) {
  // P_os: 2 Psi + 2 Psi + K Psi / N_d = 4.1875 x 7.5e9 = 31.4 GB.
  const Memory m = model_state_memory(kPsi, Precision::FP16, fsdp(FsdpSharding::Optimizer), 64, 8);
  EXPECT_NEAR(m.total() / kGB, 31.4, 0.02 * 31.4);
}

TEST(ModelStateMemory, ZeroPaperStage2Is16_6GB) {
  // P_os+g: 2 Psi + (2 + K) Psi / N_d = 2.21875 x 7.5e9 = 16.6 GB.
  const Memory m = model_state_memory(kPsi, Precision::FP16, fsdp(FsdpSharding::GradOp), 64, 8);
  EXPECT_NEAR(m.total() / kGB, 16.6, 0.02 * 16.6);
}

TEST(ModelStateMemory, ZeroPaperStage3Is1_9GB) {
  // P_os+g+p: (2 + 2 + K) Psi / N_d = 0.25 x 7.5e9 = 1.875 GB, "1.9GB" in the paper.
  const Memory m = model_state_memory(kPsi, Precision::FP16, fsdp(FsdpSharding::Full), 64, 8);
  EXPECT_NEAR(m.total() / kGB, 1.9, 0.02 * 1.9);
}

TEST(ModelStateMemory, ModelStatesOnly) {
  const Memory m = model_state_memory(kPsi, Precision::FP16, ddp(), 64, 8);
  EXPECT_EQ(m.activations, 0);
  EXPECT_EQ(m.buffers, 0);
}

// ---- Bytes per parameter.

TEST(ModelStateMemory, DdpOfLlama2_7bIs16BytesPerParameter) {
  // 6,738,415,616 x (2 + 2 + 12) = 107.8 GB (quoted loosely as "about 112 GB").
  const double n = static_cast<double>(zoo::get_model("llama2-7b").num_parameters());
  const Memory m = model_state_memory(n, Precision::BF16, ddp(), 64, 8);
  EXPECT_DOUBLE_EQ(m.parameters, 2 * n);
  EXPECT_DOUBLE_EQ(m.gradients, 2 * n);
  EXPECT_DOUBLE_EQ(m.optimizer, 12 * n);
  EXPECT_DOUBLE_EQ(m.total(), 16 * n);
}

TEST(ModelStateMemory, Fp32AdamIs16BytesPerParameterToo) {
  // 4 weights + 4 gradients + 8 moments; no master copy.
  const Memory m = model_state_memory(1e9, Precision::FP32, ddp(), 8, 8);
  EXPECT_DOUBLE_EQ(m.parameters, 4e9);
  EXPECT_DOUBLE_EQ(m.gradients, 4e9);
  EXPECT_DOUBLE_EQ(m.optimizer, 8e9);
}

TEST(ModelStateMemory, OptimizerBytesPerParameter) {
  // Mixed precision: master copy 4 + moments; fp32: moments only.
  const double n = 1e6;
  EXPECT_DOUBLE_EQ(model_state_memory(n, Precision::FP16, ddp(Optimizer::Momentum), 1, 1).optimizer, 8 * n);
  EXPECT_DOUBLE_EQ(model_state_memory(n, Precision::FP16, ddp(Optimizer::Sgd), 1, 1).optimizer, 4 * n);
  EXPECT_DOUBLE_EQ(model_state_memory(n, Precision::FP32, ddp(Optimizer::Momentum), 1, 1).optimizer, 4 * n);
  EXPECT_DOUBLE_EQ(model_state_memory(n, Precision::FP32, ddp(Optimizer::Sgd), 1, 1).optimizer, 0);
}

TEST(ModelStateMemory, SgdFp32FullShardIs8BytesOverD) {
  // 4 weights + 4 gradients, nothing else, all divided by the 16 workers.
  const Memory m = model_state_memory(3e9, Precision::FP32, fsdp(FsdpSharding::Full, Optimizer::Sgd), 16, 8);
  EXPECT_DOUBLE_EQ(m.total(), 8 * 3e9 / 16);
}

TEST(ModelStateMemory, UnevenParameterCountUsesRealDivision) {
  const Memory m = model_state_memory(1001, Precision::FP32, fsdp(FsdpSharding::Full), 3, 3);
  EXPECT_DOUBLE_EQ(m.total(), 16 * 1001 / 3.0);
}

TEST(ModelStateMemory, ParameterServerWorkerHoldsNoOptimizerState) {
  // The servers apply the gradients, so the optimizer state lives there.
  const SchemeConfig ps = scheme_of(Scheme::ParameterServer);
  const Memory m = model_state_memory(1e9, Precision::FP16, ps, 8, 8);
  EXPECT_DOUBLE_EQ(m.parameters, 2e9);
  EXPECT_DOUBLE_EQ(m.gradients, 2e9);
  EXPECT_EQ(m.optimizer, 0);
}

// ---- Sharding relations.

TEST(ModelStateMemory, HybridWithGroupOf8On64EqualsFullOn8) {
  SchemeConfig hybrid = fsdp(FsdpSharding::Hybrid);
  hybrid.fsdp.shard_group = 8;
  EXPECT_EQ(model_state_memory(kPsi, Precision::BF16, hybrid, 64, 4),
            model_state_memory(kPsi, Precision::BF16, fsdp(FsdpSharding::Full), 8, 4));
}

TEST(ModelStateMemory, HybridDefaultGroupIsOneNode) {
  EXPECT_EQ(model_state_memory(kPsi, Precision::BF16, fsdp(FsdpSharding::Hybrid), 64, 8),
            model_state_memory(kPsi, Precision::BF16, fsdp(FsdpSharding::Full), 8, 8));
}

TEST(ModelStateMemory, MoreWorkersNeverIncreaseFullShardStates) {
  double previous = model_state_memory(kPsi, Precision::BF16, fsdp(FsdpSharding::Full), 1, 1).total();
  for (int workers = 2; workers <= 1024; workers *= 2) {
    const double now = model_state_memory(kPsi, Precision::BF16, fsdp(FsdpSharding::Full), workers, 8).total();
    EXPECT_LE(now, previous) << workers << " workers";
    previous = now;
  }
}

TEST(ModelStateMemory, StagesOrderedOnManyWorkers) {
  // Each ZeRO stage shards a superset of the previous one's states.
  const double dp = states(model_state_memory(kPsi, Precision::FP16, ddp(), 64, 8));
  const double z1 = states(model_state_memory(kPsi, Precision::FP16, fsdp(FsdpSharding::Optimizer), 64, 8));
  const double z2 = states(model_state_memory(kPsi, Precision::FP16, fsdp(FsdpSharding::GradOp), 64, 8));
  const double z3 = states(model_state_memory(kPsi, Precision::FP16, fsdp(FsdpSharding::Full), 64, 8));
  EXPECT_GT(dp, z1);
  EXPECT_GT(z1, z2);
  EXPECT_GT(z2, z3);
}

TEST(ModelStateMemory, FullShardOnOneWorkerIsDataParallel) {
  EXPECT_EQ(model_state_memory(kPsi, Precision::FP16, fsdp(FsdpSharding::Full), 1, 1),
            model_state_memory(kPsi, Precision::FP16, ddp(), 1, 1));
}

TEST(ModelStateMemory, FullShardWithoutReshardHoldsParametersWhole) {
  // Every unit stays gathered from its forward to its backward: at the end of the forward all
  // parameters are whole, as with grad_op.
  SchemeConfig keep = fsdp(FsdpSharding::Full);
  keep.fsdp.reshard_after_forward = false;
  EXPECT_EQ(model_state_memory(kPsi, Precision::FP16, keep, 64, 8),
            model_state_memory(kPsi, Precision::FP16, fsdp(FsdpSharding::GradOp), 64, 8));
}

TEST(Memory, TotalAddsEveryKind) {
  const Memory m{.parameters = 1, .gradients = 2, .optimizer = 4, .activations = 8, .buffers = 16};
  EXPECT_EQ(m.total(), 31);
}

TEST(MemoryCheck, ReservedIsThePoolAroundTheTensorsPlusWhatLivesOutsideIt) {
  // 9 GB of tensors in a pool of which 10% holds none: 9 / 0.9 = 10 GB; plus 1.1 GB of CUDA
  // context and NCCL buffers, once: 11.1 GB reserved. It fits in 11.2 GB, not in 11 GB, though
  // the 9 GB allocated would.
  MemoryCheck m{.known = true,
                .per_worker = {.parameters = 4e9, .activations = 5e9},
                .activations_modelled = true,
                .gpu_memory = 11e9,
                .outside_allocator = 1.1e9,
                .allocator_overhead = 0.1};
  EXPECT_DOUBLE_EQ(m.allocated(), 9e9);
  EXPECT_DOUBLE_EQ(m.reserved(), 11.1e9);
  EXPECT_FALSE(m.fits());
  m.gpu_memory = 11.2e9;
  EXPECT_TRUE(m.fits());
  // No reserve and no fragmentation: reserved is what is allocated.
  m.outside_allocator = 0;
  m.allocator_overhead = 0;
  EXPECT_DOUBLE_EQ(m.reserved(), 9e9);
}

// ---- Gathered buffers.

TEST(GatheredBufferBytes, FullShardHoldsPrefetchPlusOneUnitsAndOneGradient) {
  // bf16 unit of 200M parameters, prefetch 1: two gathered units + one unsharded gradient.
  const double unit = 200e6;
  EXPECT_DOUBLE_EQ(gathered_buffer_bytes(unit, Precision::BF16, fsdp(FsdpSharding::Full), 64, 8), 3 * 2 * unit);
  SchemeConfig deep = fsdp(FsdpSharding::Hybrid);
  deep.fsdp.prefetch = 2;
  EXPECT_DOUBLE_EQ(gathered_buffer_bytes(unit, Precision::FP32, deep, 64, 8), 4 * 4 * unit);
}

TEST(GatheredBufferBytes, GradOpHoldsOneUnitGradient) {
  // Its parameters are whole in the model states already.
  EXPECT_DOUBLE_EQ(gathered_buffer_bytes(1e8, Precision::FP16, fsdp(FsdpSharding::GradOp), 64, 8), 2e8);
  SchemeConfig keep = fsdp(FsdpSharding::Full);
  keep.fsdp.reshard_after_forward = false;
  EXPECT_DOUBLE_EQ(gathered_buffer_bytes(1e8, Precision::FP16, keep, 64, 8), 2e8);
}

TEST(GatheredBufferBytes, NoneWithoutParameterSharding) {
  EXPECT_EQ(gathered_buffer_bytes(1e8, Precision::FP16, fsdp(FsdpSharding::Optimizer), 64, 8), 0);
  EXPECT_EQ(gathered_buffer_bytes(1e8, Precision::FP16, ddp(), 64, 8), 0);
  EXPECT_EQ(gathered_buffer_bytes(1e8, Precision::FP16, scheme_of(Scheme::ParameterServer), 64, 8), 0);
  // One worker: the shard is the unit itself.
  EXPECT_EQ(gathered_buffer_bytes(1e8, Precision::FP16, fsdp(FsdpSharding::Full), 1, 1), 0);
}

}  // namespace memory_test
}  // namespace
}  // namespace stepcast::predict
