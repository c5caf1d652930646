// `stepcast plan` end to end: the ranked table, JSON with the counts by reason and the ranked
// rows, CSV; bad input exits 2 naming the flag or the file, line and key; under mpirun with more
// than one rank it refuses rather than answer twice.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace plan_cli_test {  // this file's own names: test files are compiled several to a unit

class PlanCli : public CliTest {
 protected:
  std::string scenario(const std::string& extra = "") {
    return file(
        "tiny.yaml",
        "name: tiny\n"
        "workload:\n"
        "  transformer: {layers: 4, hidden: 512, ffn_hidden: 2048, heads: 8, kv_heads: 4, vocab: 32000}\n"
        "  seq_len: 1024\n"
        "  precision: bf16\n"
        "  compute_efficiency: 0.4\n"
        "  global_batch: 32\n"
        "cluster:\n"
        "  workers: 16\n"
        "  workers_per_node: 8\n"
        "  nics_per_node: 8\n"
        "  nic_bandwidth: 200Gbps\n"
        "  intra_node: {bandwidth: 300GB/s, latency: 2us}\n"
        // A toy model on a toy 1 GB GPU: the default 1.1 GB outside the allocator would leave no room.
        "  gpu_memory: 1GB\n"
        "  gpu: {peak_flops: 312TFLOPS, memory_bandwidth: 2TB/s, memory_reserved: 100MB}\n"
        "training:\n"
        "  scheme: allreduce\n"
        "steps: {warmup: 1, measure: 1}\n" +
            extra);
  }
};

TEST_F(PlanCli, TableRanksTheLayoutsAndSaysWhatWasRejected) {
  const RunResult r = run({"plan", scenario(), "--gpus", "8,16", "--top", "3"}, 120);
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("8 GPUs: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("16 GPUs: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("layouts considered"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("do not fit in GPU memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("closest miss: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank  layout"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tokens/s per GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank these 3 layouts"), std::string::npos) << r.out;
}

// A byte quantity: a key ending in _bytes or starting with bytes_, "bytes", or any member of an
// object whose key ends in _bytes (memory_per_worker_bytes.reserved).
bool is_byte_key(std::string_view key) {
  return key == "bytes" || key.starts_with("bytes_") || key.ends_with("_bytes");
}

/// Every number of `v` under a byte key (`bytes`: `v` is under one), with its path.
void byte_numbers(const Json& v, const std::string& path, bool bytes,
                  std::vector<std::pair<std::string, const Json*>>& out) {
  if (v.is_number() && bytes) out.emplace_back(path, &v);
  for (std::size_t i = 0; i < v.array.size(); ++i)
    byte_numbers(v.array[i], path + "[" + std::to_string(i) + "]", false, out);
  for (const auto& [key, member] : v.object)
    byte_numbers(member, path + "." + key, bytes || is_byte_key(key), out);
}

// Bytes are whole numbers in the JSON, written as integers. The reserved memory is allocated / (1 -
// overhead) plus the reserve: at an overhead of 0.3, 621,292,032 allocated bytes reserve
// 987,560,045.71, which used to print with its fraction.
TEST_F(PlanCli, JsonBytesAreWholeNumbers) {
  const RunResult r = run({"plan", scenario(), "--gpus", "16", "--top", "2", "--json", "--set",
                           "cluster.gpu.allocator_overhead=0.3"},
                          120);
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  std::vector<std::pair<std::string, const Json*>> numbers;
  byte_numbers(doc, "", false, numbers);
  std::vector<std::string> seen;
  for (const auto& [path, value] : numbers) {
    EXPECT_TRUE(!value->number_text.empty() &&
                value->number_text.find_first_not_of("0123456789") == std::string::npos)
        << path << " = " << value->number_text;
    seen.push_back(path.substr(path.rfind('.') + 1));
  }
  // The plan's own fields and the predictions' (memory, bytes sent, links).
  for (const char* key : {"memory_reserved_bytes", "memory_per_gpu_bytes", "gpu_memory_bytes", "reserved",
                          "allocated", "bytes_sent", "bytes_received", "bytes"}) {
    EXPECT_NE(std::find(seen.begin(), seen.end(), key), seen.end()) << key << " not in the JSON\n" << r.out;
  }
}

TEST_F(PlanCli, JsonGivesTheCountsByReasonAndTheRankedRows) {
  const std::string csv = path("out/plan.csv").string();
  const RunResult r = run({"plan", scenario(), "--gpus", "16", "--top", "2", "--json", "--csv", csv}, 120);
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  const double considered = doc["layouts_considered"].number;
  const Json& rejected = doc["rejected"];
  EXPECT_GT(rejected["does_not_fit"].number, 0);
  EXPECT_EQ(considered,
            doc["layouts_fitting"].number + rejected["invalid"].number + rejected["does_not_fit"].number);
  const Json& count = doc["counts"].array.at(0);
  EXPECT_EQ(count["gpus"].number, 16);
  EXPECT_TRUE(count["closest_miss"].is_object());
  EXPECT_GT(count["closest_miss"]["memory_reserved_bytes"].number,
            count["closest_miss"]["gpu_memory_bytes"].number);
  const Json& ranked = count["ranked"];
  ASSERT_EQ(ranked.array.size(), 2u);
  EXPECT_EQ(ranked.array[0]["rank"].number, 1);
  EXPECT_EQ(ranked.array[0]["prediction"]["predictor"].string, "fine");
  EXPECT_TRUE(ranked.array[0]["config"].has("training.parallel.tensor"));
  EXPECT_GE(ranked.array[0]["prediction"]["tokens"]["tokens_per_s_per_worker"].number,
            ranked.array[1]["prediction"]["tokens"]["tokens_per_s_per_worker"].number);
  const std::string rows = read_text(csv);
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 3) << rows;  // header + 2 rows
  EXPECT_NE(rows.find("training.parallel.tensor"), std::string::npos);
}

