// End-to-end tests of parallel layouts through `stepcast predict`: the table's layout and bubble
// columns and the line that splits exposed communication by dimension, the same in JSON and
// CSV, the warning when a tensor group spans nodes, and a tensor sweep where more tensor
// parallelism holds less per GPU.
#include <fstream>
#include <sstream>

#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace layout_cli_test {  // this file's own names: test files are compiled several to a unit

using LayoutCli = CliTest;

constexpr const char* kThreeD =
    "name: small-3d\n"
    "workload:\n"
    "  transformer: {layers: 8, hidden: 1024, ffn_hidden: 4096, heads: 16, vocab: 32000}\n"
    "  seq_len: 2048\n"
    "  precision: bf16\n"
    "  achieved_flops: 150TFLOPS\n"
    "  micro_batch: 1\n"
    "  global_batch: 16\n"
    "cluster: {workers: 16, workers_per_node: 8, nic_bandwidth: 200Gbps,\n"
    "          intra_node: {bandwidth: 300GB/s, latency: 2us}, gpu_memory: 80GB}\n"
    "training:\n"
    "  parallel: {tensor: 2, pipeline: 2}\n";

TEST_F(LayoutCli, TableJsonAndCsvCarryTheLayoutBubbleAndExposedByDimension) {
  const std::string scenario = file("small.yaml", kThreeD);
  const std::string csv = path("out.csv").string();
  RunResult r = run({"predict", scenario, "--csv", csv});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("layout"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tp2 cp1 pp2 dp4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bubble"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exposed by dimension (tp2 cp1 pp2 dp4): tensor "), std::string::npos) << r.out;
  RunResult j = run({"predict", scenario, "--json"});
  ASSERT_EQ(j.code, 0) << j.describe();
  const Json doc = parse_json_or_fail(j.out);
  const Json& p = doc["predictions"].array.at(0);
  EXPECT_EQ(p["layout"].string, "tp2 cp1 pp2 dp4");
  const double step = p["step_time_s"].number, bubble = p["bubble_fraction"].number;
  EXPECT_GT(bubble, 0);  // two stages, eight micro-batches: a bubble
  EXPECT_LT(bubble, 1);
  const Json& b = p["breakdown_s"];
  // The exposed parts by dimension add up to the exposed communication.
  EXPECT_NEAR(b["tensor"].number + b["context"].number + b["pipeline"].number + b["data"].number,
              b["communication_exposed"].number, 1e-9 * step);
  EXPECT_NEAR(b["compute"].number + b["communication_exposed"].number + b["wait"].number, step, 1e-9 * step);
  EXPECT_GT(b["tensor"].number, 0);
  EXPECT_EQ(b["context"].number, 0);  // no context parallelism
  std::ifstream in(csv);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_NE(header.find(",layout,bubble_fraction,tensor_s,context_s,pipeline_s,data_s"), std::string::npos)
      << header;
  EXPECT_NE(row.find(",\"tp2 cp1 pp2 dp4\","), std::string::npos) << row;
}

TEST_F(LayoutCli, TensorGroupWiderThanANodeWarnsAndRuns) {
  const std::string scenario =
      file("wide.yaml",
           "workload: {model: llama2-7b, achieved_flops: 100TFLOPS, global_batch: 2}\n"
           "cluster: {workers: 16, workers_per_node: 4}\n"
           "training: {parallel: {tensor: 8}}\n");
  RunResult r = run({"predict", scenario, "--predictor", "coarse"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.err.find("warning: training.parallel.tensor: a tensor group of 8 GPUs spans 2 nodes of 4"),
            std::string::npos)
      << r.err;
}

TEST_F(LayoutCli, MoreTensorParallelismHoldsLessPerGpu) {
  const std::string scenario = file("small.yaml", kThreeD);
  RunResult r = run({"predict", scenario, "--sweep", "training.parallel.tensor=1,2,4", "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  const auto& p = doc["predictions"].array;
  ASSERT_EQ(p.size(), 3u);
  // Each rank holds 1/t of its stage's layers and activations: memory falls with t.
  EXPECT_GT(p[0]["memory_per_worker_bytes"]["total"].number, p[1]["memory_per_worker_bytes"]["total"].number);
  EXPECT_GT(p[1]["memory_per_worker_bytes"]["total"].number, p[2]["memory_per_worker_bytes"]["total"].number);
}

}  // namespace layout_cli_test
}  // namespace
}  // namespace stepcast_cli_test
