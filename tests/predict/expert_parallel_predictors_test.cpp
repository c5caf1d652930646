// Expert parallelism in the three predictors: the all-to-alls' bytes against their closed form in
// every predictor, coarse near fine and analytic at or below it on seeded mixtures of experts
// (balanced and skewed), the step monotone in the imbalance in every predictor, and the memory of
// a rank holding experts / e of each MoE layer.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

#include "moe_fixtures.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/zoo/activation_memory.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace expert_parallel_predictors_test {  // this file's own names: test files are compiled several to a
                                             // unit

constexpr Predictor kPredictors[] = {Predictor::Fine, Predictor::Coarse, Predictor::Analytic};

/// A small mixture of experts (Mixtral's layout, 8 experts, top-2) at 400 TFLOP/s per GPU.
workload::Workload moe(double imbalance = 1, int blocks = 4) {
  return testing::small_moe({.hidden = 2048, .ffn_hidden = 4096, .heads = 16, .kv_heads = 8, .vocab = 32000,
                             .seq_len = 2048},
                            8, blocks, imbalance);
}

cluster::ClusterSpec nodes(int workers, int per_node) { return testing::nvlink_nodes(workers, per_node); }

Result run(const workload::Workload& w, const cluster::ClusterSpec& c, const scheme::SchemeConfig& s,
           Predictor predictor) {
  Options o;
  o.predictor = predictor;
  o.warmup_steps = 1;
  o.measure_steps = 2;
  return predict(w, c, s, o);
}

bool is_expert(const workload::Tensor& t) { return t.name.find(".experts.") != std::string::npos; }

TEST(ExpertParallelPredictors, BalancedAllToAllBytesAreTheClosedFormInEveryPredictor) {
  // 4 GPUs on nodes of their own, e = d = 4: one expert group, no expert-data reduction (each
  // expert on one rank). Per rank and step: 4 all-to-alls per MoE layer of b s h top_k bf16
  // bytes, each sending (e - 1)/e of it; and the dense gradients' ring all-reduce, 2 (d - 1)/d of
  // their bytes.
  const workload::Workload w = moe();
  const workload::TransformerShape& shape = *w.facts.transformer;
  scheme::SchemeConfig s;
  s.parallel.expert = 4;
  const cluster::ClusterSpec c = nodes(4, 1);
  const double S = 1.0 * static_cast<double>(shape.seq_len) * static_cast<double>(shape.hidden) * 2 * 2;
  double dense = 0;
  for (const workload::Tensor& t : w.tensors) {
    if (!is_expert(t)) dense += t.bytes;
  }
  const double per_rank = static_cast<double>(shape.layers) * 4 * S * 3.0 / 4 + 2 * 3.0 / 4 * dense;
  for (Predictor p : kPredictors) {
    const Result r = run(w, c, s, p);
    EXPECT_NEAR(r.bytes_sent / 2, 4 * per_rank, 1e-9 * 4 * per_rank) << to_string(p);
  }
}

