// The predictors side by side (`predict --predictor all`) on hand-built Results: grouping by
// configuration and worker count, differences against fine, the 20% rule, the table and JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "stepcast/report/report.hpp"

namespace stepcast::report {
namespace {
namespace predictor_comparison_test {  // this file's own names: test files are compiled several to a unit

using predict::Predictor;
using predict::Result;

Result result(Predictor predictor, int workers, double throughput) {
  Result r;
  r.predictor = predictor;
  r.workers = workers;
  r.throughput = throughput;
  r.step_time = 32.0 * workers / throughput;  // batch 32 per worker
  return r;
}

/// Three configurations at 8 workers, each by fine, coarse and analytic (samples/s):
///   k=a: 100, 110, 125   analytic 25% above fine: the spread 125/100 - 1 = 25% > 20%
///   k=b: 100,  95, 115   each within 20% of fine, but 115/95 - 1 = 21% between the other two
///   k=c: 100,  90, 105   105/90 - 1 = 16.7%: agree
Sweep three_configurations() {
  Sweep sweep{.scenario = "compare", .inputs = {}, .predictions = {}};
  const double rates[3][3] = {{100, 110, 125}, {100, 95, 115}, {100, 90, 105}};
  const char* values[] = {"a", "b", "c"};
  for (int c = 0; c < 3; ++c) {
    for (int p = 0; p < 3; ++p) {
      sweep.predictions.push_back(result(static_cast<Predictor>(p), 8, rates[c][p]));
      sweep.configs.push_back({{"k", values[c], false}});
    }
  }
  return sweep;
}

TEST(ComparePredictors, OnePointPerConfigurationAndWorkerCountMeasuredAgainstFine) {
  const Sweep sweep = three_configurations();
  const std::vector<PredictorComparison> c = compare_predictors(sweep);
  ASSERT_EQ(c.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(c[i].first, 3 * i);
    EXPECT_EQ(c[i].workers, 8);
    EXPECT_EQ(c[i].prediction, (std::array<int, 3>{static_cast<int>(3 * i), static_cast<int>(3 * i + 1),
                                                   static_cast<int>(3 * i + 2)}));
  }
  EXPECT_NEAR(*c[0].coarse_vs_fine, 0.10, 1e-12);
  EXPECT_NEAR(*c[0].analytic_vs_fine, 0.25, 1e-12);
  EXPECT_NEAR(c[0].spread, 0.25, 1e-12);
  EXPECT_NEAR(*c[1].coarse_vs_fine, -0.05, 1e-12);
  EXPECT_NEAR(c[1].spread, 115.0 / 95 - 1, 1e-12);
  EXPECT_NEAR(c[2].spread, 105.0 / 90 - 1, 1e-12);
  EXPECT_TRUE(c[0].disagrees());
  EXPECT_TRUE(c[1].disagrees());
  EXPECT_FALSE(c[2].disagrees());
}

TEST(ComparePredictors, WorkerCountsAreSeparatePointsAndOnePredictorIsNoComparison) {
  Sweep sweep{.scenario = "s", .inputs = {}, .predictions = {}};
  for (int n : {1, 2, 4}) sweep.predictions.push_back(result(Predictor::Fine, n, 100.0 * n));
  EXPECT_TRUE(compare_predictors(sweep).empty());
  std::ostringstream json;
  write_json(json, sweep);
  EXPECT_EQ(json.str().find("comparisons"), std::string::npos);

  // Worker counts innermost, then the predictors at each (as sweep::run orders them).
  Sweep both{.scenario = "s", .inputs = {}, .predictions = {}};
  for (int n : {1, 2}) {
    both.predictions.push_back(result(Predictor::Fine, n, 100.0 * n));
    both.predictions.push_back(result(Predictor::Coarse, n, 100.0 * n));
  }
  const std::vector<PredictorComparison> c = compare_predictors(both);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].workers, 2);
  EXPECT_EQ(c[1].prediction, (std::array<int, 3>{2, 3, -1}));
  EXPECT_FALSE(c[1].analytic_vs_fine.has_value());
  EXPECT_EQ(c[1].spread, 0);
}

TEST(ComparePredictors, AZeroRateIsAsFarApartAsItGets) {
  Sweep sweep{.scenario = "s", .inputs = {}, .predictions = {result(Predictor::Fine, 4, 0),
                                                              result(Predictor::Analytic, 4, 50)}};
  sweep.predictions[0].step_time = INFINITY;
  const std::vector<PredictorComparison> c = compare_predictors(sweep);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(std::isinf(c[0].spread));
  EXPECT_FALSE(c[0].analytic_vs_fine.has_value());  // nothing relative to a zero rate
  EXPECT_TRUE(c[0].disagrees());
}

TEST(ComparePredictors, RatesEqualButForRoundingAreEqual) {
  // One worker without communication: every predictor computes the same closed form, and their
  // rates differ in the last bits. That is 0%, not "7.11e-13%"; a real 1e-6 difference stays.
  Sweep sweep{
      .scenario = "s",
      .inputs = {},
      .predictions = {result(Predictor::Fine, 1, 100), result(Predictor::Coarse, 1, 100 * (1 + 7e-15)),
                      result(Predictor::Analytic, 1, 100 * (1 - 4e-13))}};
  std::vector<PredictorComparison> c = compare_predictors(sweep);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].spread, 0);
  EXPECT_EQ(*c[0].coarse_vs_fine, 0);
  EXPECT_EQ(*c[0].analytic_vs_fine, 0);
  sweep.predictions[1].throughput = 100 * (1 + 1e-6);
  c = compare_predictors(sweep);
  EXPECT_NEAR(*c[0].coarse_vs_fine, 1e-6, 1e-12);
  EXPECT_GT(c[0].spread, 0);
}

