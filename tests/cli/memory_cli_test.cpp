// Memory per GPU end to end through `stepcast predict`: what the loss holds (workload.loss) and
// what the GPU reserves beyond the tensors (cluster.gpu.memory_reserved, allocator_overhead) from
// a scenario, --set and --sweep; the table's allocated and reserved columns; "fits" on the
// reserved bytes; bad values exit 2 naming the key. Expected bytes are computed by hand here.
#include <fmt/format.h>

#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace memory_cli_test {  // this file's own names: test files are compiled several to a unit

using MemoryCli = CliTest;

// Llama 3 8B (128,256-token vocabulary, 8192 tokens a sequence), one sequence per GPU, bf16,
// FSDP over 8 GPUs. T V = 8192 x 128,256 = 1,050,673,152 logits.
constexpr const char* kLlama =
    "name: llama\n"
    "workload:\n"
    "  model: llama3-8b\n"
    "  achieved_flops: 400TFLOPS\n"
    "  precision: bf16\n"
    "  batch_per_worker: 1\n"
    "cluster: {workers: 8, workers_per_node: 8, gpu_memory: 80GB}\n"
    "training: {scheme: fsdp}\n";

const Json& memory_of(const Json& prediction) { return prediction["memory_per_worker_bytes"]; }

TEST_F(MemoryCli, ReservedIsThePoolPlusTheReserveOncePerGpuAtEveryScale) {
  const std::string scenario = file("llama.yaml", kLlama);
  RunResult r = run({"predict", scenario, "--workers", "8,64", "--set", "cluster.gpu.memory_reserved=2GiB",
                     "--set", "cluster.gpu.allocator_overhead=0.2", "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  const auto& p = doc["predictions"].array;
  ASSERT_EQ(p.size(), 2u);
  for (const Json& prediction : p) {
    const Json& m = memory_of(prediction);
    const double allocated = m["allocated"].number;
    EXPECT_EQ(allocated, m["total"].number);
    // A pool of which 20% holds no tensor, and 2 GiB = 2,147,483,648 bytes once per GPU; the JSON
    // gives whole bytes (half a byte of rounding).
    EXPECT_NEAR(m["reserved"].number, allocated / 0.8 + 2147483648.0, 0.5 + 1e-12 * allocated);
  }
  // FSDP shards the model states over more GPUs: less allocated, the same reserve.
  EXPECT_LT(memory_of(p[1])["allocated"].number, memory_of(p[0])["allocated"].number);
}

TEST_F(MemoryCli, TableShowsAllocatedAndReservedAndFitsUsesReserved) {
  const std::string scenario = file("llama.yaml", kLlama);
  RunResult j = run({"predict", scenario, "--json"});
  ASSERT_EQ(j.code, 0) << j.describe();
  const double allocated =
      memory_of(parse_json_or_fail(j.out)["predictions"].array.at(0))["allocated"].number;
  // A GPU with 0.5 GB more than the tensors: the defaults' pool (allocated / 0.9) and 1.1 GB
  // reserve do not fit in it.
  const std::string gpu = fmt::format("cluster.gpu_memory={:.0f}B", allocated + 0.5e9);
  RunResult r = run({"predict", scenario, "--set", gpu});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("allocated per GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reserved per GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("does not fit: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(does not fit)"), std::string::npos) << r.out;
  RunResult no_reserve = run({"predict", scenario, "--set", gpu, "--set", "cluster.gpu.memory_reserved=0B",
                              "--set", "cluster.gpu.allocator_overhead=0", "--json"});
  ASSERT_EQ(no_reserve.code, 0) << no_reserve.describe();
  const Json q_doc = parse_json_or_fail(no_reserve.out);
  const Json& q = q_doc["predictions"].array.at(0);
  EXPECT_TRUE(q["fits"].boolean);
  EXPECT_EQ(memory_of(q)["reserved"].number, memory_of(q)["allocated"].number);
  RunResult reserved = run({"predict", scenario, "--set", gpu, "--json"});
  ASSERT_EQ(reserved.code, 0) << reserved.describe();
  EXPECT_FALSE(parse_json_or_fail(reserved.out)["predictions"].array.at(0)["fits"].boolean);
}

TEST_F(MemoryCli, SweptLossModesChangeTheActivationPeakByTheLogitsBytes) {
  const std::string scenario = file("llama.yaml", kLlama);
  RunResult r =
      run({"predict", scenario, "--sweep", "workload.loss=fp32_logits,fp32_in_place,chunked", "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  const auto& p = doc["predictions"].array;
  ASSERT_EQ(p.size(), 3u);
  const double fp32 = memory_of(p[0])["activations"].number;
  // Start of the backward: 12 T V = 12,608,077,824 bytes (fp32_logits) against Megatron's
  // in-place 6 T V = 6,304,038,912.
  EXPECT_DOUBLE_EQ(fp32 - memory_of(p[1])["activations"].number, 6304038912.0);
  // chunked: 4 T h + 14 T V / 8 = 134,217,728 + 1,838,678,016 = 1,972,895,744 bytes.
  EXPECT_DOUBLE_EQ(fp32 - memory_of(p[2])["activations"].number, 12608077824.0 - 1972895744.0);
}

TEST_F(MemoryCli, SweptReserveAddsItsDifferenceOnce) {
  const std::string scenario = file("llama.yaml", kLlama);
  RunResult r = run({"predict", scenario, "--sweep", "cluster.gpu.memory_reserved=1GB,3GB", "--csv",
                     path("m.csv").string()});
  ASSERT_EQ(r.code, 0) << r.describe();
  RunResult j = run({"predict", scenario, "--sweep", "cluster.gpu.memory_reserved=1GB,3GB", "--json"});
  ASSERT_EQ(j.code, 0) << j.describe();
  const Json doc = parse_json_or_fail(j.out);
  const auto& p = doc["predictions"].array;
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(memory_of(p[0])["allocated"].number, memory_of(p[1])["allocated"].number);
  EXPECT_NEAR(memory_of(p[1])["reserved"].number - memory_of(p[0])["reserved"].number, 2e9, 1e-3);
  const std::string csv = read_text(path("m.csv"));
  EXPECT_NE(csv.find(",memory_per_worker_bytes,memory_reserved_bytes,gpu_memory_bytes,fits,"),
            std::string::npos)
      << csv;
}

TEST_F(MemoryCli, BadReserveAndLossValuesExitTwoNamingTheKey) {
  const std::string scenario = file("llama.yaml", kLlama);
  for (const auto& [args, key] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--set", "cluster.gpu.memory_reserved=1000000"}, "cluster.gpu.memory_reserved"},
           {{"--set", "cluster.gpu.memory_reserved=-1GB"}, "cluster.gpu.memory_reserved"},
           {{"--set", "cluster.gpu.allocator_overhead=1"}, "cluster.gpu.allocator_overhead"},
           {{"--set", "cluster.gpu.allocator_overhead=-0.1"}, "cluster.gpu.allocator_overhead"},
           {{"--sweep", "cluster.gpu.allocator_overhead=0.1,1.5"}, "cluster.gpu.allocator_overhead"},
           {{"--sweep", "cluster.gpu.memory_reserved=1GB,2"}, "cluster.gpu.memory_reserved"},
           {{"--set", "workload.loss=fp16_logits"}, "workload.loss"}}) {
    std::vector<std::string> command{"predict", scenario};
    command.insert(command.end(), args.begin(), args.end());
    RunResult r = run(command);
    EXPECT_EQ(r.code, 2) << r.describe();
    EXPECT_NE(r.err.find(key), std::string::npos) << r.describe();
  }
}

}  // namespace memory_cli_test
}  // namespace
}  // namespace stepcast_cli_test