TEST(ExpertParallelPredictors, CoarseNearFineAndAnalyticBelowOnSeededLayouts) {
  // Coarse within 5% of fine, the bar the parallel layouts hold (composed_predictors_test.cpp);
  // analytic, a bound, at or below fine.
  double worst = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](std::vector<int> v) {
      return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
    };
    const int t = pick({1, 2}), p = pick({1, 2}), d = pick({4, 8}), e = pick({2, 4, 8});
    const double imbalance = std::vector<double>{1.0, 1.3, 2.0}[static_cast<size_t>(pick({0, 1, 2}))];
    const workload::Workload w = moe(imbalance, 4);
    scheme::SchemeConfig s;
    s.parallel.tensor = t;
    s.parallel.pipeline = p;
    s.parallel.expert = std::min(e, d);
    s.parallel.global_batch = static_cast<int64_t>(d) * 2 * p;
    if (pick({0, 1}) == 1) {
      s.scheme = scheme::Scheme::Fsdp;
      s.fsdp.sharding = static_cast<scheme::FsdpSharding>(pick({0, 1, 2}));  // full, grad_op, optimizer
    }
    const cluster::ClusterSpec c = nodes(t * p * d, 8);
    const std::string label =
        fmt::format("seed {}: {} on {} GPUs, imbalance {}", seed,
                    scheme::RankLayout::describe(s.parallel, c.workers), c.workers, imbalance);
    scheme::validate(w, c, s);
    const Result fine = run(w, c, s, Predictor::Fine), coarse = run(w, c, s, Predictor::Coarse),
                 analytic = run(w, c, s, Predictor::Analytic);
    const double error = coarse.step_time / fine.step_time - 1;
    worst = std::max(worst, std::fabs(error));
    EXPECT_LE(std::fabs(error), 0.05)
        << label << ": fine " << fine.step_time << " coarse " << coarse.step_time;
    if (std::getenv("SHOW_BREAKDOWN") != nullptr) {
      for (const Result* x : {&fine, &coarse}) {
        fmt::print("  {} {}: compute {:.4f} tensor {:.4f} expert {:.4f} data {:.4f} wait {:.4f}\n", label,
                   to_string(x->predictor), x->breakdown.compute, x->breakdown.tensor, x->breakdown.expert,
                   x->breakdown.data, x->breakdown.wait);
      }
    }
    EXPECT_LE(analytic.step_time, fine.step_time * (1 + 1e-9)) << label;
    EXPECT_GT(fine.breakdown.expert, 0) << label;
  }
  fmt::print("worst coarse vs fine: {:.2f}%\n", 100 * worst);
}

TEST(ExpertParallelPredictors, HybridShardingCoarseNearFineAndAnalyticBelowOnSeededLayouts) {
  // Hybrid sharding with experts: the experts shard within a shard group and all-reduce over the
  // replicas as the dense shards do. Coarse within 5% of fine with p = 1, as hybrid sharding's
  // layouts (tests/predict/hybrid_sharding_predictors_test.cpp); analytic at or below fine.
  // Regression pin, not a target: with p > 1 on nodes of 4 GPUs (seed 2, tp2 pp2 ep4 dp8) coarse
  // is 13.1% fast (FSDP full on the same layout 10.5%, the distributed optimizer 1.1%): the
  // all-to-alls, FSDP's per-micro-batch collectives and the pipeline's messages share the NICs,
  // and coarse does not slow one by the others (docs/status.md, issue 27). Measured 2026-12-07;
  // the 15% bound notices a change that makes it worse.
  double worst = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](std::vector<int> v) {
      return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
    };
    const int t = pick({1, 2}), p = pick({1, 2}), d = pick({4, 8}), e = pick({2, 4});
    const int shard = pick(d == 4 ? std::vector<int>{e, 4} : std::vector<int>{e, 4, 8});
    const double imbalance = pick({0, 1}) == 1 ? 1.0 : 1.5;
    const workload::Workload w = moe(imbalance, 4);
    scheme::SchemeConfig s;
    s.parallel.tensor = t;
    s.parallel.pipeline = p;
    s.parallel.expert = e;
    s.parallel.global_batch = static_cast<int64_t>(d) * 2 * p;
    s.scheme = scheme::Scheme::Fsdp;
    s.fsdp.sharding = scheme::FsdpSharding::Hybrid;
    s.fsdp.shard_group = shard;
    const cluster::ClusterSpec c = nodes(t * p * d, pick({4, 8}));
    const std::string label =
        fmt::format("seed {}: {} on {} GPUs, imbalance {}", seed,
                    scheme::RankLayout::describe(s.parallel, c.workers, shard), c.workers, imbalance);
    scheme::validate(w, c, s);
    const Result fine = run(w, c, s, Predictor::Fine), coarse = run(w, c, s, Predictor::Coarse),
                 analytic = run(w, c, s, Predictor::Analytic);
    const double error = coarse.step_time / fine.step_time - 1;
    worst = std::max(worst, std::fabs(error));
    EXPECT_LE(std::fabs(error), p > 1 ? 0.15 : 0.05)
        << label << ": fine " << fine.step_time << " coarse " << coarse.step_time;
    EXPECT_LE(analytic.step_time, fine.step_time * (1 + 1e-9)) << label;
    EXPECT_EQ(fine.layout, coarse.layout);
    fmt::print("{}: fine {:.4f} s, coarse {:+.2f}%\n", label, fine.step_time, 100 * error);
    if (std::getenv("SHOW_BREAKDOWN") != nullptr) {
      for (const Result* x : {&fine, &coarse}) {
        fmt::print(
            "  {}: compute {:.4f} tensor {:.4f} pipeline {:.4f} expert {:.4f} data {:.4f} wait {:.4f}\n",
            to_string(x->predictor), x->breakdown.compute, x->breakdown.tensor, x->breakdown.pipeline,
            x->breakdown.expert, x->breakdown.data, x->breakdown.wait);
      }
    }
  }
  fmt::print("worst coarse vs fine: {:.2f}%\n", 100 * worst);
}

