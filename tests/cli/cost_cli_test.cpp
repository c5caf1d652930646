// Money and tokens end to end: predict's table, JSON and CSV give the cost per step, per million
// tokens and of the job; plan ranks by time or cost to train; bad values exit 2 naming the key.
#include <string>

#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace cost_cli_test {  // this file's own names: test files are compiled several to a unit

class CostCli : public CliTest {
 protected:
  std::string scenario() {
    return file(
        "tiny.yaml",
        "name: tiny\n"
        "workload:\n"
        "  transformer: {layers: 4, hidden: 512, ffn_hidden: 2048, heads: 8, kv_heads: 4, vocab: 32000}\n"
        "  seq_len: 1024\n"
        "  precision: bf16\n"
        "  compute_efficiency: 0.4\n"
        "  global_batch: 32\n"
        "  tokens: 1e9\n"
        "cluster:\n"
        "  workers: 16\n"
        "  workers_per_node: 8\n"
        "  nics_per_node: 8\n"
        "  nic_bandwidth: 200Gbps\n"
        "  intra_node: {bandwidth: 300GB/s, latency: 2us}\n"
        // A toy model on a toy 1 GB GPU: the default 1.1 GB outside the allocator would leave no room.
        "  gpu_memory: 1GB\n"
        "  gpu: {peak_flops: 312TFLOPS, memory_bandwidth: 2TB/s, memory_reserved: 100MB}\n"
        "  cost: {gpu_hour: 2.5 USD}\n"
        "training:\n"
        "  scheme: allreduce\n"
        "steps: {warmup: 1, measure: 1}\n");
  }
};

TEST_F(CostCli, PredictGivesCostPerStepPerMillionTokensAndOfTheJob) {
  const std::string csv = path("out/p.csv").string();
  const RunResult text =
      run({"predict", scenario(), "--predictor", "coarse", "--set", "cluster.gpu_memory=80GB"});
  ASSERT_EQ(text.code, 0) << text.describe();
  EXPECT_NE(text.out.find("cost (16 workers, coarse, 2.50 USD per GPU-hour): "), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("USD per million tokens; the job: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("1000000000 tokens ("), std::string::npos) << text.out;

  const RunResult json = run({"predict", scenario(), "--predictor", "coarse", "--set",
                              "cluster.gpu_memory=80GB", "--json", "--csv", csv});
  ASSERT_EQ(json.code, 0) << json.describe();
  const Json doc = parse_json_or_fail(json.out);
  const Json& p = doc["predictions"].array.at(0);
  const Json& cost = p["cost"];
  EXPECT_EQ(cost["currency"].string, "USD");
  EXPECT_EQ(cost["gpu_hour"].number, 2.5);
  // 16 GPUs x 2.5 per GPU-hour = 40 an hour: per step 40 x step time / 3600, the job 40 x its time / 3600.
  const double step = p["step_time_s"].number, job = p["job"]["time_s"].number;
  EXPECT_NEAR(cost["per_step"].number, 40 * step / 3600, 1e-9 * cost["per_step"].number);
  EXPECT_NEAR(cost["job"].number, 40 * job / 3600, 1e-9 * cost["job"].number);
  EXPECT_EQ(p["job"]["tokens"].number, 1e9);
  // 1e9 tokens of 32 sequences of 1024 tokens a step: ceil(30517.6) = 30518 steps.
  EXPECT_EQ(p["job"]["steps"].number, 30518);
  const std::string rows = read_text(csv);
  EXPECT_NE(rows.find(",job_tokens,cost_per_step,cost_per_million_tokens,job_cost"), std::string::npos)
      << rows;
}

TEST_F(CostCli, BadValuesExitTwoNamingTheKey) {
  const RunResult negative = run({"predict", scenario(), "--set", "cluster.cost.gpu_hour=-2"});
  EXPECT_EQ(negative.code, 2) << negative.describe();
  EXPECT_NE(negative.err.find("cluster.cost.gpu_hour"), std::string::npos) << negative.err;
  const RunResult cnn = run({"predict", kExample, "--set", "workload.tokens=1e9"});
  EXPECT_EQ(cnn.code, 2) << cnn.describe();
  EXPECT_NE(cnn.err.find("workload.tokens"), std::string::npos) << cnn.err;
  const RunResult unpriced =
      run({"plan", scenario(), "--gpus", "8", "--rank-by", "cost", "--set", "cluster.cost.gpu_hour=0"});
  EXPECT_EQ(unpriced.code, 2) << unpriced.describe();
  EXPECT_NE(unpriced.err.find("--rank-by"), std::string::npos) << unpriced.err;
  EXPECT_NE(unpriced.err.find("cluster.cost.gpu_hour"), std::string::npos) << unpriced.err;
  const RunResult unknown = run({"plan", scenario(), "--gpus", "8", "--rank-by", "money"});
  EXPECT_EQ(unknown.code, 2) << unknown.describe();
  EXPECT_NE(unknown.err.find("--rank-by"), std::string::npos) << unknown.err;
}

TEST_F(CostCli, PlanRanksByCostToTrainAndNamesTheBestOfAllCounts) {
  const RunResult r =
      run({"plan", scenario(), "--gpus", "8,16", "--top", "2", "--rank-by", "cost", "--json"}, 120);
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  EXPECT_EQ(doc["rank_by"].string, "cost");
  ASSERT_TRUE(doc["best"].is_object());
  double best = 0;
  bool first = true;
  for (const Json& count : doc["counts"].array) {
    const auto& ranked = count["ranked"].array;
    ASSERT_FALSE(ranked.empty());
    for (std::size_t i = 1; i < ranked.size(); ++i) {
      EXPECT_LE(ranked[i - 1]["prediction"]["cost"]["job"].number,
                ranked[i]["prediction"]["cost"]["job"].number);
    }
    const double cost = ranked[0]["prediction"]["cost"]["job"].number;
    if (first || cost < best) {
      best = cost;
      EXPECT_EQ(doc["best"]["gpus"].number, count["gpus"].number);
    }
    first = false;
  }
  const RunResult text = run({"plan", scenario(), "--gpus", "8,16", "--top", "2", "--rank-by", "cost"}, 120);
  ASSERT_EQ(text.code, 0) << text.describe();
  EXPECT_NE(text.out.find("ranked by fine (cost to train)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("cost to train (USD)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("best of all counts by cost to train: "), std::string::npos) << text.out;
}

}  // namespace cost_cli_test
}  // namespace
}  // namespace stepcast_cli_test
