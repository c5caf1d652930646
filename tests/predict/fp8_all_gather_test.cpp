// fp8 all-gathers (training.fsdp.fp8_all_gather): with fp8 training the parameter all-gathers of
// FSDP and of the distributed optimizer move each weight's fp8 copy, 1 byte, instead of its bf16
// value, 2; reduce-scatters stay bf16. Bytes on the wire by hand (rings), through every
// predictor; the gathered buffers and whole-held weights in the memory check.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/error.hpp"
#include "stepcast/predict/memory.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace fp8_all_gather_test {  // this file's own names: test files are compiled several to a unit

using scheme::FsdpSharding;
using workload::OpKind;
using workload::Precision;

/// Forward op l reads tensor l (bytes[l]); backward ops in reverse layer order produce them.
workload::Workload chain(const std::vector<double>& bytes, double forward, double backward) {
  workload::Workload w;
  w.name = "chain";
  w.precision = Precision::FP8;
  const int layers = static_cast<int>(bytes.size());
  for (int l = 0; l < layers; ++l) {
    workload::Op op{.name = fmt::format("fwd{}", l),
                    .kind = OpKind::Forward,
                    .duration = forward,
                    .layer = l,
                    .deps = {}};
    if (l > 0) op.deps = {l - 1};
    w.ops.push_back(op);
  }
  for (int l = layers - 1; l >= 0; --l) {
    workload::Op op{.name = fmt::format("bwd{}", l),
                    .kind = OpKind::Backward,
                    .duration = backward,
                    .layer = l,
                    .deps = {}};
    op.deps = {static_cast<int>(w.ops.size()) - 1};
    w.ops.push_back(op);
  }
  for (int l = 0; l < layers; ++l) {
    w.tensors.push_back({.name = fmt::format("p{}", l),
                         .bytes = bytes[static_cast<size_t>(l)],
                         .producer = 2 * layers - 1 - l,
                         .consumers = {l}});
  }
  return w;
}

scheme::SchemeConfig fsdp(FsdpSharding sharding, bool fp8_all_gather) {
  scheme::SchemeConfig s;
  s.scheme = scheme::Scheme::Fsdp;
  s.fsdp.sharding = sharding;
  s.fsdp.fp8_all_gather = fp8_all_gather;
  return s;
}

/// N single-GPU nodes on one switch.
cluster::ClusterSpec plain_switch(int workers) {
  cluster::ClusterSpec spec;
  spec.workers = workers;
  spec.workers_per_node = 1;
  spec.nic_bw = 12.5e9;
  spec.latency = 5e-6;
  return spec;
}

struct PredictorRun {
  const char* name;
  Options options;
};
PredictorRun run_of(const char* name, Predictor predictor, bool fast_paths = true) {
  Options o;
  o.predictor = predictor;
  o.warmup_steps = 1;
  o.measure_steps = 3;
  o.fast_paths = fast_paths;
  return {name, o};
}
const std::vector<PredictorRun>& runs() {
  static const std::vector<PredictorRun> all = {
      run_of("fine", Predictor::Fine),
      run_of("fine, full engine", Predictor::Fine, false),
      run_of("coarse", Predictor::Coarse),
      run_of("analytic", Predictor::Analytic),
  };
  return all;
}

TEST(Fp8AllGather, FsdpGathersHalfTheBytesAndReducesTheSame) {
  // A ring all-gather or reduce-scatter of S bytes over N workers: each worker sends (N - 1)/N S,
  // N (N - 1)/N S = (N - 1) S in all. Per step full sharding (reshard after forward) gathers
  // each unit twice, grad_op and optimizer (ZeRO-1, after the step) once; each reduce-scatters
  // it once. Gathered at 1 byte a parameter the gathers move S / 2 (the tensors are bf16).
  constexpr int kWorkers = 4;
  const std::vector<double> bytes = {4e7, 2e7, 8e7};
  const double model = 4e7 + 2e7 + 8e7;
  const workload::Workload w = chain(bytes, 2e-3, 4e-3);
  struct Variant {
    FsdpSharding sharding;
    double gathers;
  };
  for (const Variant v : {Variant{FsdpSharding::Full, 2}, Variant{FsdpSharding::GradOp, 1},
                          Variant{FsdpSharding::Optimizer, 1}}) {
    for (const PredictorRun& run : runs()) {
      SCOPED_TRACE(fmt::format("{}, {}", name_c_str(v.sharding), run.name));
      const double steps = run.options.measure_steps;
      const Result bf16 = predict(w, plain_switch(kWorkers), fsdp(v.sharding, false), run.options);
      const Result fp8 = predict(w, plain_switch(kWorkers), fsdp(v.sharding, true), run.options);
      const double ring = (kWorkers - 1) * model * steps;  // one collective of every unit
      EXPECT_NEAR(bf16.bytes_sent, (v.gathers + 1) * ring, 1e-9 * ring);
      EXPECT_NEAR(fp8.bytes_sent, (v.gathers / 2 + 1) * ring, 1e-9 * ring);
      // The gathers' bytes halve: bf16 less fp8 is half of bf16's gathers.
      EXPECT_NEAR(bf16.bytes_sent - fp8.bytes_sent, v.gathers * ring / 2, 1e-9 * ring);
      EXPECT_LE(fp8.step_time, bf16.step_time * (1 + 1e-12));
    }
  }
}