TEST(ExpertParallelPredictors, StepGrowsWithTheImbalanceInEveryPredictor) {
  scheme::SchemeConfig s;
  s.parallel.expert = 8;
  s.parallel.global_batch = 16;
  const cluster::ClusterSpec c = nodes(16, 8);
  for (Predictor p : kPredictors) {
    double previous = 0;
    for (double r : {1.0, 1.2, 1.5, 2.0, 4.0}) {
      const double step = run(moe(r), c, s, p).step_time;
      EXPECT_GT(step, previous) << to_string(p) << " imbalance " << r;
      previous = step;
    }
  }
}

TEST(ExpertParallelPredictors, TheBottleneckNamesTheBusiestExpertGpuAndTheAllToAll) {
  scheme::SchemeConfig s;
  s.parallel.expert = 8;
  s.parallel.global_batch = 16;
  cluster::ClusterSpec c = nodes(16, 1);  // expert groups across nodes: the all-to-alls on the NICs
  c.nic_bw = 2e9;
  for (Predictor p : kPredictors) {
    const Result balanced = run(moe(1.0), c, s, p);
    EXPECT_EQ(balanced.bottleneck.find("busiest expert GPU"), std::string::npos) << balanced.bottleneck;
    if (p != Predictor::Analytic) {  // a bound: it splits no exposed time by dimension
      EXPECT_NE(balanced.bottleneck.find("expert all-to-all"), std::string::npos)
          << to_string(p) << ": " << balanced.bottleneck;
    }
    const Result skewed = run(moe(2.0), c, s, p);
    EXPECT_NE(skewed.bottleneck.find("the busiest expert GPU receives 2.00x the mean tokens"), std::string::npos)
        << skewed.bottleneck;
  }
}

TEST(ExpertParallelPredictors, EachRankHoldsItsShareOfTheExperts) {
  // Weights: the dense ones whole, experts / e of each MoE layer's experts (t = p = 1). Gradients
  // alike; with the distributed optimizer the dense states over d and the experts' over d / e.
  const workload::Workload w = moe();
  double dense = 0, experts = 0;
  for (const workload::Tensor& t : w.tensors) (is_expert(t) ? experts : dense) += t.bytes / 2;
  const cluster::ClusterSpec c = nodes(16, 8);
  for (int e : {1, 2, 8}) {
    scheme::SchemeConfig s;
    s.parallel.expert = e;
    s.parallel.global_batch = 16;
    s.scheme = scheme::Scheme::Fsdp;
    s.fsdp.sharding = scheme::FsdpSharding::Optimizer;
    const Result r = run(w, c, s, Predictor::Coarse);
    const double held = dense + experts / e;
    EXPECT_DOUBLE_EQ(r.memory.per_worker.parameters, 2 * held) << "e " << e;
    EXPECT_DOUBLE_EQ(r.memory.per_worker.gradients, 2 * held) << "e " << e;
    // Adam in bf16: 12 bytes per parameter of fp32 master copy and moments, sharded.
    EXPECT_NEAR(r.memory.per_worker.optimizer, 12 * (dense / 16 + experts / e / (16.0 / e)),
                1e-9 * r.memory.per_worker.optimizer)
        << "e " << e;
  }
}

