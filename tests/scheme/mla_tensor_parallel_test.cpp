// Multi-head latent attention under tensor parallelism: Megatron-LM holds the down projections
// to the query and key-value latents and their norms whole on every tensor rank (TELinear
// "duplicated"). So a rank holds them whole, not split over t, in the stage programs, the memory
// check and FSDP's units; and with sequence parallelism, where each rank computes them on its own
// tokens, their gradients are all-reduced over the tensor group once a step (none without it).
#include <gtest/gtest.h>

#include "scheme/stage_programs.hpp"
#include "stepcast/detail/scheme/composed_costs.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::scheme {
namespace {
namespace mla_tensor_parallel_test {  // this file's own names: test files are compiled several to a unit

/// A small decoder with DeepSeek's latent attention (a query latent of 256, a key-value latent of
/// 128 and a rotary key of 32, 8 heads) and dense MLPs, in bf16.
workload::Workload mla_decoder() {
  zoo::TransformerShape shape{.layers = 2,
                              .hidden = 512,
                              .ffn_hidden = 1024,
                              .heads = 8,
                              .kv_heads = 8,
                              .vocab = 1000,
                              .seq_len = 256};
  shape.q_lora_rank = 256;
  shape.kv_lora_rank = 128;
  shape.qk_nope_head_dim = 32;
  shape.qk_rope_head_dim = 32;
  shape.v_head_dim = 32;
  return zoo::to_workload(zoo::make_transformer("mla", "latent attention", shape),
                          {.batch_per_worker = 1, .step_time = 0.05, .precision = workload::Precision::BF16});
}

cluster::ClusterSpec one_node(int workers) {
  cluster::ClusterSpec c;
  c.workers = workers;
  c.workers_per_node = workers;
  c.nic_bw = 50e9;
  c.intra_node_bw = 450e9;
  return c;
}

/// Elements of the decoder: all, and those held whole on every tensor rank.
std::pair<double, double> parameters(const workload::Workload& w) {
  double all = 0, whole = 0;
  for (const workload::Tensor& t : w.tensors) {
    all += t.bytes / 2;
    if (whole_on_tensor_ranks(t.name)) whole += t.bytes / 2;
  }
  return {all, whole};
}

TEST(MlaTensorParallel, TheLatentDownProjectionsAreWholeOnEveryTensorRank) {
  // Per block: q_a_proj 512 x 256, q_a_layernorm 256, kv_a_proj_with_mqa 512 x (128 + 32),
  // kv_a_layernorm 128.
  const workload::Workload w = mla_decoder();
  const auto [all, whole] = parameters(w);
  EXPECT_EQ(whole, 2.0 * (512 * 256 + 256 + 512 * 160 + 128));
  for (int t : {1, 2, 4}) {
    SchemeConfig s;
    s.parallel.tensor = t;
    s.parallel.global_batch = 8 / t;
    const cluster::ClusterSpec c = one_node(8);
    validate(w, c, s);
    // The stage programs' tensors and the memory check: (all - whole) / t + whole.
    const double expected = (all - whole) / t + whole;
    EXPECT_DOUBLE_EQ(build_stage_programs(w, c, s, RankLayout(s.parallel, 8)).front().parameters, expected)
        << t;
    EXPECT_DOUBLE_EQ(stage_footprints(w, s, 8).front().parameters, expected) << t;
    predict::Options o;
    o.predictor = predict::Predictor::Coarse;
    EXPECT_NEAR(predict::predict(w, c, s, o).memory.per_worker.parameters, 2 * expected, 1e-9 * expected)
        << t;
    // FSDP's units on a rank hold the same.
    double units = 0;
    for (const FsdpUnit& u : fsdp_units(w, 1)) units += unit_bytes_on_rank(w, u, s.parallel).first;
    EXPECT_DOUBLE_EQ(units, 2 * expected) << t;
  }
}

TEST(MlaTensorParallel, SequenceParallelismAllReducesTheirGradientsOverTheTensorGroupOnceAStep) {
  const workload::Workload w = mla_decoder();
  const double whole_bytes = 2 * parameters(w).second;
  for (bool sequence : {true, false}) {
    SchemeConfig s;
    s.parallel.tensor = 2;
    s.parallel.sequence = sequence;
    s.parallel.global_batch = 4 * 3;  // d 4, three micro-batches
    const cluster::ClusterSpec c = one_node(8);
    validate(w, c, s);
    const StageProgram program = build_stage_programs(w, c, s, RankLayout(s.parallel, 8)).front();
    int count = 0;
    double bytes = 0;
    for (size_t op = 0; op < program.ops.ops.size(); ++op) {
      if (!program.is_comm(static_cast<int>(op))) continue;
      const CommOp& comm = program.comms[static_cast<size_t>(program.comm_of_op[op])];
      if (comm.dimension == ParallelDimension::Tensor && comm.kind == CommKind::AllReduce &&
          program.ops.ops[op].kind == workload::OpKind::Other) {
        ++count;
        bytes += comm.bytes;
      }
    }
    EXPECT_EQ(count, sequence ? 1 : 0) << sequence;
    EXPECT_DOUBLE_EQ(bytes, sequence ? whole_bytes : 0.0) << sequence;
  }
  // In fp32 when the gradients are reduced in fp32.
  SchemeConfig s;
  s.parallel.tensor = 2;
  s.parallel.global_batch = 4;
  s.grad_reduce_fp32 = true;
  const StageProgram program = build_stage_programs(w, one_node(8), s, RankLayout(s.parallel, 8)).front();
  double bytes = 0;
  for (size_t op = 0; op < program.ops.ops.size(); ++op) {
    if (!program.is_comm(static_cast<int>(op))) continue;
    const CommOp& comm = program.comms[static_cast<size_t>(program.comm_of_op[op])];
    if (comm.dimension == ParallelDimension::Tensor && program.ops.ops[op].kind == workload::OpKind::Other) {
      bytes += comm.bytes;
    }
  }
  EXPECT_DOUBLE_EQ(bytes, 2 * whole_bytes);
}

}  // namespace mla_tensor_parallel_test
}  // namespace
}  // namespace stepcast::scheme
