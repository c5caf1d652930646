// Sharded data parallelism through predict::predict: fine and coarse agree where nothing
// contends (the coarse phases are then the simulator's mechanism exactly), and every Result
// carries the memory check and token rates that follow from the model (ZeRO accounting, PaLM's
// MFU), whatever the predictor.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace fsdp_predictors_test {  // this file's own names: test files are compiled several to a unit

using scheme::FsdpSharding;
using scheme::Scheme;
using scheme::SchemeConfig;
using workload::OpKind;
using workload::Workload;

const Options kFine{.predictor = Predictor::Fine, .warmup_steps = 1, .measure_steps = 2};
const Options kCoarse{.predictor = Predictor::Coarse, .warmup_steps = 1, .measure_steps = 2};

/// Forward op l reads tensor l (bytes[l]); backward ops in reverse layer order produce them.
Workload chain(const std::vector<double>& bytes, double forward, double backward) {
  Workload w;
  w.name = "chain";
  const int layers = static_cast<int>(bytes.size());
  for (int l = 0; l < layers; ++l) {
    workload::Op op{.name = fmt::format("fwd{}", l), .kind = OpKind::Forward, .duration = forward, .layer = l, .deps = {}};
    if (l > 0) op.deps = {l - 1};
    w.ops.push_back(op);
  }
  for (int l = layers - 1; l >= 0; --l) {
    workload::Op op{.name = fmt::format("bwd{}", l), .kind = OpKind::Backward, .duration = backward, .layer = l, .deps = {}};
    op.deps = {static_cast<int>(w.ops.size()) - 1};
    w.ops.push_back(op);
  }
  for (int l = 0; l < layers; ++l) {
    w.tensors.push_back({.name = fmt::format("p{}", l), .bytes = bytes[static_cast<size_t>(l)],
                         .producer = 2 * layers - 1 - l, .consumers = {l}});
  }
  return w;
}

SchemeConfig fsdp(FsdpSharding sharding, bool reshard = true) {
  SchemeConfig s;
  s.scheme = Scheme::Fsdp;
  s.fsdp.sharding = sharding;
  s.fsdp.reshard_after_forward = reshard;
  return s;
}

const char* name(FsdpSharding s) {
  switch (s) {
    case FsdpSharding::Full:
      return "full";
    case FsdpSharding::GradOp:
      return "grad_op";
    case FsdpSharding::Optimizer:
      return "optimizer";
    case FsdpSharding::Hybrid:
      return "hybrid";
  }
  return "?";
}

void expect_agree(const Workload& w, const cluster::ClusterSpec& spec, const std::string& what) {
  for (FsdpSharding sharding : {FsdpSharding::Full, FsdpSharding::GradOp, FsdpSharding::Optimizer, FsdpSharding::Hybrid}) {
    for (bool reshard : {true, false}) {
      const SchemeConfig scheme = fsdp(sharding, reshard);
      const Result fine = predict(w, spec, scheme, kFine);
      const Result coarse = predict(w, spec, scheme, kCoarse);
      EXPECT_NEAR(coarse.step_time, fine.step_time, 0.05 * fine.step_time)
          << what << ", " << name(sharding) << ", reshard " << reshard;
      // Identical workers wait for no one: the idle time is all communication.
      const double fine_exposed = fine.breakdown.communication_exposed;
      EXPECT_NEAR(coarse.breakdown.communication_exposed, fine_exposed, 0.05 * fine_exposed + 1e-9)
          << what << ", " << name(sharding) << ", reshard " << reshard;
      EXPECT_DOUBLE_EQ(coarse.breakdown.wait, 0) << what << ", " << name(sharding);
    }
  }
}

TEST(FsdpFineVsCoarse, AgreeWhereNothingContends) {
  // Four workers on two nodes of two GPUs (hybrid: a group per node) on one switch.
  cluster::ClusterSpec spec;
  spec.workers = 4;
  spec.workers_per_node = 2;
  spec.nic_bw = 12.5e9;
  spec.intra_node_bw = 50e9;
  // One unit and no compute: the collectives run one after another, alone.
  expect_agree(chain({8e7}, 1e-9, 1e-9), spec, "one unit");
  // Compute far above communication: the gathers and reduce-scatters in the middle hide behind
  // compute, the first gathers and the last reduce-scatter run alone.
  expect_agree(chain({40e6, 10e6, 20e6, 30e6}, 20e-3, 40e-3), spec, "compute-bound chain");
  expect_agree(zoo::to_workload(zoo::get_model("gpt2"), {.batch_per_worker = 8, .step_time = 2.0}), spec,
               "compute-bound gpt2");
}

// ---- Memory and tokens.