TEST(ExpertParallelPredictors, DenseFirstBlocksHoldADenseBlocksActivations) {
  // DeepSeek's dense first blocks: a stage holding them keeps a dense block's activations for
  // each, not a MoE block's. Making two of four blocks dense takes two MoE blocks' activations
  // less two dense ones' off what one micro-batch in flight keeps (one stage, so the head's and
  // the loss's terms are the same in both), balanced and skewed; the per-kind bytes from the zoo.
  const cluster::ClusterSpec c = nodes(8, 8);
  scheme::SchemeConfig s;
  s.parallel.expert = 2;
  s.parallel.global_batch = 8;
  for (double imbalance : {1.0, 1.6}) {
    auto activations = [&](int64_t dense_first) {
      const testing::MoeShape shape{.hidden = 2048,
                                    .ffn_hidden = 4096,
                                    .heads = 16,
                                    .kv_heads = 8,
                                    .vocab = 32000,
                                    .seq_len = 2048,
                                    .dense_layers_first = dense_first};
      workload::Workload w = testing::small_moe(shape, 8, 4, imbalance);
      scheme::validate(w, c, s);
      return std::pair{run(w, c, s, Predictor::Coarse).memory.per_worker.activations, w};
    };
    // (Not structured bindings: the lambda below captures them, which clang before 16 refuses.)
    const std::pair<double, workload::Workload> all = activations(0), dense = activations(2);
    const double all_moe = all.first, two_dense = dense.first;
    const workload::Workload& moe_workload = all.second;
    const workload::Workload& dense_workload = dense.second;
    const workload::TransformerShape& shape = *dense_workload.facts.transformer;
    zoo::ActivationSplit split;
    split.expert_load = scheme::busiest_expert_gpu_by_block(moe_workload, s.parallel).front();
    const zoo::ElementBytes element = zoo::activation_element_bytes(dense_workload.precision);
    auto kind = [&](bool moe_block) {
      return zoo::block_activation_bytes_of_kind(shape, 1, dense_workload.facts.checkpointing, element,
                                                 dense_workload.facts.flash_attention, split, moe_block);
    };
    SCOPED_TRACE(fmt::format("imbalance {}", imbalance));
    EXPECT_GT(kind(true), kind(false));
    EXPECT_NEAR(all_moe - two_dense, 2 * (kind(true) - kind(false)), 1e-9 * all_moe);
  }
}

TEST(ExpertParallelPredictors, ACapacityFactorPadsTheExpertBuffersDroplessKeepsTheWorstCase) {
  // A capacity factor c pads every expert's buffers to c x the mean tokens (whatever the routing:
  // tokens beyond it dropped, short ones padded); dropless, they hold the routing's busiest GPU.
  // One stage, one micro-batch in flight, 4 MoE blocks: the activations differ from balanced
  // dropless by 4 x (load - 1) x a MoE block's bytes per unit of load, the zoo's per-kind bytes.
  const cluster::ClusterSpec c = nodes(8, 8);
  scheme::SchemeConfig s;
  s.parallel.expert = 2;
  s.parallel.global_batch = 8;
  auto activations = [&](double imbalance, double capacity) {
    workload::Workload w = moe(imbalance);
    w.facts.moe_capacity_factor = capacity;
    scheme::validate(w, c, s);
    return run(w, c, s, Predictor::Coarse).memory.per_worker.activations;
  };
  const workload::Workload w = moe();
  const zoo::ElementBytes element = zoo::activation_element_bytes(w.precision);
  auto moe_block = [&](double load) {
    zoo::ActivationSplit split;
    split.expert_load = load;
    return zoo::block_activation_bytes_of_kind(*w.facts.transformer, 1, w.facts.checkpointing, element,
                                               w.facts.flash_attention, split, true);
  };
  const double per_load = moe_block(2) - moe_block(1);
  ASSERT_GT(per_load, 0);
  const double balanced = activations(1.0, 0);
  EXPECT_NEAR(activations(1.0, 1.5) - balanced, 4 * 0.5 * per_load, 1e-9 * balanced);
  // Skewed: capped at c = 1.25 below the dropless busiest GPU's load, which sets dropless memory.
  const double skewed = activations(3.0, 0), capped = activations(3.0, 1.25);
  workload::Workload hot = moe(3.0);
  const double g = scheme::busiest_expert_gpu_by_block(hot, s.parallel).front();
  ASSERT_GT(g, 1.25);
  EXPECT_NEAR(skewed - balanced, 4 * (g - 1) * per_load, 1e-9 * balanced);
  EXPECT_NEAR(capped - balanced, 4 * 0.25 * per_load, 1e-9 * balanced);
}

