// End-to-end tests of --version, --help, `collective`, `zoo` and `options`.
#include <cmath>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace commands_cli_test {  // this file's own names: test files are compiled several to a unit

using CommandsCli = CliTest;

TEST_F(CommandsCli, VersionPrintsAVersion) {
  RunResult r = run({"--version"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(stepcast \d+\.\d+\.\d+)"))) << r.out;
}

TEST_F(CommandsCli, HelpOnEverySubcommandExitsZero) {
  const std::vector<std::vector<std::string>> commands = {
      {"--help"},           {"predict", "--help"},     {"collective", "--help"},
      {"zoo", "--help"},    {"zoo", "list", "--help"}, {"zoo", "show", "--help"},
      {"options", "--help"}};
  for (const auto& args : commands) {
    RunResult r = run(args);
    EXPECT_EQ(r.code, 0) << r.describe();
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << r.describe();
  }
}

TEST_F(CommandsCli, NoSubcommandOrUnknownSubcommandIsBadInput) {
  for (const auto& args : std::vector<std::vector<std::string>>{{}, {"bogus"}, {"zoo"}, {"predict"}}) {
    RunResult r = run(args);
    EXPECT_EQ(r.code, 2) << r.describe();
  }
}

TEST_F(CommandsCli, CollectiveRingAllReduceMatchesTheFormula) {
  // The links' ring, asked for: naming ring alone now gets NCCL's protocol model (issue 30).
  RunResult r = run({"collective", "--op", "allreduce", "--algorithm", "ring", "--protocol", "links", "--size",
                     "100MB", "--workers", "64", "--nic-bandwidth", "100Gbps", "--latency", "2us", "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  ASSERT_TRUE(doc["time_s"].is_number()) << r.out;
  const double n = 64, size = 100e6;
  const double expected = 2 * (n - 1) * (2e-6 + size / (n * 12.5e9));
  const double time = doc["time_s"].number;
  EXPECT_NEAR(time, expected, 0.01 * expected);
  const double algbw = doc["algbw_GBps"].number;
  const double busbw = doc["busbw_GBps"].number;
  EXPECT_NEAR(algbw, size / time / 1e9, 1e-6 * algbw);
  EXPECT_NEAR(busbw, algbw * 2 * (n - 1) / n, 1e-6 * busbw);
  EXPECT_EQ(doc["workers"].number, 64);
  EXPECT_EQ(doc["size_bytes"].number, size);
  EXPECT_EQ(doc["op"].string, "allreduce");
  EXPECT_EQ(doc["algorithm"].string, "ring");
}

// --set cluster.collective_regimes reaches `collective`: the JSON names the regime the size falls
// in, and the time is the ring's closed form with that regime's latency and bandwidth.
TEST_F(CommandsCli, CollectiveRunsInTheRegimeOfItsSize) {
  const std::vector<std::string> base{
      "collective",
      "--workers",
      "16",
      "--nic-bandwidth",
      "400GB/s",
      "--latency",
      "2us",
      "--set",
      "cluster.collective_regimes=0B 4us 17GB/s, 1MiB 5us 38GB/s, 32MiB 30us 343GB/s",
      "--json"};
  for (const auto& [size, from, a, b] :
       {std::tuple{"4MiB", 1048576.0, 5e-6, 38e9}, std::tuple{"64MiB", 33554432.0, 30e-6, 343e9},
        std::tuple{"512KiB", 0.0, 4e-6, 17e9}}) {
    SCOPED_TRACE(size);
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--size", size});
    RunResult r = run(args);
    ASSERT_EQ(r.code, 0) << r.describe();
    const Json doc = parse_json_or_fail(r.out);
    ASSERT_TRUE(doc["regime"]["from_bytes"].is_number()) << r.out;
    EXPECT_EQ(doc["regime"]["from_bytes"].number, from);
    const double bytes = doc["size_bytes"].number, n = 16;
    const double expected = 2 * (n - 1) * (a + bytes / (n * b));
    EXPECT_NEAR(doc["time_s"].number, expected, 1e-6 * expected);
  }
  RunResult plain = run({"collective", "--size", "4MiB", "--workers", "16", "--json"});
  ASSERT_EQ(plain.code, 0) << plain.describe();
  const Json doc = parse_json_or_fail(plain.out);
  ASSERT_TRUE(doc.has("regime")) << plain.out;
  EXPECT_EQ(doc["regime"].type, Json::Type::Null) << plain.out;
}

TEST_F(CommandsCli, CollectiveTableOutput) {
  RunResult r = run({"collective", "--size", "100MB", "--workers", "8"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("algbw"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("busbw"), std::string::npos) << r.out;
}

TEST_F(CommandsCli, ZooListHasTheNineteenModels) {
  RunResult r = run({"zoo", "list"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const std::vector<std::string> lines = split_lines(r.out);
  ASSERT_EQ(lines.size(), 20u) << r.out;  // header + 19 models
  for (const char* model :
       {"alexnet", "vgg16", "resnet50", "resnet101", "resnet152", "inception3", "bert-base", "bert-large",
        "gpt2", "gpt2-xl", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b",
        "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"}) {
    bool found = false;
    for (size_t i = 1; i < lines.size(); ++i)
      found = found || lines[i].rfind(std::string(model) + " ", 0) == 0;
    EXPECT_TRUE(found) << model;
  }
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"((^|\n)resnet50\s+25557032\s)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"((^|\n)mixtral-8x7b\s+46702792704\s)"))) << r.out;
  // tests/zoo/deepseek_zoo_test.cpp derives this count from DeepSeek-V3's config.json.
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"((^|\n)deepseek-v3\s+671026404352\s)"))) << r.out;
}

TEST_F(CommandsCli, DeepSeekV3PredictsAndSaysItDoesNotFitEightGpus) {
  // DeepSeek-V3's 671B parameters with experts over 8 GPUs of 80 GB: each GPU keeps the
  // attention, the dense blocks and 32 of each block's 256 experts with their gradients and Adam
  // states, far past 80 GB. The prediction runs and says so instead of hiding it.
  const std::string scenario = file("ds.yaml",
                                    "name: ds\n"
                                    "workload:\n"
                                    "  model: deepseek-v3\n"
                                    "  compute_efficiency: 0.4\n"
                                    "  activation_checkpointing: full\n"
                                    "  micro_batch: 1\n"
                                    "  global_batch: 64\n"
                                    "cluster: {workers: 8, workers_per_node: 8, gpu_memory: 80GB,\n"
                                    "          gpu: {peak_flops: 989TFLOPS, memory_bandwidth: 3.35TB/s}}\n"
                                    "training:\n"
                                    "  scheme: fsdp\n"
                                    "  fsdp: {sharding: optimizer}\n"
                                    "  parallel: {expert: 8}\n");
  RunResult r = run({"predict", scenario});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("ep8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("does not fit"), std::string::npos) << r.out;
}

TEST_F(CommandsCli, MoeLayersPicksTheMoeBlocksOfADecoderByShape) {
  // 4 blocks, 8 experts of 32 on a hidden of 64 (3 x 64 x 32 = 6144 each) or a dense SwiGLU of
  // 256 (49,152): "every 2" makes blocks 0 and 2 MoE; blocks 1 and 3 dense.
  const std::string scenario =
      file("moe.yaml",
           "workload:\n"
           "  transformer: {layers: 4, hidden: 64, ffn_hidden: 256, heads: 4, vocab: 1000,\n"
           "                experts: 8, top_k: 2, expert_ffn_hidden: 32,\n"
           "                moe_layers: every 2}\n"
           "  seq_len: 16\n"
           "  step_time: 1s\n"
           "cluster: {workers: 2}\n");
  RunResult r = run({"predict", scenario, "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  // Embeddings and head 2 x 64,000, final norm 64, 4 attentions of 4 x 64 x 64 and 2 norms of
  // 64, 2 MoE MLPs of 64 x 8 + 8 x 6144, 2 dense of 49,152: 128,064 + 66,048 + 99,328 + 98,304.
  // Data parallelism keeps them whole on each worker, 4 bytes each (fp32).
  const Json doc = parse_json_or_fail(r.out);
  EXPECT_EQ(doc["predictions"].array.at(0)["memory_per_worker_bytes"]["parameters"].number, 4.0 * 391'744);
}

TEST_F(CommandsCli, ZooShowPrintsTheParameterCount) {
  RunResult r = run({"zoo", "show", "vgg16"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("138357544"), std::string::npos) << r.out;
}

TEST_F(CommandsCli, ZooShowPrintsPerTokenFlopsOfADecoder) {
  RunResult r = run({"zoo", "show", "llama2-7b"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("6738415616"), std::string::npos) << r.out;
  // Active parameters: all but the 32000 x 4096 embedding lookup.
  EXPECT_NE(r.out.find("6607343616 active parameters"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a sample is 4096 tokens"), std::string::npos) << r.out;
}

TEST_F(CommandsCli, ZooShowUnknownModelIsBadInput) {
  RunResult r = run({"zoo", "show", "nope"});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(CommandsCli, OptionsListsTheScenarioKeys) {
  RunResult r = run({"options"});
  ASSERT_EQ(r.code, 0) << r.describe();
  for (const char* key : {"cluster.nic_bandwidth", "training.ps.count", "cluster.workers", "workload.model",
                          "workload.step_time", "training.allreduce.bucket_size", "predictor", "seed"}) {
    EXPECT_TRUE(std::regex_search(r.out, std::regex(std::string("(^|\n)") + key + " "))) << key;
  }
}

TEST_F(CommandsCli, OptionsPointsAtCommandsThatExist) {
  // Descriptions that name a stepcast subcommand (`stepcast X ...`) must name one that --help lists.
  RunResult help = run({"--help"});
  ASSERT_EQ(help.code, 0) << help.describe();
  const size_t listed_at = help.out.find("Subcommands:");
  ASSERT_NE(listed_at, std::string::npos) << help.out;
  const std::string listed = help.out.substr(listed_at);
  RunResult r = run({"options"});
  ASSERT_EQ(r.code, 0) << r.describe();
  std::smatch m;
  std::string rest = r.out;
  const std::regex mention(R"(`stepcast ([a-z]+)[^`]*`)");
  while (std::regex_search(rest, m, mention)) {
    EXPECT_TRUE(std::regex_search(listed, std::regex("\\n  " + m[1].str() + " ")))
        << "`stepcast options` mentions `stepcast " << m[1].str() << "`, which is not a subcommand:\n"
        << help.out;
    rest = m.suffix();
  }
}

}  // namespace commands_cli_test
}  // namespace
}  // namespace stepcast_cli_test