TEST_F(PlanCli, ReportIsAPageLedByTheBestLayoutWithTheCounts) {
  const std::string page = path("out/plan.html").string();
  const RunResult r =
      run({"plan", scenario(), "--gpus", "8,16", "--top", "3", "--json", "--report", page}, 120);
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  const std::string html = read_text(page);
  ASSERT_NE(html.find("</html>"), std::string::npos) << "a whole page";
  // The answer comes first: the best layout (as the JSON names it), before the first chart.
  const std::string best = doc["best"]["label"].string;
  ASSERT_FALSE(best.empty());
  const std::size_t answer = html.find("<b>" + best + "</b>"), chart = html.find("<canvas");
  ASSERT_NE(answer, std::string::npos) << best;
  ASSERT_NE(chart, std::string::npos);
  EXPECT_LT(answer, chart);
  // Per count: the layouts considered and fitting, as the JSON counts them, and each ranked layout.
  for (const Json& count : doc["counts"].array) {
    const std::string line =
        std::to_string(static_cast<long>(count["layouts_considered"].number)) +
        " layouts considered: " + std::to_string(static_cast<long>(count["layouts_fitting"].number)) + " fit";
    EXPECT_NE(html.find(line), std::string::npos) << line;
    for (const Json& row : count["ranked"].array)
      EXPECT_NE(html.find(row["label"].string), std::string::npos);
  }
  EXPECT_NE(html.find("Closest miss"), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-plan-memory\""), std::string::npos);
}

TEST_F(PlanCli, BadInputExitsTwoNamingTheFlagOrTheKey) {
  const RunResult gpus = run({"plan", scenario(), "--gpus", "8,x"});
  EXPECT_EQ(gpus.code, 2) << gpus.describe();
  EXPECT_NE(gpus.err.find("--gpus"), std::string::npos) << gpus.err;

  const RunResult fixed = run({"plan", scenario("plan: {fixed: [cluster.workers]}\n"), "--gpus", "8"});
  EXPECT_EQ(fixed.code, 2) << fixed.describe();
  EXPECT_NE(fixed.err.find("tiny.yaml:19: plan.fixed"), std::string::npos) << fixed.err;

  const RunResult cnn = run({"plan", kExample, "--gpus", "8"});
  EXPECT_EQ(cnn.code, 2) << cnn.describe();
  EXPECT_NE(cnn.err.find("workload.model"), std::string::npos) << cnn.err;
}

TEST_F(PlanCli, MpirunWithThreeRanksAnswersAsASerialRunByteForByte) {
#ifndef STEPCAST_TEST_MPI
  GTEST_SKIP() << "built without MPI";
#else
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no mpirun on PATH (openmpi-bin)";
  // Two counts, a top k that three ranks split unevenly, and more fitting layouts than one coarse
  // batch, so the ranks share batches, prune alike and send rows to rank 0.
  const std::vector<std::string> args{"plan", scenario(), "--gpus", "8,16", "--top", "7", "--json"};
  const RunResult serial = run(args);
  ASSERT_EQ(serial.code, 0) << serial.describe();
  const std::string out = path("mpi.out").string(), err = path("mpi.err").string();
  std::string line = "cd " + shell_quote(kSourceDir.string()) +
                     " && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 300 mpirun "
                     "--oversubscribe -np 3 " +
                     shell_quote(kBinary);
  for (const std::string& a : args) line.append(" ").append(shell_quote(a));
  line += " >" + shell_quote(out) + " 2>" + shell_quote(err);
  ASSERT_EQ(std::system(line.c_str()), 0) << read_text(err);
  EXPECT_EQ(read_text(out), serial.out);  // one answer (rank 0's), the serial one
  const Json doc = parse_json_or_fail(serial.out);
  double fitting = 0;
  for (const Json& count : doc["counts"].array) fitting = std::max(fitting, count["layouts_fitting"].number);
  EXPECT_GT(fitting, 256) << "more than one coarse batch";
#endif
}

}  // namespace plan_cli_test
}  // namespace
}  // namespace stepcast_cli_test