TEST(Fp8AllGather, ParallelLayoutsGatherHalfTheBytes) {
  // A decoder over t = 2, d = 2 with FSDP or the distributed optimizer: each gather of a rank's
  // share of its stage's parameters, P / t bytes, over its data group of d ranks sends
  // (d - 1)/d P/t from each of the N ranks; in fp8 with the key half of that. The
  // tensor-parallel collectives and the reduce-scatters are the same both ways.
  zoo::TransformerShape shape{.layers = 2,
                              .hidden = 1024,
                              .ffn_hidden = 2816,
                              .heads = 16,
                              .kv_heads = 8,
                              .vocab = 32000,
                              .seq_len = 1024};
  const zoo::ModelSpec model = zoo::make_transformer("small", "", shape);
  const workload::Workload w =
      zoo::to_workload(model, {.batch_per_worker = 1, .step_time = 0.05, .precision = Precision::FP8});
  cluster::ClusterSpec spec;
  spec.workers = 4;
  spec.workers_per_node = 4;
  spec.nic_bw = 50e9;
  spec.latency = 5e-6;
  spec.intra_node_bw = 450e9;
  spec.intra_node_latency = 2e-6;
  const int t = 2, d = 2;
  // Per step: the distributed optimizer gathers every parameter once (after the step), full
  // sharding (one micro-batch) before the forward and again before the backward.
  struct Variant {
    FsdpSharding sharding;
    double gathers;
  };
  for (const Variant v : {Variant{FsdpSharding::Optimizer, 1}, Variant{FsdpSharding::Full, 2}}) {
    for (const PredictorRun& run : runs()) {
      SCOPED_TRACE(fmt::format("{}, {}", name_c_str(v.sharding), run.name));
      scheme::SchemeConfig s = fsdp(v.sharding, false);
      s.parallel.tensor = t;
      s.parallel.global_batch = d;
      const Result bf16 = predict(w, spec, s, run.options);
      s.fsdp.fp8_all_gather = true;
      const Result fp8 = predict(w, spec, s, run.options);
      const double gathers =
          v.gathers * spec.workers * (d - 1.0) / d * w.parameter_bytes() / t * run.options.measure_steps;
      EXPECT_NEAR(bf16.bytes_sent - fp8.bytes_sent, gathers / 2, 1e-9 * gathers);
      EXPECT_LE(fp8.step_time, bf16.step_time * (1 + 1e-12));
    }
  }
}

TEST(Fp8AllGather, GatheredBuffersAndWholeWeightsAreTheFp8Copies) {
  const double unit = 1e8, parameters = 1e9;
  scheme::SchemeConfig full = fsdp(FsdpSharding::Full, false);
  // Full, prefetch 1: two units gathered (the one computing and the next) and one unit's
  // gradient: 2 x 2 + 2 bytes a parameter of the unit in bf16, 2 x 1 + 2 with fp8 all-gathers.
  EXPECT_DOUBLE_EQ(gathered_buffer_bytes(unit, Precision::FP8, full, 8, 8), 6 * unit);
  full.fsdp.fp8_all_gather = true;
  EXPECT_DOUBLE_EQ(gathered_buffer_bytes(unit, Precision::FP8, full, 8, 8), 4 * unit);
  // Its model states are sharded: the key changes nothing there.
  EXPECT_EQ(model_state_memory(parameters, Precision::FP8, full, 8, 8),
            model_state_memory(parameters, Precision::FP8, fsdp(FsdpSharding::Full, false), 8, 8));
  // grad_op holds the parameters whole: bf16 and fp8 copies, 3 bytes each; with fp8 all-gathers
  // the whole copy is the fp8 one and the bf16 weights stay sharded, 2/8 + 1.
  for (FsdpSharding sharding : {FsdpSharding::GradOp, FsdpSharding::Optimizer}) {
    EXPECT_DOUBLE_EQ(model_state_memory(parameters, Precision::FP8, fsdp(sharding, false), 8, 8).parameters,
                     3 * parameters);
    EXPECT_DOUBLE_EQ(model_state_memory(parameters, Precision::FP8, fsdp(sharding, true), 8, 8).parameters,
                     (2.0 / 8 + 1) * parameters);
  }
  // The gradient buffer of grad_op stays bf16.
  EXPECT_DOUBLE_EQ(gathered_buffer_bytes(unit, Precision::FP8, fsdp(FsdpSharding::GradOp, true), 8, 8),
                   2 * unit);
}

TEST(Fp8AllGather, OnlyFp8TrainingHasFp8CopiesToGather) {
  workload::Workload w = chain({1e7, 1e7}, 1e-3, 2e-3);
  w.precision = Precision::BF16;
  try {
    (void)predict(w, plain_switch(2), fsdp(FsdpSharding::Full, true), runs().front().options);
    FAIL() << "fp8 all-gathers in bf16";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().key, "training.fsdp.fp8_all_gather");
    EXPECT_NE(e.message().find("bf16"), std::string::npos) << e.what();
  }
}

}  // namespace fp8_all_gather_test
}  // namespace
}  // namespace stepcast::predict
