// Coarse against fine where FSDP gathers few large units inside a parallel layout: a small data
// group, one or two stages of a few Llama-like blocks, full or grad_op sharding. There the
// gathers of a pass are not hidden behind its compute (the embedding's and the head's gathers are
// as large as a block's several times over), so each unit's compute waits for its gather and the
// pass is a chain gather -> compute -> gather ... (issue 27).
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
namespace coarse_fsdp_layouts_test {  // this file's own names: test files are compiled several to a unit

using Layout = testing::SeededLayout;

/// A seeded layout of a Llama-like decoder (hidden 4096, ffn 14336, 32 heads, 8 kv heads, vocab
/// 128256, sequence 4096) of a few blocks under FSDP full or grad_op, on nodes of 8 GPUs with
/// NVLink inside and 400 Gb/s NICs: d 2 or 4, p 1 or 2, no, selective or full recomputation;
/// gpipe or 1f1b, or with `zero_bubble` ZB-H1.
Layout random_layout(uint64_t seed, bool zero_bubble = false) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::vector<int> v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  Layout l;
  const int t = pick({1, 2, 4, 8}), p = pick({1, 2}), d = pick({2, 4});
  const int blocks = p * pick({1, 2, 3});
  const auto checkpointing = static_cast<workload::ActivationCheckpointing>(pick({0, 1, 2}));
  l.workload = testing::llama_like(blocks, checkpointing);
  scheme::SchemeConfig& s = l.scheme;
  s.scheme = scheme::Scheme::Fsdp;
  s.fsdp.sharding = pick({0, 0, 1}) == 0 ? scheme::FsdpSharding::Full : scheme::FsdpSharding::GradOp;
  s.parallel.tensor = t;
  s.parallel.pipeline = p;
  s.parallel.sequence = pick({0, 1}) == 1;
  s.pipeline.schedule = static_cast<scheme::PipelineSchedule>(pick({0, 1}));
  if (zero_bubble) s.pipeline.schedule = scheme::PipelineSchedule::ZeroBubble;
  s.parallel.global_batch = static_cast<int64_t>(d) * p * pick({1, 2, 4});
  l.cluster = testing::nvlink_nodes(t * p * d, 8);
  l.label = fmt::format("seed {}: {} on {} GPUs, {} blocks, fsdp {}, m {}, ckpt {}{}{}", seed,
                        scheme::RankLayout::describe(s.parallel, l.cluster.workers), l.cluster.workers,
                        blocks, s.fsdp.sharding == scheme::FsdpSharding::Full ? "full" : "grad_op",
                        s.parallel.global_batch / d, static_cast<int>(checkpointing),
                        s.parallel.sequence ? ", sp" : "", zero_bubble ? ", zero_bubble" : "");
  return l;
}

Result run(const Layout& l, Predictor predictor) { return testing::predict_layout(l, predictor); }

/// Coarse against fine on the 24 seeded layouts that validate: within 5% (10% with p > 1),
/// analytic at or below fine; the worst error.
double expect_within_bounds(bool zero_bubble) {
  int checked = 0;
  double worst = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    const Layout l = random_layout(seed, zero_bubble);
    if (scheme::layout_problem(l.workload, l.cluster, l.scheme).has_value()) continue;
    ++checked;
    const Result fine = run(l, Predictor::Fine), coarse = run(l, Predictor::Coarse),
                 analytic = run(l, Predictor::Analytic);
    const double error = testing::print_comparison(l.label, fine, coarse, analytic);
    worst = std::max(worst, std::fabs(error));
    // The bounds of ComposedPredictors.CoarseWithinFivePercentOfFineOnRandomLayouts.
    const double bound = l.scheme.parallel.pipeline > 1 ? 0.10 : 0.05;
    EXPECT_LE(std::fabs(error), bound) << l.label;
    EXPECT_LE(analytic.step_time, fine.step_time * (1 + 1e-9)) << l.label;
  }
  fmt::print("worst {:.2f}% over {} layouts\n", 100 * worst, checked);
  EXPECT_GE(checked, 16);
  return worst;
}

TEST(CoarseFsdpLayouts, CoarseWithinTheComposedBoundsOfFineAndAnalyticBelow) {
  // Measured (2026-12-07): before coarse ran each pass's gathers as a chain (composed_costs.cpp,
  // run_pass) it missed seeds 3, 4, 9, 15 and 22 (p = 1) by -5.8% to -11.6%, -11.6% the worst
  // (seed 4, tp8 pp1 dp4, one block); since, -2.3% to +2.4%.
  expect_within_bounds(false);
}

TEST(CoarseFsdpLayouts, ZeroBubbleWithinTheComposedBoundsOfFineAndAnalyticBelow) {
  // ZB-H1, each unit reduced after its last deferred W. Measured (2026-12-07): before coarse ran
  // each pass's gathers as a chain it missed p = 1 by -4.4% to -11.9% on seeds 3, 4, 9, 15, 17
  // and 22 (docs/status.md said up to 25% on other layouts), p = 2 by +1.7% to +7.6%; since,
  // -3.9% to +2.2% at p = 1 and +1.9% to +9.9% at p = 2 (+9.9%: seed 20, tp4 pp2 dp4, grad_op,
  // m 2, where the schedule's fill and drain count each forward's exposed gathers; it was +5.2%).
  expect_within_bounds(true);
}

}  // namespace coarse_fsdp_layouts_test
}  // namespace
}  // namespace stepcast::predict
