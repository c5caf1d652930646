// The coarse predictor of a composed layout keeps, per thread, the cluster, each layout's
// collective plans and their closed forms between calls (scheme/composed_costs.cpp), and builds
// its stage programs without op names: over seeded random layouts of a plan's space, a prediction
// on a thread that has predicted many other layouts before (its caches warm) equals the one on a
// fresh thread (nothing cached: the direct computation) within 1e-12 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/sweep/plan.hpp"

namespace stepcast::sweep {
namespace {
namespace coarse_cache_test {  // this file's own names: test files are compiled several to a unit

bool near(double a, double b) {
  return a == b || std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
}

/// Up to `count` layouts that pass the rules and fit, drawn at random (seeded) from the space.
std::vector<Layout> drawn(const scenario::Scenario& base, int gpus, std::size_t count, unsigned seed) {
  std::vector<Layout> all = candidate_layouts(base, gpus);
  std::mt19937 random(seed);
  std::shuffle(all.begin(), all.end(), random);
  predict::Options coarse = base.options;
  coarse.predictor = predict::Predictor::Coarse;
  std::vector<Layout> out;
  for (const Layout& l : all) {
    if (out.size() == count) break;
    const scenario::Scenario at = apply_layout(base, l);
    const workload::Workload w = scenario::build_workload(at);
    if (scheme::layout_problem(w, at.cluster, at.scheme)) continue;
    try {
      predict::validate(w, at.cluster, at.scheme, coarse);
    } catch (const Error&) {
      continue;
    }
    predict::Result memory;
    predict::account_model(memory, w, at.cluster, at.scheme);
    if (memory.memory.fits() && at.scheme.parallel.composed()) out.push_back(l);
  }
  return out;
}

predict::Result coarse_of(const scenario::Scenario& base, const Layout& l) {
  const scenario::Scenario at = apply_layout(base, l);
  predict::Options coarse = base.options;
  coarse.predictor = predict::Predictor::Coarse;
  coarse.record_trace = false;
  return predict::predict(scenario::build_workload(at), at.cluster, at.scheme, coarse);
}

void expect_cached_equals_direct(const std::string& file, int gpus, std::size_t count, unsigned seed) {
  const scenario::Scenario base = scenario::load_scenario(file);
  const std::vector<Layout> layouts = drawn(base, gpus, count, seed);
  ASSERT_GE(layouts.size(), count / 2) << file;
  // Warm: every layout on this thread, twice, in two orders (the second pass hits the caches).
  std::vector<predict::Result> warm(layouts.size());
  for (std::size_t i = 0; i < layouts.size(); ++i) warm[i] = coarse_of(base, layouts[i]);
  for (std::size_t i = layouts.size(); i-- > 0;) {
    const predict::Result again = coarse_of(base, layouts[i]);
    EXPECT_EQ(again.step_time, warm[i].step_time) << layout_label(layouts[i]);
  }
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    SCOPED_TRACE(layout_label(layouts[i]));
    predict::Result direct;
    std::thread([&] { direct = coarse_of(base, layouts[i]); }).join();  // a fresh thread: nothing cached
    EXPECT_TRUE(near(warm[i].step_time, direct.step_time)) << warm[i].step_time << " vs " << direct.step_time;
    EXPECT_TRUE(near(warm[i].tokens.tokens_per_s_per_worker, direct.tokens.tokens_per_s_per_worker));
    EXPECT_TRUE(near(warm[i].breakdown.data, direct.breakdown.data));
    EXPECT_TRUE(near(warm[i].breakdown.tensor, direct.breakdown.tensor));
    EXPECT_TRUE(near(warm[i].breakdown.pipeline, direct.breakdown.pipeline));
    EXPECT_TRUE(near(warm[i].bytes_sent, direct.bytes_sent));
  }
}

TEST(CoarseCache, WarmEqualsDirectOnSeededLayoutsOfLlama3At64) {
  expect_cached_equals_direct(std::string(STEPCAST_SOURCE_DIR) + "/examples/llama3-70b-plan.yaml", 64, 24,
                              32);
}

TEST(CoarseCache, WarmEqualsDirectOnSeededLayoutsOfGpt3At512) {
  expect_cached_equals_direct(std::string(STEPCAST_SOURCE_DIR) + "/examples/gpt3-175b-3d.yaml", 512, 12, 7);
}

}  // namespace coarse_cache_test
}  // namespace
}  // namespace stepcast::sweep
