// `stepcast predict --predictor all`: fine, coarse and analytic side by side, and a warning where
// two of them differ by more than 20%, on scenarios whose agreement or disagreement follows from
// the models themselves (not from how well a heuristic is tuned today).
#include <cmath>
#include <string>
#include <vector>

#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace predictor_all_cli_test {  // this file's own names: test files are compiled several to a unit

using PredictorAllCli = CliTest;

// ResNet-50's gradient as one bucket (1 GB > its 102 MB), a ring over 8 workers at 100 Gbps with
// 1 us per hop, on one switch: the only bucket is ready when the backward pass ends.
std::string one_bucket_ring(const std::string& step_time) {
  return "workload:\n"
         "  model: resnet50\n"
         "  step_time: " + step_time + "\n"
         "cluster:\n"
         "  workers: 8\n"
         "  nic_bandwidth: 100Gbps\n"
         "  link_latency: 1us\n"
         "training:\n"
         "  scheme: allreduce\n"
         "  allreduce:\n"
         "    algorithm: ring\n"
         "    protocol: links\n"  // the links' closed form (naming ring alone gets NCCL's model)
         "    bucket_size: 1GB\n";
}

const Json* comparison_at(const Json& doc, int workers) {
  for (const Json& c : doc["comparisons"].array) {
    if (c["workers"].number == workers) return &c;
  }
  return nullptr;
}

TEST_F(PredictorAllCli, WarnsWhereTheAnalyticBoundAssumesOverlapThatCannotHappen) {
  // Compute C = 14 ms, then the whole gradient in one all-reduce A (about 14.3 ms): fine and
  // coarse cannot overlap them (the bucket exists only once the backward pass is done), so a step
  // is C + A; the analytic bound overlaps every resource perfectly, max(C, A) = A. They differ
  // by C / A, about 98%: the warning, whatever coarse's heuristics become.
  const std::string yaml = file("overlap.yaml", one_bucket_ring("14ms"));
  RunResult r = run({"predict", yaml, "--predictor", "all", "--workers", "2,8"});
  ASSERT_EQ(r.code, 0) << r.describe();
  for (const char* heading : {"fine step", "coarse step", "analytic step", "fine samples/s", "coarse samples/s",
                              "analytic samples/s", "coarse vs fine", "analytic vs fine", "spread"}) {
    EXPECT_NE(r.out.find(heading), std::string::npos) << heading << "\n" << r.out;
  }
  int rows = 0;
  for (const std::string& line : split_lines(r.out)) {
    if (line.find("(over 20%)") != std::string::npos) ++rows;
  }
  EXPECT_EQ(rows, 2) << r.out;
  EXPECT_NE(r.err.find("stepcast: warning: predictors differ by"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at 8 workers:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at 2 workers:"), std::string::npos) << r.err;

  RunResult json = run({"predict", yaml, "--predictor", "all", "--json"});
  ASSERT_EQ(json.code, 0) << json.describe();
  const Json doc = parse_json_or_fail(json.out);
  ASSERT_EQ(doc["predictions"].array.size(), 3u) << json.out;
  const std::vector<std::string> order = {"fine", "coarse", "analytic"};
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(doc["predictions"].array[i]["predictor"].string, order[i]);
  const Json* c = comparison_at(doc, 8);
  ASSERT_NE(c, nullptr) << json.out;
  const double fine = (*c)["step_time_s"]["fine"].number, analytic = (*c)["step_time_s"]["analytic"].number;
  ASSERT_TRUE((*c)["step_time_s"]["coarse"].is_number()) << json.out;
  EXPECT_NEAR(fine, 14e-3 + analytic, 0.01 * fine);  // C + A against max(C, A) = A
  EXPECT_GT((*c)["analytic_vs_fine"].number, 0.9);
  EXPECT_TRUE((*c)["disagree"].boolean);
  EXPECT_NE((*c)["warning"].string.find("at 8 workers"), std::string::npos);
}

TEST_F(PredictorAllCli, NoWarningWhereAllThreeAreTheRingClosedForm) {
  // Compute of 1 us: every predictor's step is the ring all-reduce of the whole gradient,
  // 2 (N-1) (a + S / (N B)) with S = 4 x 25,557,032 bytes (ResNet-50 in fp32), N = 8,
  // B = 12.5 GB/s, a = 1 us: 14 x (1 us + 1.022 ms) = 14.32 ms.
  const std::string yaml = file("agree.yaml", one_bucket_ring("1us"));
  RunResult r = run({"predict", yaml, "--predictor", "all", "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  const Json doc = parse_json_or_fail(r.out);
  const Json* c = comparison_at(doc, 8);
  ASSERT_NE(c, nullptr) << r.out;
  const double closed = 2 * 7 * (1e-6 + 4 * 25557032.0 / (8 * 12.5e9));
  for (const char* predictor : {"fine", "coarse", "analytic"}) {
    EXPECT_NEAR((*c)["step_time_s"][predictor].number, closed, 0.01 * closed) << predictor;
  }
  EXPECT_LT((*c)["spread"].number, 0.01);
  EXPECT_FALSE((*c)["disagree"].boolean);
  EXPECT_TRUE((*c)["warning"].type == Json::Type::Null);

  RunResult table = run({"predict", yaml, "--predictor", "all"});
  ASSERT_EQ(table.code, 0) << table.describe();
  EXPECT_EQ(table.out.find("(over 20%)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("analytic samples/s"), std::string::npos) << table.out;
  EXPECT_TRUE(table.err.empty()) << table.err;
}

TEST_F(PredictorAllCli, ASweepGetsARowPerConfigurationAndTheWarningNamesIt) {
  // At 400 Gbps the all-reduce drops to about 3.6 ms under C = 14 ms: fine C + A = 17.6 ms
  // against the bound max(C, A) = C, 26% apart; at 100 Gbps about 98%.
  const std::string yaml = file("overlap.yaml", one_bucket_ring("14ms"));
  RunResult r = run({"predict", yaml, "--predictor", "all", "--sweep", "cluster.nic_bandwidth=100Gbps,400Gbps"});
  ASSERT_EQ(r.code, 0) << r.describe();
  std::vector<std::string> rows;
  for (const std::string& line : split_lines(r.out)) {
    if (line.rfind("100Gbps", 0) == 0 || line.rfind("400Gbps", 0) == 0) rows.push_back(line);
  }
  ASSERT_EQ(rows.size(), 2u) << r.out;
  EXPECT_NE(r.out.find("cluster.nic_bandwidth"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("at 8 workers (cluster.nic_bandwidth=400Gbps)"), std::string::npos) << r.err;
}

TEST_F(PredictorAllCli, RejectsATraceAndASweptPredictor) {
  const std::string yaml = file("overlap.yaml", one_bucket_ring("14ms"));
  RunResult trace = run({"predict", yaml, "--predictor", "all", "--trace-out", path("t.json").string()});
  EXPECT_EQ(trace.code, 2) << trace.describe();
  EXPECT_NE(trace.err.find("--trace-out"), std::string::npos) << trace.err;
  RunResult swept = run({"predict", yaml, "--predictor", "all", "--sweep", "predictor=fine,coarse"});
  EXPECT_EQ(swept.code, 2) << swept.describe();
  EXPECT_NE(swept.err.find("--predictor"), std::string::npos) << swept.err;
  RunResult unknown = run({"predict", yaml, "--predictor", "every"});
  EXPECT_EQ(unknown.code, 2) << unknown.describe();
}

}  // namespace predictor_all_cli_test
}  // namespace
}  // namespace stepcast_cli_test
