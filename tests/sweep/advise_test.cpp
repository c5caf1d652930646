// The advisor (sweep/advise.hpp): its cheapest answer, re-predicted on its own, meets the target
// and no cheaper point of the grid does; an infeasible target says so and names the best point;
// the best single change is the largest gain among one-key changes, each re-predicted.
#include "stepcast/sweep/advise.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::sweep {
namespace {
namespace advise_test {  // this file's own names: test files are compiled several to a unit

const std::string kExample = std::string(STEPCAST_SOURCE_DIR) + "/examples/resnet50-ps.yaml";

AdviseRequest ps_request(std::optional<double> target_efficiency) {
  AdviseRequest r;
  r.sweep.scenario = kExample;
  r.sweep.overrides = {"steps.measure=2", "steps.warmup=1", "predictor=coarse"};
  r.sweep.axes = {parse_axis("training.ps.count=1..16"),
                  parse_axis("cluster.nic_bandwidth=10Gbps,25Gbps,40Gbps")};
  r.sweep.workers = {16};
  r.target_efficiency = target_efficiency;
  return r;
}

predict::Result repredict(const report::Config& config, const std::vector<std::string>& base) {
  std::vector<std::string> overrides = base;
  for (const report::Input& s : config) overrides.push_back(s.key + "=" + s.value);
  scenario::Scenario sc = scenario::load_scenario(kExample, overrides);
  sc.cluster.workers = 16;
  return predict::predict(scenario::build_workload(sc), sc.cluster, sc.scheme, sc.options);
}

TEST(Advise, CheapestAnswerMeetsTheTargetAndNoCheaperPointDoes) {
  const AdviseRequest r = ps_request(0.6);
  const report::Advice a = advise(r);
  ASSERT_FALSE(a.cheapest.empty());
  const report::GridPoint& answer = a.grid[a.cheapest.front()];
  const predict::Result again = repredict(answer.config, r.sweep.overrides);
  EXPECT_EQ(again, answer.result);
  EXPECT_GE(again.efficiency, 0.6);
  for (const report::GridPoint& p : a.grid) {
    if (p.cost < answer.cost) {
      EXPECT_LT(repredict(p.config, r.sweep.overrides).efficiency, 0.6) << report::config_label(p.config);
    }
  }
  EXPECT_EQ(a.grid.size(), 5u * 3u);
}

TEST(Advise, InfeasibleTargetSaysSoAndNamesTheBestPoint) {
  const report::Advice a = advise(ps_request(0.999));
  EXPECT_TRUE(a.cheapest.empty());
  ASSERT_TRUE(a.best_point.has_value());
  for (const report::GridPoint& p : a.grid)
    EXPECT_LE(p.result.throughput, a.grid[*a.best_point].result.throughput);
  std::ostringstream text;
  report::write_advice_text(text, a);
  EXPECT_NE(text.str().find("no configuration of the 15 tried meets efficiency >= 99.9%"), std::string::npos)
      << text.str();
  std::ostringstream json;
  report::write_advice_json(json, a);
  EXPECT_NE(json.str().find("\"feasible\": false"), std::string::npos) << json.str();
}

TEST(Advise, BestSingleChangeIsTheLargestOneKeyGain) {
  const AdviseRequest r = ps_request(0.6);
  const report::Advice a = advise(r);
  ASSERT_FALSE(a.best_changes.empty());
  const report::Change& best = a.best_changes.front();
  EXPECT_GT(best.gain, 0);
  EXPECT_NEAR(best.gain, best.result.throughput - a.base.throughput, 1e-9 * best.result.throughput);
  // Every one-key change from the scenario as given (ps.count 1, 10 Gbps) gains no more.
  for (const char* change :
       {"training.ps.count=2", "training.ps.count=4", "training.ps.count=8", "training.ps.count=16",
        "cluster.nic_bandwidth=25Gbps", "cluster.nic_bandwidth=40Gbps"}) {
    std::vector<std::string> overrides = r.sweep.overrides;
    overrides.push_back(change);
    scenario::Scenario sc = scenario::load_scenario(kExample, overrides);
    sc.cluster.workers = 16;
    const double t =
        predict::predict(scenario::build_workload(sc), sc.cluster, sc.scheme, sc.options).throughput;
    EXPECT_LE(t - a.base.throughput, best.gain * (1 + 1e-12)) << change;
  }
}

// Llama 2 70B under FSDP on 80 GB GPUs with 50 Gb/s NICs: hybrid sharding over a node holds 150
// GB per GPU and is the fastest (it keeps the gathers on NVLink); full sharding fits from 32 GPUs.
// No answer may be a configuration that does not fit.
TEST(Advise, NeverAnswersAConfigurationThatDoesNotFit) {
  AdviseRequest r;
  r.sweep.scenario = std::string(STEPCAST_SOURCE_DIR) + "/examples/llama2-70b-fsdp.yaml";
  r.sweep.overrides = {"predictor=coarse", "cluster.nic_bandwidth=50Gbps"};
  r.sweep.axes = {parse_axis("training.fsdp.sharding=hybrid,full"), parse_axis("cluster.workers=8,16,32,64")};
  r.target_efficiency = 0.3;
  const report::Advice a = advise(r);
  std::size_t misfits = 0, fastest = 0;
  for (std::size_t i = 0; i < a.grid.size(); ++i) {
    const report::GridPoint& p = a.grid[i];
    if (!p.result.memory.fits()) {
      ++misfits;
      EXPECT_FALSE(p.meets) << report::config_label(p.config);
    }
    if (p.result.throughput > a.grid[fastest].result.throughput) fastest = i;
  }
  ASSERT_GT(misfits, 0u);
  // Without the rule the answer would not fit: the fastest point of all does not.
  EXPECT_FALSE(a.grid[fastest].result.memory.fits());
  ASSERT_FALSE(a.cheapest.empty());
  for (std::size_t i : a.cheapest)
    EXPECT_TRUE(a.grid[i].result.memory.fits()) << report::config_label(a.grid[i].config);
  ASSERT_TRUE(a.best_point.has_value());
  EXPECT_TRUE(a.grid[*a.best_point].result.memory.fits());
  for (const report::GridPoint& p : a.grid) {
    if (p.result.memory.fits()) {
      EXPECT_LE(p.result.throughput, a.grid[*a.best_point].result.throughput);
    }
  }
  for (const report::Change& c : a.best_changes) EXPECT_TRUE(c.result.memory.fits()) << c.key << "=" << c.to;
  // The rows that do not fit stay visible, marked.
  std::ostringstream json, text;
  report::write_advice_json(json, a);
  report::write_advice_text(text, a);
  EXPECT_NE(json.str().find("\"fits\": false"), std::string::npos);
  EXPECT_NE(text.str().find("configurations do not fit in GPU memory and are not answers"), std::string::npos)
      << text.str();
}

// Two prices for the same GPUs (two providers, say): the same speed, so only money tells them
// apart. By list position the first listed, 3 per GPU-hour, would be the cheapest; with costs 2 is:
// the job costs 16 GPUs x 2 per GPU-hour x its time, against 16 x 3 x the same time.
TEST(Advise, WithCostsPicksTheCheaperOfTwoEqualSpeedOptionsAndSaysWhatItMinimised) {
  AdviseRequest r;
  r.sweep.scenario = kExample;
  r.sweep.overrides = {"steps.measure=2", "steps.warmup=1", "predictor=coarse", "job.samples=1000000"};
  r.sweep.axes = {parse_axis("cluster.cost.gpu_hour=3,2")};
  r.sweep.workers = {16};
  r.target_efficiency = 0.01;
  const report::Advice a = advise(r);
  ASSERT_EQ(a.grid.size(), 2u);
  EXPECT_EQ(a.grid[0].result.throughput, a.grid[1].result.throughput);
  ASSERT_EQ(a.cheapest.size(), 1u);
  const report::GridPoint& answer = a.grid[a.cheapest.front()];
  EXPECT_EQ(answer.config.at(0).value, "2");
  EXPECT_EQ(a.minimised, "cost to train the job");
  const double hours = answer.result.job.time / 3600;
  EXPECT_NEAR(answer.money, 16 * 2 * hours, 1e-9 * answer.money);
  EXPECT_NEAR(a.grid[0].money, 16 * 3 * hours, 1e-9 * a.grid[0].money);
  std::ostringstream text, json;
  report::write_advice_text(text, a);
  report::write_advice_json(json, a);
  EXPECT_NE(text.str().find("cheapest means least cost to train the job"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find(
                "cheapest that meets efficiency >= 1.0%: cluster.cost.gpu_hour=2 (cost to train the job "),
            std::string::npos)
      << text.str();
  EXPECT_NE(json.str().find("\"minimised\": \"cost to train the job\""), std::string::npos) << json.str();

  // Without costs the list position decides, as before.
  AdviseRequest unpriced = r;
  unpriced.sweep.axes = {parse_axis("cluster.nic_bandwidth=10Gbps,40Gbps")};
  unpriced.target_efficiency = 0.01;
  const report::Advice b = advise(unpriced);
  EXPECT_EQ(b.minimised, "steps up the --vary lists");
  ASSERT_FALSE(b.cheapest.empty());
  EXPECT_EQ(b.grid[b.cheapest.front()].money, 0);
}

// Per-value costs: the 40 Gb/s NIC at 0.5 more per GPU-hour than the 10 Gb/s one. At 16 workers,
// 2 per GPU-hour and a job of 1e6 samples, a point's money is 16 x (2 + its NIC's cost) x its job
// time / 3600 h, and the answer is the point of least money among those that meet the target.
TEST(Advise, PerValueCostsAddToEachPointsPrice) {
  AdviseRequest r;
  r.sweep.scenario = kExample;
  r.sweep.overrides = {"steps.measure=2", "steps.warmup=1", "predictor=coarse", "job.samples=1000000",
                       "cluster.cost.gpu_hour=2"};
  r.sweep.axes = {parse_axis("cluster.nic_bandwidth=10Gbps,40Gbps:0.5")};
  r.sweep.workers = {16};
  r.target_efficiency = 0.01;
  const report::Advice a = advise(r);
  ASSERT_EQ(a.grid.size(), 2u);
  EXPECT_EQ(a.grid[0].config.at(0).value, "10Gbps");
  EXPECT_EQ(a.grid[1].config.at(0).value, "40Gbps");
  EXPECT_EQ(a.grid[0].result.cost.gpu_hour, 2);
  EXPECT_EQ(a.grid[1].result.cost.gpu_hour, 2.5);
  for (const report::GridPoint& p : a.grid) {
    const double expected = 16 * p.result.cost.gpu_hour * p.result.job.time / 3600;
    EXPECT_NEAR(p.money, expected, 1e-9 * expected) << report::config_label(p.config);
  }
  ASSERT_EQ(a.cheapest.size(), 1u);
  const std::size_t other = 1 - a.cheapest.front();
  EXPECT_LT(a.grid[a.cheapest.front()].money, a.grid[other].money);

  AdviseRequest negative = r;
  negative.sweep.axes = {parse_axis("cluster.nic_bandwidth=10Gbps,40Gbps:-1")};
  try {
    (void)advise(negative);
    ADD_FAILURE() << "a negative cost accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().key, "--vary");
  }
}

TEST(Advise, BadRequestsAreErrorsNamingTheOption) {
  AdviseRequest none = ps_request(std::nullopt);
  EXPECT_THROW((void)advise(none), Error);
  AdviseRequest both = ps_request(0.5);
  both.target_throughput = 100;
  EXPECT_THROW((void)advise(both), Error);
  AdviseRequest over = ps_request(1.5);
  EXPECT_THROW((void)advise(over), Error);
  AdviseRequest no_axes = ps_request(0.5);
  no_axes.sweep.axes.clear();
  try {
    (void)advise(no_axes);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.where().key, "--vary");
  }
  AdviseRequest counts = ps_request(0.5);
  counts.sweep.workers = {8, 16};
  EXPECT_THROW((void)advise(counts), Error);
}

// A target of 0 is given and out of range, not "no target": alone it is an error naming its own
// option, and beside the other target it is not ignored.
TEST(Advise, AZeroTargetIsAnErrorNamingItsOption) {
  AdviseRequest zero_throughput = ps_request(std::nullopt);
  zero_throughput.target_throughput = 0.0;
  AdviseRequest zero_beside = ps_request(0.5);
  zero_beside.target_throughput = 0.0;
  AdviseRequest zero_efficiency = ps_request(0.0);
  zero_efficiency.target_throughput = 100;
  for (const auto& [request, option] :
       {std::pair{zero_throughput, "--target-throughput"}, std::pair{zero_beside, "--target-throughput"},
        std::pair{zero_efficiency, "--target-efficiency"}}) {
    try {
      (void)advise(request);
      ADD_FAILURE() << option << " 0 accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.where().key, option) << e.what();
      EXPECT_NE(e.message().find("got 0"), std::string::npos) << e.what();
    }
  }
}

}  // namespace advise_test
}  // namespace
}  // namespace stepcast::sweep