TEST(ExpertParallelPredictors, HybridShardingDividesTheExpertsOverTheirPartOfAShardGroup) {
  // Hybrid sharding on 16 GPUs in shard groups of 8 (t = p = 1): the dense weights, gradients and
  // states over 8, the rank's experts / e over the 8 / e ranks of its shard group holding them.
  const workload::Workload w = moe();
  double dense = 0, experts = 0;
  for (const workload::Tensor& t : w.tensors) (is_expert(t) ? experts : dense) += t.bytes / 2;
  const cluster::ClusterSpec c = nodes(16, 8);
  for (int e : {2, 8}) {
    scheme::SchemeConfig s;
    s.parallel.expert = e;
    s.parallel.global_batch = 16;
    s.scheme = scheme::Scheme::Fsdp;
    s.fsdp.sharding = scheme::FsdpSharding::Hybrid;
    scheme::validate(w, c, s);  // shard group: a node's 8 ranks
    const Result r = run(w, c, s, Predictor::Coarse);
    EXPECT_EQ(r.layout, fmt::format("tp1 cp1 pp1 ep{} dp16 (hsdp 2x8)", e));
    const double held = dense / 8 + experts / e / (8.0 / e);
    EXPECT_NEAR(r.memory.per_worker.parameters, 2 * held, 1e-9 * r.memory.per_worker.parameters) << "e " << e;
    EXPECT_NEAR(r.memory.per_worker.gradients, 2 * held, 1e-9 * r.memory.per_worker.gradients) << "e " << e;
    EXPECT_NEAR(r.memory.per_worker.optimizer, 12 * held, 1e-9 * r.memory.per_worker.optimizer) << "e " << e;
  }
}

TEST(ExpertParallelPredictors, FullShardingDividesTheExpertsOverTheirExpertDataGroup) {
  // FSDP full (resharded after the forward) on 16 GPUs, t = p = 1: weights, gradients and states
  // of the dense tensors over d = 16, of the rank's experts / e over t c d / e = 16 / e; the
  // gathered buffers are the largest unit's share on the rank (prefetch 1: two units' weights and
  // one's gradient), here a block's dense tensors and experts / e of its experts.
  const workload::Workload w = moe();
  double dense = 0, experts = 0;
  for (const workload::Tensor& t : w.tensors) (is_expert(t) ? experts : dense) += t.bytes / 2;
  const cluster::ClusterSpec c = nodes(16, 8);
  for (int e : {2, 8}) {
    scheme::SchemeConfig s;
    s.parallel.expert = e;
    s.parallel.global_batch = 16;
    s.scheme = scheme::Scheme::Fsdp;
    s.fsdp.sharding = scheme::FsdpSharding::Full;
    s.fsdp.prefetch = 1;
    const Result r = run(w, c, s, Predictor::Coarse);
    const double held = dense / 16 + experts / e / (16.0 / e);
    EXPECT_NEAR(r.memory.per_worker.parameters, 2 * held, 1e-9 * r.memory.per_worker.parameters) << "e " << e;
    EXPECT_NEAR(r.memory.per_worker.gradients, 2 * held, 1e-9 * r.memory.per_worker.gradients) << "e " << e;
    EXPECT_NEAR(r.memory.per_worker.optimizer, 12 * held, 1e-9 * r.memory.per_worker.optimizer) << "e " << e;
    // The largest unit on a rank: its dense tensors and experts / e of its experts.
    double unit = 0;
    for (const scheme::FsdpUnit& u : scheme::fsdp_units(w, s.fsdp.unit_blocks)) {
      double on_rank = 0;
      for (int t : u.tensors) {
        const workload::Tensor& tensor = w.tensors[static_cast<size_t>(t)];
        on_rank += is_expert(tensor) ? tensor.bytes / e : tensor.bytes;
      }
      unit = std::max(unit, on_rank);
    }
    EXPECT_NEAR(r.memory.per_worker.buffers, 3 * unit, 1e-9 * unit) << "e " << e;
  }
}

