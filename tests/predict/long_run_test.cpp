// The long-run warning of the fine predictor: when it projects, what it says, that it says it
// once, and that the engine's progress calls change nothing in a result.
#include "predict/long_run.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace long_run_test {  // this file's own names: test files are compiled several to a unit

TEST(LongRunWarning, ProjectsFromTheFractionDoneAndWarnsOnce) {
  std::vector<std::string> warnings;
  const WarningSink sink = [&](const std::string& w) { warnings.push_back(w); };
  LongRunWarning warning(sink, 1024);
  warning.progress_at(1.9, 0.001);  // too early to project
  EXPECT_TRUE(warnings.empty());
  warning.progress_at(2.5, 0.001);  // 2,500 s at this rate, but a first look only opens the window
  EXPECT_TRUE(warnings.empty());
  warning.progress_at(3.0, 0.1);  // a tenth in 3 s, at the mean and at the recent rate: 30 s in all
  EXPECT_TRUE(warnings.empty());
  // 13 s for a fifth: 65 s at the mean rate (the recent one, since 2.5 s, says 55 s).
  warning.progress_at(13.0, 0.2);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(warning.warned());
  EXPECT_NE(warnings[0].find("1024 workers"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("coarse"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("analytic"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("65.0 s"), std::string::npos) << warnings[0];
  warning.progress_at(30.0, 0.3);
  EXPECT_EQ(warnings.size(), 1u) << "warns once";
}

TEST(LongRunWarning, AStepThatGetsDearerWarnsAtTheRecentRate) {
  std::vector<std::string> warnings;
  const WarningSink sink = [&](const std::string& w) { warnings.push_back(w); };
  LongRunWarning warning(sink, 64);
  warning.progress_at(2.0, 0.3);  // a first look
  warning.progress_at(4.0, 0.5);  // 8 s at the mean rate, 9 s at the recent one
  EXPECT_TRUE(warnings.empty());
  warning.progress_at(10.0, 0.52);  // 19 s at the mean rate; at the last 6 s's, 10 + 0.48 x 300 = 154 s
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("3 min"), std::string::npos) << warnings[0];
}

TEST(LongRunWarning, AStepThatGetsCheaperDoesNotWarn) {
  std::vector<std::string> warnings;
  const WarningSink sink = [&](const std::string& w) { warnings.push_back(w); };
  LongRunWarning warning(sink, 64);
  warning.progress_at(2.0, 0.02);  // slow start: 100 s at this rate, a first look
  warning.progress_at(4.0, 0.5);   // then fast: 8 s in all at both rates
  warning.progress_at(5.0, 0.75);
  EXPECT_TRUE(warnings.empty());
}

TEST(LongRunWarning, WithoutProgressTheTimeSoFarCounts) {
  std::vector<std::string> warnings;
  const WarningSink sink = [&](const std::string& w) { warnings.push_back(w); };
  LongRunWarning warning(sink, 8);
  warning.progress_at(30.0, 0.0);  // nothing done yet: no projection
  EXPECT_TRUE(warnings.empty());
  warning.progress_at(61.0, 0.0);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("61.0 s"), std::string::npos) << warnings[0];
  LongRunWarning in_minutes(sink, 8);
  in_minutes.progress_at(5.0, 0.005);
  in_minutes.progress_at(10.0, 0.01);  // 1,000 s at both rates
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[1].find("17 min"), std::string::npos) << warnings[1];
  LongRunWarning silent({}, 8);  // no sink: nothing to do
  silent.progress_at(1000.0, 0.001);
  EXPECT_FALSE(silent.warned());
}

TEST(LongRunWarning, OnlyTheFullEngineReportsProgressAndProgressChangesNothing) {
  const workload::Workload w =
      zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 32, .step_time = 0.1});
  cluster::ClusterSpec spec;
  spec.workers = 16;
  scheme::SchemeConfig ps;
  ps.scheme = scheme::Scheme::ParameterServer;
  ps.ps.count = 4;
  ps.ps.order = scheme::PsOrder::Random;  // the full engine
  int calls = 0;
  double last = 0;
  bool monotone = true, in_range = true;
  scheme::SimulationOptions options;
  const scheme::SimulationResult quiet = scheme::simulate_steps(w, spec, ps, options);
  options.progress = [&](double fraction) {
    monotone = monotone && fraction >= last;
    in_range = in_range && fraction > 0 && fraction <= 1;
    last = fraction;
    ++calls;
  };
  const scheme::SimulationResult reported = scheme::simulate_steps(w, spec, ps, options);
  EXPECT_GT(calls, 0);
  EXPECT_TRUE(monotone);
  EXPECT_TRUE(in_range);
  ASSERT_EQ(quiet.workers.size(), reported.workers.size());
  for (size_t i = 0; i < quiet.workers.size(); ++i)
    EXPECT_EQ(quiet.workers[i].cycle, reported.workers[i].cycle);
  EXPECT_EQ(quiet.events, reported.events);

  calls = 0;
  scheme::SchemeConfig allreduce;
  allreduce.scheme = scheme::Scheme::AllReduce;  // the fast path: no engine run at all
  const scheme::SimulationResult fast = scheme::simulate_steps(w, spec, allreduce, options);
  EXPECT_EQ(fast.engine, scheme::SimulationEngine::Fast);
  EXPECT_EQ(calls, 0);

  // A parallel layout on its fast path runs the engine, one rank per stage, and reports nothing:
  // its fraction done says nothing of a full engine's time.
  const workload::Workload decoder =
      zoo::to_workload(zoo::get_model("gpt2"),
                       {.batch_per_worker = 1, .step_time = 0.2, .precision = workload::Precision::BF16});
  scheme::SchemeConfig layout;
  layout.scheme = scheme::Scheme::AllReduce;
  layout.parallel.tensor = 2;
  layout.parallel.pipeline = 2;
  layout.parallel.global_batch = 16;  // 4 micro-batches of one on each of 4 replicas
  cluster::ClusterSpec nodes;
  nodes.workers = 16;
  nodes.workers_per_node = 4;
  const scheme::SimulationResult composed = scheme::simulate_steps(decoder, nodes, layout, options);
  EXPECT_EQ(composed.engine, scheme::SimulationEngine::Fast);
  EXPECT_EQ(calls, 0);
  options.fast_paths = false;
  const scheme::SimulationResult every_rank = scheme::simulate_steps(decoder, nodes, layout, options);
  EXPECT_EQ(every_rank.engine, scheme::SimulationEngine::Full);
  EXPECT_GT(calls, 0);
}

}  // namespace long_run_test
}  // namespace
}  // namespace stepcast::predict
