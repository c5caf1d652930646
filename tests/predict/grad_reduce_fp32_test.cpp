// training.grad_reduce_in_fp32: gradients accumulated and reduced in fp32 under a bf16 model
// (Megatron-LM's default under bf16, TorchTitan's FSDP reduce dtype). Every gradient collective
// moves twice the bf16 bytes and every gradient buffer holds twice as much, in every predictor,
// while the parameters' all-gathers stay bf16: closed forms of the bytes by kind of collective,
// the model states by hand, the step never shorter, and the parameter server refused.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace grad_reduce_fp32_test {  // this file's own names: test files are compiled several to a unit

constexpr Predictor kPredictors[] = {Predictor::Fine, Predictor::Coarse, Predictor::Analytic};

workload::Workload gpt2() {
  return zoo::to_workload(zoo::get_model("gpt2"),
                          {.batch_per_worker = 2, .step_time = 0.2, .precision = workload::Precision::BF16});
}

/// Eight GPUs, one a node: every byte of the collectives crosses a NIC.
cluster::ClusterSpec nodes_of_one() {
  cluster::ClusterSpec c;
  c.workers = 8;
  c.workers_per_node = 1;
  c.nic_bw = 12.5e9;
  c.latency = 5e-6;
  c.gpu_memory_bw = 2e12;
  return c;
}

Result run(const workload::Workload& w, const cluster::ClusterSpec& c, const scheme::SchemeConfig& s,
           Predictor predictor) {
  scheme::validate(w, c, s);
  Options o;
  o.predictor = predictor;
  o.warmup_steps = 1;
  o.measure_steps = 2;
  return predict(w, c, s, o);
}

scheme::SchemeConfig fsdp(scheme::FsdpSharding sharding) {
  scheme::SchemeConfig s;
  s.scheme = scheme::Scheme::Fsdp;
  s.fsdp.sharding = sharding;
  return s;
}

TEST(GradReduceInFp32, DataParallelAllReducesTwiceTheBytes) {
  // DDP's only collectives are its gradient buckets' all-reduces.
  const workload::Workload w = gpt2();
  const cluster::ClusterSpec c = nodes_of_one();
  for (Predictor p : kPredictors) {
    SCOPED_TRACE(to_string(p));
    scheme::SchemeConfig bf16;
    scheme::SchemeConfig fp32 = bf16;
    fp32.grad_reduce_fp32 = true;
    const Result a = run(w, c, bf16, p), b = run(w, c, fp32, p);
    ASSERT_GT(a.bytes_sent, 0);
    EXPECT_NEAR(b.bytes_sent, 2 * a.bytes_sent, 1e-9 * b.bytes_sent);
    EXPECT_GE(b.step_time, a.step_time * (1 - 1e-12));
  }
}

TEST(GradReduceInFp32, FsdpReduceScattersTwiceTheBytesAndGathersAsBefore) {
  // Per unit and step, full sharding (resharded after the forward) gathers twice and
  // reduce-scatters once, equal bytes each in bf16: fp32 reductions make the step's bytes
  // 4 / 3 of bf16's; grad_op gathers once: 3 / 2. Also inside a parallel layout (global batch set).
  const workload::Workload w = gpt2();
  const cluster::ClusterSpec c = nodes_of_one();
  for (bool layout : {false, true}) {
    for (auto [sharding, ratio] :
         {std::pair{scheme::FsdpSharding::Full, 4.0 / 3}, std::pair{scheme::FsdpSharding::GradOp, 3.0 / 2}}) {
      for (Predictor p : kPredictors) {
        SCOPED_TRACE(
            fmt::format("{}, {}, {}", layout ? "layout" : "fsdp", scheme::name_of(sharding), to_string(p)));
        scheme::SchemeConfig bf16 = fsdp(sharding);
        if (layout) bf16.parallel.global_batch = 16;  // one micro-batch of 2 on each of 8 GPUs
        scheme::SchemeConfig fp32 = bf16;
        fp32.grad_reduce_fp32 = true;
        const Result a = run(w, c, bf16, p), b = run(w, c, fp32, p);
        ASSERT_GT(a.bytes_sent, 0);
        EXPECT_NEAR(b.bytes_sent, ratio * a.bytes_sent, 1e-9 * b.bytes_sent);
        EXPECT_GE(b.step_time, a.step_time * (1 - 1e-12));
      }
    }
  }
}

TEST(GradReduceInFp32, GradientBuffersHoldFourBytesAParameter) {
  // Megatron-LM's distributed optimizer keeps a whole fp32 gradient buffer (4 bytes a parameter)
  // beside the bf16 weights; DDP the same; full sharding a 1 / 8 shard of it, and its unit's
  // gradient before the reduce-scatter in fp32 too.
  const workload::Workload w = gpt2();
  const cluster::ClusterSpec c = nodes_of_one();
  const double parameters = w.parameter_bytes() / 2;
  for (scheme::SchemeConfig s :
       {scheme::SchemeConfig{}, fsdp(scheme::FsdpSharding::Optimizer), fsdp(scheme::FsdpSharding::Full)}) {
    SCOPED_TRACE(std::string(scheme::name_of(s.scheme)) + " " +
                 std::string(scheme::name_of(s.fsdp.sharding)));
    const double divided =
        s.scheme == scheme::Scheme::Fsdp && s.fsdp.sharding == scheme::FsdpSharding::Full ? 8 : 1;
    const Result a = run(w, c, s, Predictor::Coarse);
    s.grad_reduce_fp32 = true;
    const Result b = run(w, c, s, Predictor::Coarse);
    EXPECT_NEAR(a.memory.per_worker.gradients, 2 * parameters / divided, 1e-9 * parameters);
    EXPECT_NEAR(b.memory.per_worker.gradients, 4 * parameters / divided, 1e-9 * parameters);
    EXPECT_EQ(b.memory.per_worker.parameters, a.memory.per_worker.parameters);
    EXPECT_EQ(b.memory.per_worker.optimizer, a.memory.per_worker.optimizer);
  }
}

TEST(GradReduceInFp32, AParameterServerIsRefusedNamingTheKey) {
  scheme::SchemeConfig s;
  s.scheme = scheme::Scheme::ParameterServer;
  s.grad_reduce_fp32 = true;
  try {
    scheme::validate(gpt2(), nodes_of_one(), s);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().key, "training.grad_reduce_in_fp32");
  }
}

}  // namespace grad_reduce_fp32_test
}  // namespace
}  // namespace stepcast::predict
