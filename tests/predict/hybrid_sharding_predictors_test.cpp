// Hybrid sharding inside parallel layouts in every predictor: coarse within the composed bounds
// of fine (5%, 10% where FSDP gathers inside a pipeline), for full sharding of the same layouts
// too, and analytic never above fine on seeded layouts of 8-GPU nodes; a shard group of the whole data x
// context group equal to full sharding in coarse and analytic too; the model states per GPU divided by the
// shard group, not by d x c.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

#include "layout_fixtures.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace hybrid_sharding_predictors_test {  // this file's own names: test files are compiled several to a
                                             // unit

using Layout = testing::SeededLayout;

/// A seeded layout of a decoder under hybrid sharding on nodes of 8 GPUs with NVLink inside and
/// 400 Gb/s NICs; the shard group one of those dividing the data x context group (0: a node's).
Layout random_layout(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::vector<int> v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  Layout l;
  const int t = pick({1, 2, 4, 8}), c = pick({1, 1, 2}), p = pick({1, 2, 4}), d = pick({2, 4, 8});
  const int blocks = p * pick({1, 2, 3});
  const auto checkpointing = static_cast<workload::ActivationCheckpointing>(pick({0, 1, 2}));
  l.workload = testing::llama_like(blocks, checkpointing);
  scheme::SchemeConfig& s = l.scheme;
  s.scheme = scheme::Scheme::Fsdp;
  s.fsdp.sharding = scheme::FsdpSharding::Hybrid;
  std::vector<int> shards{0};
  for (int g = 1; g <= d * c; ++g) {
    if (d * c % g == 0) shards.push_back(g);
  }
  s.fsdp.shard_group = pick(shards);
  s.parallel.tensor = t;
  s.parallel.context = c;
  s.parallel.pipeline = p;
  s.parallel.sequence = pick({0, 1}) == 1;
  s.pipeline.schedule = static_cast<scheme::PipelineSchedule>(pick({0, 1}));
  s.parallel.global_batch = static_cast<int64_t>(d) * p * pick({1, 2, 4});
  l.cluster = testing::nvlink_nodes(t * c * p * d, 8);
  l.label = fmt::format("seed {}: {} on {} GPUs, shard group {} ({} ranks), ckpt {}", seed,
                        scheme::RankLayout::describe(s.parallel, l.cluster.workers), l.cluster.workers,
                        s.fsdp.shard_group,
                        scheme::hybrid_shard_ranks(s, l.cluster.workers, l.cluster.workers_per_node),
                        static_cast<int>(checkpointing));
  return l;
}

/// The layout's shard group when it divides the data x context group (validate() refuses the
/// others, as the default of a node's ranks can be).
bool divides(const Layout& l) { return !scheme::layout_problem(l.workload, l.cluster, l.scheme).has_value(); }

Result run(const Layout& l, Predictor predictor) { return testing::predict_layout(l, predictor); }

TEST(HybridShardingPredictors, CoarseWithinTheComposedBoundsOfFineAndAnalyticBelow) {
  int checked = 0;
  double worst = 0;
  for (uint64_t seed = 1; checked < 16 && seed <= 60; ++seed) {
    const Layout l = random_layout(seed);
    if (!divides(l)) continue;
    ++checked;
    const Result fine = run(l, Predictor::Fine), coarse = run(l, Predictor::Coarse),
                 analytic = run(l, Predictor::Analytic);
    const double error = testing::print_comparison(l.label, fine, coarse, analytic);
    worst = std::max(worst, std::fabs(error));
    // The bounds of ComposedPredictors.CoarseWithinFivePercentOfFineOnRandomLayouts, for hybrid
    // sharding and for full sharding of the same layout. Until coarse ran each pass's gathers as
    // the chain they are (composed_costs.cpp, run_pass) it missed full sharding of seeds 5, 6,
    // 13, 14, 15 and 16 by -9% to -19% (seed 13, tp4 pp1 dp4: -19.2%), and the test allowed
    // hybrid 3 points beyond that miss; measured since (2026-12-07): full sharding -5.4% to
    // +9.5% (+9.5%: seed 8, pp4; within +-4.4% at p = 1), hybrid -8.9% to +4.2% (-8.7%, -8.9%:
    // seeds 2 and 15, p > 1, where the replicas' all-reduces share the NICs with the pipeline's
    // messages, which coarse does not count).
    Layout full = l;
    full.scheme.fsdp.sharding = scheme::FsdpSharding::Full;
    const double full_error =
        run(full, Predictor::Coarse).step_time / run(full, Predictor::Fine).step_time - 1;
    fmt::print("  full sharding of the layout: coarse {:+.2f}% of fine\n", 100 * full_error);
    const double bound = l.scheme.parallel.pipeline > 1 ? 0.10 : 0.05;
    EXPECT_LE(std::fabs(error), bound) << l.label;
    EXPECT_LE(std::fabs(full_error), bound) << l.label << ", full sharding";
    EXPECT_LE(analytic.step_time, fine.step_time * (1 + 1e-9)) << l.label;
  }
  fmt::print("worst {:.2f}% over {} layouts\n", 100 * worst, checked);
  EXPECT_EQ(checked, 16);
}

TEST(HybridShardingPredictors, AShardGroupOfTheWholeDataGroupIsFullShardingInEveryPredictor) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Layout l = random_layout(seed);
    l.scheme.fsdp.shard_group = l.cluster.workers / (l.scheme.parallel.tensor * l.scheme.parallel.pipeline);
    scheme::SchemeConfig full = l.scheme;
    full.fsdp.sharding = scheme::FsdpSharding::Full;
    for (Predictor predictor : {Predictor::Fine, Predictor::Coarse, Predictor::Analytic}) {
      const Result a = run(l, predictor);
      Layout f = l;
      f.scheme = full;
      const Result b = run(f, predictor);
      EXPECT_EQ(a.step_time, b.step_time) << l.label << " " << to_string(predictor);
      EXPECT_EQ(a.memory.per_worker, b.memory.per_worker) << l.label << " " << to_string(predictor);
    }
  }
}

TEST(HybridShardingPredictors, ModelStatesPerGpuAreDividedByTheShardGroup) {
  // Parameters, gradients and optimizer state of a stage's tensor shard over the s ranks of a
  // shard group (resharded after the forward), where full sharding divides them over d x c: the
  // same stage, so hybrid's states are full's times d c / s.
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Layout l = random_layout(seed);
    l.scheme.fsdp.reshard_after_forward = true;
    if (!divides(l)) continue;
    const int s = scheme::hybrid_shard_ranks(l.scheme, l.cluster.workers, l.cluster.workers_per_node);
    const double group =
        static_cast<double>(l.cluster.workers) / (l.scheme.parallel.tensor * l.scheme.parallel.pipeline);
    Layout f = l;
    f.scheme.fsdp.sharding = scheme::FsdpSharding::Full;
    const Memory hybrid = run(l, Predictor::Analytic).memory.per_worker;
    const Memory full = run(f, Predictor::Analytic).memory.per_worker;
    SCOPED_TRACE(l.label);
    EXPECT_NEAR(hybrid.parameters, full.parameters * group / s, 1e-9 * hybrid.parameters);
    EXPECT_NEAR(hybrid.gradients, full.gradients * group / s, 1e-9 * hybrid.gradients);
    EXPECT_NEAR(hybrid.optimizer, full.optimizer * group / s, 1e-9 * hybrid.optimizer);
    EXPECT_EQ(hybrid.activations, full.activations);
  }
}

}  // namespace hybrid_sharding_predictors_test
}  // namespace
}  // namespace stepcast::predict