TEST(DisagreementWarning, NamesTheConfigurationAndEveryPredictor) {
  const Sweep sweep = three_configurations();
  const std::vector<PredictorComparison> c = compare_predictors(sweep);
  EXPECT_EQ(disagreement_warning(sweep, c[0]),
            "predictors differ by 25.0% (over 20%) at 8 workers (k=a): fine 100 samples/s, coarse 110 "
            "(+10.0% vs fine), analytic 125 (+25.0% vs fine)");
  EXPECT_NE(disagreement_warning(sweep, c[1]).find("(k=b)"), std::string::npos);
  EXPECT_EQ(disagreement_warning(sweep, c[2]), "");
}

TEST(DisagreementWarning, AsynchronousWorkersGetTheNoteOnPhases) {
  // Fine measured staleness (an asynchronous parameter server) and coarse is 30% off: the warning
  // says the step depends on the workers' phases. Synchronous (no staleness), or coarse within
  // 10%, it does not.
  Sweep sweep{.scenario = "s", .inputs = {}, .predictions = {result(Predictor::Fine, 4, 100),
                                                              result(Predictor::Coarse, 4, 130)}};
  sweep.predictions[0].staleness.pushes = 40;
  std::vector<PredictorComparison> c = compare_predictors(sweep);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_NE(disagreement_warning(sweep, c[0]).find("training.ps.async_start"), std::string::npos);
  // With coarse's range (AsyncPhases), the note gives it.
  sweep.predictions[1].async_phases = {.out_of_step = 0.19, .convoy = 0.26};
  c = compare_predictors(sweep);
  EXPECT_NE(disagreement_warning(sweep, c[0]).find("(190 ms a step; 260 ms in a convoy"), std::string::npos)
      << disagreement_warning(sweep, c[0]);
  sweep.predictions[0].staleness.pushes = 0;
  c = compare_predictors(sweep);
  EXPECT_EQ(disagreement_warning(sweep, c[0]).find("async_start"), std::string::npos);
  sweep.predictions[0].staleness.pushes = 40;
  sweep.predictions.push_back(result(Predictor::Analytic, 4, 150));
  sweep.predictions[1].throughput = 105;
  c = compare_predictors(sweep);
  ASSERT_TRUE(c[0].disagrees());
  EXPECT_EQ(disagreement_warning(sweep, c[0]).find("async_start"), std::string::npos);
}

TEST(WriteComparisonTable, AColumnPairPerPredictorAndTheSpreadMarkedWhereTheyDisagree) {
  std::ostringstream out;
  write_comparison_table(out, three_configurations());
  const std::string table = out.str();
  EXPECT_EQ(table.rfind("scenario: compare\n", 0), 0u) << table;
  for (const char* heading : {"k", "workers", "fine step", "coarse step", "analytic step", "fine samples/s",
                              "coarse samples/s", "analytic samples/s", "coarse vs fine", "analytic vs fine",
                              "spread"}) {
    EXPECT_NE(table.find(heading), std::string::npos) << heading << "\n" << table;
  }
  std::istringstream lines(table);
  std::string line;
  std::getline(lines, line);  // scenario
  std::getline(lines, line);  // header
  std::vector<std::string> rows;
  while (std::getline(lines, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 3u) << table;
  // k=a: fine 8 x 32 / 100 = 2.56 s, coarse +10.0%, analytic +25.0%, spread 25.0% marked.
  for (const char* cell : {"a ", "2.56 s", " 100 ", " 110 ", " 125 ", "+10.0%", "+25.0%", "25.0% (over 20%)"}) {
    EXPECT_NE(rows[0].find(cell), std::string::npos) << cell << "\n" << table;
  }
  EXPECT_NE(rows[1].find("-5.00%"), std::string::npos) << table;
  EXPECT_NE(rows[1].find("(over 20%)"), std::string::npos) << table;
  EXPECT_EQ(rows[2].find("(over 20%)"), std::string::npos) << table;
  EXPECT_NE(rows[2].find("16.7%"), std::string::npos) << table;
}

TEST(WriteJson, ComparisonsCarryEveryPredictor) {
  std::ostringstream out;
  write_json(out, three_configurations());
  std::string json = out.str();
  std::erase_if(json, [](char ch) { return ch == ' ' || ch == '\n'; });
  EXPECT_NE(json.find("\"comparisons\":[{\"config\":{\"k\":\"a\"},\"workers\":8,\"step_time_s\":{\"fine\":2.56,"
                      "\"coarse\":"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"throughput_samples_per_s\":{\"fine\":100,\"coarse\":110,\"analytic\":125}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"spread\":0.25,\"disagree\":true,\"warning\":\"predictorsdifferby25.0%"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"disagree\":false,\"warning\":null}"), std::string::npos) << json;
}

}  // namespace predictor_comparison_test
}  // namespace
}  // namespace stepcast::report