TEST(ExpertParallelPredictors,
     ExpertTensorRanksShareEachExpertsWeightsAndTheOptimizerStatesStayPerStageRank) {
  // t 2, d 8 on 16 GPUs: the dense weights over t; each rank's 8 / e experts of each MoE layer
  // split over ETP instead. The distributed optimizer shards the experts' states over the t c d /
  // (e ETP) ranks holding the same shards: all experts / (t c d) per rank whatever e and ETP.
  const workload::Workload w = moe();
  double dense = 0, experts = 0;
  for (const workload::Tensor& t : w.tensors) (is_expert(t) ? experts : dense) += t.bytes / 2;
  const cluster::ClusterSpec c = nodes(16, 8);
  for (auto [e, etp] :
       {std::pair{2, 1}, std::pair{2, 2}, std::pair{4, 1}, std::pair{8, 2}, std::pair{4, 4}}) {
    scheme::SchemeConfig s;
    s.parallel.tensor = 2;
    s.parallel.expert = e;
    s.parallel.expert_tensor = etp;
    s.parallel.global_batch = 16;
    s.scheme = scheme::Scheme::Fsdp;
    s.fsdp.sharding = scheme::FsdpSharding::Optimizer;
    scheme::validate(w, c, s);
    const Result r = run(w, c, s, Predictor::Coarse);
    const double held = dense / 2 + experts / e / etp;
    EXPECT_DOUBLE_EQ(r.memory.per_worker.parameters, 2 * held) << "e " << e << " etp " << etp;
    EXPECT_NEAR(r.memory.per_worker.optimizer, 12 * (dense / 2 / 8 + experts / 16),
                1e-9 * r.memory.per_worker.optimizer)
        << "e " << e << " etp " << etp;
  }
}

TEST(ExpertParallelPredictors, CoarseNearFineWithExpertTensorParallelism) {
  double worst = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](std::vector<int> v) {
      return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
    };
    const int t = pick({1, 2, 4}), p = pick({1, 2}), d = pick({2, 4}), etp = pick({1, 2, 4}),
              e = pick({2, 4});
    if ((t * d) % (e * etp) != 0) continue;
    const double imbalance = pick({0, 1}) == 1 ? 1.0 : 1.5;
    const workload::Workload w = moe(imbalance, 4);
    scheme::SchemeConfig s;
    s.parallel.tensor = t;
    s.parallel.pipeline = p;
    s.parallel.expert = e;
    s.parallel.expert_tensor = etp;
    s.parallel.global_batch = static_cast<int64_t>(d) * 2 * p;
    const cluster::ClusterSpec c = nodes(t * p * d, 8);
    const std::string label =
        fmt::format("seed {}: {} on {} GPUs, imbalance {}", seed,
                    scheme::RankLayout::describe(s.parallel, c.workers), c.workers, imbalance);
    scheme::validate(w, c, s);
    const Result fine = run(w, c, s, Predictor::Fine), coarse = run(w, c, s, Predictor::Coarse),
                 analytic = run(w, c, s, Predictor::Analytic);
    worst = std::max(worst, std::fabs(coarse.step_time / fine.step_time - 1));
    EXPECT_NEAR(coarse.step_time, fine.step_time, 0.05 * fine.step_time) << label;
    EXPECT_LE(analytic.step_time, fine.step_time * (1 + 1e-9)) << label;
  }
  fmt::print("worst coarse vs fine with ETP: {:.2f}%\n", 100 * worst);
}

}  // namespace expert_parallel_predictors_test
}  // namespace
}  // namespace stepcast::predict
