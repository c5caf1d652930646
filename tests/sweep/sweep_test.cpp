// Sweeps (sweep/sweep.hpp): the grid's syntax and order, and that a sweep is exactly the same
// predictions run one by one, whatever the number of threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/sweep/sweep.hpp"

namespace stepcast::sweep {
namespace {
namespace sweep_test {  // this file's own names: test files are compiled several to a unit

const std::string kExample = std::string(STEPCAST_SOURCE_DIR) + "/examples/resnet50-ps.yaml";

std::vector<std::string> values(const Axis& a) { return a.values; }

TEST(SweepAxis, ListsAndDoublingRanges) {
  EXPECT_EQ(parse_axis("training.ps.count=1,2,4").key, "training.ps.count");
  EXPECT_EQ(values(parse_axis("training.ps.count=1,2,4")), (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_EQ(values(parse_axis("k=1..32")), (std::vector<std::string>{"1", "2", "4", "8", "16", "32"}));
  // The end point is kept when the doubling does not land on it.
  EXPECT_EQ(values(parse_axis("k=3..20")), (std::vector<std::string>{"3", "6", "12", "20"}));
  EXPECT_EQ(values(parse_axis("k=5..5")), (std::vector<std::string>{"5"}));
  EXPECT_EQ(values(parse_axis("cluster.nic_bandwidth=10Gbps,25Gbps")),
            (std::vector<std::string>{"10Gbps", "25Gbps"}));
}

TEST(SweepAxis, BadSyntaxIsAnErrorNamingTheOption) {
  for (const char* text : {"no-equals", "=1,2", "k=", "k=1,,2", "k=1,1", "k=4..2", "k=0..4", "k=a..b", "k=1..x"}) {
    try {
      (void)parse_axis(text);
      ADD_FAILURE() << text << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.where().key, "--sweep") << text;
    }
  }
}

TEST(SweepGrid, CartesianProductFirstAxisOutermost) {
  const auto g = grid({parse_axis("a=1,2"), parse_axis("b=x,y,z")});
  ASSERT_EQ(g.size(), 6u);
  EXPECT_EQ(report::config_label(g[0]), "a=1, b=x");
  EXPECT_EQ(report::config_label(g[2]), "a=1, b=z");
  EXPECT_EQ(report::config_label(g[3]), "a=2, b=x");
  EXPECT_TRUE(g[0][0].is_number);
  EXPECT_FALSE(g[0][1].is_number);
  EXPECT_EQ(grid({}).size(), 1u);
  EXPECT_THROW((void)grid({parse_axis("a=1"), parse_axis("a=2")}), Error);
  EXPECT_THROW((void)grid({parse_axis("a=1..1024"), parse_axis("b=1..1024")}, 50), Error);
}

Request ps_request(int jobs) {
  Request r;
  r.scenario = kExample;
  r.overrides = {"steps.measure=2", "steps.warmup=1"};
  r.axes = {parse_axis("training.ps.count=1,2,4"), parse_axis("cluster.nic_bandwidth=10Gbps,25Gbps")};
  r.workers = {2, 8};
  r.jobs = jobs;
  return r;
}

TEST(SweepRun, EqualsThePredictionsRunOneByOne) {
  const report::Sweep s = run(ps_request(2));
  ASSERT_EQ(s.predictions.size(), 12u);
  ASSERT_EQ(s.configs.size(), 12u);
  size_t i = 0;
  for (const char* count : {"1", "2", "4"}) {
    for (const char* bw : {"10Gbps", "25Gbps"}) {
      const scenario::Scenario sc = scenario::load_scenario(
          kExample, {"steps.measure=2", "steps.warmup=1", std::string("training.ps.count=") + count,
                     std::string("cluster.nic_bandwidth=") + bw});
      const workload::Workload w = scenario::build_workload(sc);
      for (int n : {2, 8}) {
        cluster::ClusterSpec c = sc.cluster;
        c.workers = n;
        EXPECT_EQ(s.predictions[i], predict::predict(w, c, sc.scheme, sc.options)) << i;
        EXPECT_EQ(s.configs[i][0].value, count);
        EXPECT_EQ(s.configs[i][1].value, bw);
        ++i;
      }
    }
  }
}

TEST(SweepRun, SameOutputForOneTwoAndFourThreads) {
  const report::Sweep one = run(ps_request(1));
  for (int jobs : {2, 4}) {
    const report::Sweep many = run(ps_request(jobs));
    EXPECT_EQ(many.predictions, one.predictions) << jobs;
    EXPECT_EQ(many.configs.size(), one.configs.size());
  }
}

TEST(SweepRun, ExplicitConfigurationsRunInTheirOrderAsTheGridWould) {
  const report::Sweep by_grid = run(ps_request(2));
  // The grid's configurations reversed, then the scenario as given (an empty configuration).
  Request r = ps_request(2);
  std::vector<report::Config> configs = grid(r.axes);
  std::reverse(configs.begin(), configs.end());
  configs.push_back({});
  r.configs = configs;
  const report::Sweep explicit_order = run(r);
  ASSERT_EQ(explicit_order.predictions.size(), by_grid.predictions.size() + 2);
  const size_t points = configs.size() - 1, counts = 2;
  for (size_t k = 0; k < points; ++k) {
    for (size_t c = 0; c < counts; ++c) {
      EXPECT_EQ(explicit_order.predictions[k * counts + c], by_grid.predictions[(points - 1 - k) * counts + c]) << k;
      EXPECT_EQ(report::config_label(explicit_order.configs[k * counts + c]),
                report::config_label(by_grid.configs[(points - 1 - k) * counts + c]));
    }
  }
  const scenario::Scenario as_given = scenario::load_scenario(kExample, r.overrides);
  cluster::ClusterSpec eight = as_given.cluster;
  eight.workers = 8;
  EXPECT_EQ(explicit_order.predictions.back(),
            predict::predict(scenario::build_workload(as_given), eight, as_given.scheme, as_given.options));
  EXPECT_TRUE(explicit_order.configs.back().empty());
}

TEST(SweepRun, ABadValueNamesItsConfiguration) {
  Request r = ps_request(2);
  r.axes = {parse_axis("training.ps.count=2,0")};
  try {
    (void)run(r);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().key, "training.ps.count");
    EXPECT_NE(e.message().find("(at training.ps.count=0)"), std::string::npos) << e.message();
  }
}

TEST(SweepRun, ProgressCountsEveryPrediction) {
  Request r = ps_request(2);
  size_t last = 0, calls = 0, total = 0;
  r.progress = [&](size_t done, size_t of) {
    ++calls;
    EXPECT_GT(done, last);
    last = done;
    total = of;
  };
  (void)run(r);
  EXPECT_EQ(calls, 12u);
  EXPECT_EQ(total, 12u);
  EXPECT_EQ(last, 12u);
}

TEST(SweepRun, AKeyThatChangesNothingIsSaidOnce) {
  // The PS example under FSDP's sharding keys and an all-reduce algorithm: nothing reads them.
  // A PS count does change the step, so only the others are named, each once.
  Request r;
  r.scenario = kExample;
  r.overrides = {"predictor=coarse"};
  r.axes = {parse_axis("training.ps.count=1,2"), parse_axis("training.fsdp.sharding=full,grad_op"),
            parse_axis("training.allreduce.algorithm=ring,tree")};
  std::vector<std::string> warnings;
  r.warn = [&](const std::string& w) { warnings.push_back(w); };
  (void)run(r);
  ASSERT_EQ(warnings.size(), 2u) << ::testing::PrintToString(warnings);
  EXPECT_NE(warnings[0].find("--sweep training.fsdp.sharding: every value (full, grad_op) gives the same"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[1].find("--sweep training.allreduce.algorithm:"), std::string::npos) << warnings[1];
  // One axis that changes the step: no warning.
  r.axes = {parse_axis("training.ps.count=1,2")};
  warnings.clear();
  (void)run(r);
  EXPECT_TRUE(warnings.empty()) << ::testing::PrintToString(warnings);
}

TEST(SweepRun, ScenarioTextPredictsLikeTheFile) {
  std::ifstream in(kExample);
  std::stringstream text;
  text << in.rdbuf();
  Request from_text = ps_request(2);
  from_text.scenario = "inline.yaml";
  from_text.scenario_text = text.str();
  const report::Sweep a = run(ps_request(2)), b = run(from_text);
  EXPECT_EQ(b.predictions, a.predictions);
  EXPECT_EQ(b.scenario, a.scenario);  // the file's `name:` key
  // Errors name the text's name, and its line.
  from_text.scenario_text = "cluster:\n  workers: 0\n";
  from_text.axes.clear();
  try {
    (void)run(from_text);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().file, "inline.yaml");
    EXPECT_EQ(e.where().line, 2);
    EXPECT_EQ(e.where().key, "cluster.workers");
  }
}

TEST(SweepRun, EveryPredictorAtEveryPointEqualsThatPredictorAlone) {
  // `predict --predictor all`: at each (configuration, worker count) the predictors in the order
  // given, each the prediction its own `predictor=` gives.
  Request r = ps_request(2);
  r.axes = {parse_axis("training.ps.count=1,2")};
  r.predictors = {predict::Predictor::Fine, predict::Predictor::Coarse, predict::Predictor::Analytic};
  size_t total = 0;
  r.progress = [&](size_t, size_t of) { total = of; };
  const report::Sweep s = run(r);
  ASSERT_EQ(s.predictions.size(), 12u);  // 2 configurations x 2 counts x 3 predictors
  EXPECT_EQ(total, 12u);
  size_t i = 0;
  for (const char* count : {"1", "2"}) {
    for (int n : {2, 8}) {
      for (const char* predictor : {"fine", "coarse", "analytic"}) {
        const scenario::Scenario sc = scenario::load_scenario(
            kExample, {"steps.measure=2", "steps.warmup=1", std::string("training.ps.count=") + count,
                       std::string("predictor=") + predictor});
        cluster::ClusterSpec c = sc.cluster;
        c.workers = n;
        EXPECT_EQ(s.predictions[i], predict::predict(scenario::build_workload(sc), c, sc.scheme, sc.options))
            << i << ": " << predictor;
        EXPECT_EQ(s.configs[i].size(), 1u);  // the predictor is not a swept key
        ++i;
      }
    }
  }
}

TEST(SweepThreads, AtLeastOneAtMostTheTasks) {
  EXPECT_EQ(threads_for(4, 2), 2);
  EXPECT_EQ(threads_for(1, 100), 1);
  EXPECT_GE(threads_for(0, 100), 1);
  EXPECT_EQ(threads_for(8, 0), 1);
}

}  // namespace sweep_test
}  // namespace
}  // namespace stepcast::sweep