constexpr double kLlama2_7bParameters = 6'738'415'616;  // Hugging Face LlamaForCausalLM, Llama-2-7b

TEST(FsdpResult, DataParallelLlama2_7bHolds16BytesPerParameterAndDoesNotFit80GB) {
  // Mixed-precision Adam without sharding (DeepSpeed's count): fp16/bf16 weights 2 + gradients 2
  // + fp32 master copy 4 + two fp32 moments 8 = 16 bytes per parameter, 107.8 GB > 80 GB. A job
  // that does not fit is still predicted.
  const zoo::ModelSpec& model = zoo::get_model("llama2-7b");
  ASSERT_EQ(model.num_parameters(), 6'738'415'616);
  cluster::ClusterSpec spec;
  spec.workers = 8;
  spec.workers_per_node = 8;
  spec.gpu_memory = 80e9;
  SchemeConfig ddp;
  ddp.scheme = Scheme::AllReduce;
  for (workload::Precision precision : {workload::Precision::FP16, workload::Precision::BF16}) {
    const Workload w = zoo::to_workload(model, {.batch_per_worker = 1, .step_time = 1.0, .precision = precision});
    for (const Options& options : {kFine, kCoarse}) {
      const Result r = predict(w, spec, ddp, options);
      const Memory& m = r.memory.per_worker;
      EXPECT_TRUE(r.memory.known);
      EXPECT_DOUBLE_EQ(m.parameters + m.gradients + m.optimizer, 16 * kLlama2_7bParameters);
      EXPECT_DOUBLE_EQ(m.parameters, 2 * kLlama2_7bParameters);
      EXPECT_DOUBLE_EQ(m.buffers, 0);
      EXPECT_FALSE(r.memory.fits());
      EXPECT_TRUE(std::isfinite(r.step_time) && r.step_time > 1.0) << "compute alone is 1 s";
      EXPECT_GT(r.throughput, 0);
    }
  }
}

TEST(FsdpResult, TokenRatesAndMfuFollowFromThroughputAndTheModel) {
  // tokens/s = samples/s x seq_len; MFU = tokens/s per GPU x training FLOPs per token / peak;
  // 6ND MFU the same with 6 x active parameters per token.
  constexpr double kPeak = 989e12;  // H100 SXM dense bf16
  cluster::ClusterSpec spec;
  spec.workers = 16;
  spec.workers_per_node = 8;
  spec.nic_bw = 50e9;
  spec.intra_node_bw = 300e9;
  spec.gpu_peak_flops = kPeak;
  for (const char* name : {"gpt2", "llama2-7b"}) {
    const zoo::ModelSpec& model = zoo::get_model(name);
    const double seq_len = static_cast<double>(model.transformer->seq_len);
    const Workload w =
        zoo::to_workload(model, {.batch_per_worker = 2, .step_time = 0.5, .precision = workload::Precision::BF16});
    SchemeConfig ddp;
    ddp.scheme = Scheme::AllReduce;
    for (const SchemeConfig& scheme : {ddp, fsdp(FsdpSharding::Full), fsdp(FsdpSharding::Hybrid)}) {
      for (Predictor predictor : {Predictor::Fine, Predictor::Coarse, Predictor::Analytic}) {
        Options options = kFine;
        options.predictor = predictor;
        const Result r = predict(w, spec, scheme, options);
        const std::string what = fmt::format("{}, scheme {}, {}", name, static_cast<int>(scheme.scheme), to_string(predictor));
        ASSERT_GT(r.throughput, 0) << what;
        EXPECT_NEAR(r.throughput, spec.workers * w.batch_per_worker / r.step_time, 1e-12 * r.throughput) << what;
        EXPECT_NEAR(r.tokens.tokens_per_s, r.throughput * seq_len, 1e-12 * r.tokens.tokens_per_s) << what;
        const double per_gpu = r.tokens.tokens_per_s / spec.workers;
        EXPECT_NEAR(r.tokens.tokens_per_s_per_worker, per_gpu, 1e-12 * per_gpu) << what;
        const double mfu = per_gpu * zoo::training_flops_per_token(model) / kPeak;
        EXPECT_NEAR(r.tokens.mfu, mfu, 1e-12 * mfu) << what;
        const double mfu_6n = per_gpu * zoo::flops_per_token_6n(model) / kPeak;
        EXPECT_NEAR(r.tokens.mfu_6nd, mfu_6n, 1e-12 * mfu_6n) << what;
        EXPECT_GT(r.tokens.mfu, 0) << what;
        EXPECT_LT(r.tokens.mfu, 1) << what << ": no GPU beats its peak";
      }
    }
  }
}

}  // namespace fsdp_predictors_test
}  // namespace
}  // namespace stepcast::predict
