// `stepcast calibrate gemm`: a table at one rate predicts held-back shapes between its rows
// exactly (the rate interpolates to itself), the error on held-back rows is what a known
// deviation makes it, the YAML it writes is usable through include:, and bad files are errors
// naming the file and line.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "cli/cli_support.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace {
namespace gemm_calibration_test {  // this file's own names: test files are compiled several to a unit

using stepcast_cli_test::CliTest;
using stepcast_cli_test::read_text;

constexpr double kRate = 500e12;  // FLOP/s everywhere in the table

/// A bf16 grid 1024 .. 8192 in each dimension at kRate, with the comment lines tools/gemm_sweep.py writes.
std::string grid_csv() {
  std::string text =
      "# gpu: NVIDIA H100 80GB HBM3\n# driver: 550.54.15\n# torch: 2.4.0\n# cuda: 12.4\n"
      "# attention_flops: 450.0TFLOPS (causal SDPA)\n# memory_bandwidth: 3000GB/s (4 GiB device copy)\n"
      "m,n,k,dtype,time_us\n";
  for (int m = 1024; m <= 8192; m *= 2) {
    for (int n = 1024; n <= 8192; n *= 2) {
      for (int k = 1024; k <= 8192; k *= 2) {
        text += fmt::format("{},{},{},bf16,{:.9g}\n", m, n, k, 2.0 * m * n * k / kRate * 1e6);
      }
    }
  }
  return text;
}

TEST_F(CliTest, CalibrateGemmChecksHeldBackRowsAndWritesKeys) {
  const std::string table = file("h100-gemm.csv", grid_csv());
  // Two held-back shapes between the rows: one at the table's rate (error 0), one measured 25%
  // slower than that rate says (the table then predicts 1 / 1.25 - 1 = -20%).
  const double exact = 2.0 * 3000 * 5000 * 1500 / kRate * 1e6;
  const double slow = 1.25 * 2.0 * 6000 * 2000 * 7000 / kRate * 1e6;
  const std::string check =
      file("h100-gemm-check.csv", fmt::format("m,n,k,dtype,time_us\n3000,5000,1500,bf16,{:.9g}\n"
                                              "6000,2000,7000,bf16,{:.9g}\n",
                                              exact, slow));
  const std::string out = path("h100-compute.yaml").string();
  const auto r = run({"calibrate", "gemm", table, "--check", check, "-o", out});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("bf16: 64 rows, a grid of m 1024..8192 (4)"), std::string::npos) << r.out;
  EXPECT_TRUE(r.out.find(" +0.0%") != std::string::npos || r.out.find(" -0.0%") != std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("-20.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 held-back rows: median |error| 10.0%, mean 10.0%, max 20.0%"), std::string::npos)
      << r.out;

  // The fragment, included by a scenario, sets compute from shapes on this table and its rates.
  const std::string yaml = read_text(out);
  EXPECT_NE(yaml.find("gemm: h100-gemm.csv"), std::string::npos) << yaml;
  const std::string scenario =
      file("job.yaml", "include: h100-compute.yaml\nworkload:\n  model: llama2-7b\n  precision: bf16\n");
  const auto s = stepcast::scenario::load_scenario(scenario);
  EXPECT_EQ(s.workload.compute, stepcast::scenario::ComputeMethod::Shapes);
  EXPECT_EQ(s.cluster.gemm.rows.size(), 64u);
  EXPECT_DOUBLE_EQ(s.cluster.gpu_attention_flops, 450e12);
  EXPECT_DOUBLE_EQ(s.cluster.gpu_memory_bw, 3000e9);
}

// --json: the same check as one JSON object (report/), through the library call Python makes too.
TEST_F(CliTest, CalibrateGemmJsonGivesTheGridAndEveryHeldBackRow) {
  const std::string table = file("h100-gemm.csv", grid_csv());
  const double slow = 1.25 * 2.0 * 6000 * 2000 * 7000 / kRate * 1e6;  // predicted 1 / 1.25 - 1 = -20%
  const std::string check =
      file("h100-gemm-check.csv", fmt::format("m,n,k,dtype,time_us\n6000,2000,7000,bf16,{:.9g}\n", slow));
  const auto r = run({"calibrate", "gemm", table, "--json"});  // the check found beside the table
  ASSERT_EQ(r.code, 0) << r.describe();
  const stepcast_cli_test::Json doc = stepcast_cli_test::parse_json_or_fail(r.out);
  EXPECT_EQ(doc.at_path("table.file")->string, table);
  EXPECT_EQ(doc["check_file"].string, check);
  ASSERT_EQ(doc.at_path("table.grids")->array.size(), 1u) << r.out;
  EXPECT_EQ(doc.at_path("table.grids")->array[0]["rows"].number, 64);
  EXPECT_EQ(doc.at_path("table.grids")->array[0]["dtype"].string, "bf16");
  EXPECT_DOUBLE_EQ(doc["attention_flops_per_s"].number, 450e12);
  EXPECT_DOUBLE_EQ(doc["memory_bandwidth_Bps"].number, 3000e9);
  ASSERT_EQ(doc["held_back"].array.size(), 1u) << r.out;
  EXPECT_NEAR(doc["held_back"].array[0]["error"].number, -0.2, 1e-9);
  EXPECT_EQ(doc["held_back"].array[0]["line"].number, 2);
  EXPECT_NEAR(doc.at_path("summary.max_error")->number, 0.2, 1e-9);
  EXPECT_EQ(doc["output"].type, stepcast_cli_test::Json::Type::Null);
}

TEST_F(CliTest, CalibrateGemmBadFilesNameFileAndLine) {
  const std::string table = file("t.csv", grid_csv());
  const std::string bad_check = file("c.csv", "m,n,k,dtype,time_us\n1024,1024,1024,bf16,-1\n");
  auto r = run({"calibrate", "gemm", table, "--check", bad_check});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_NE(r.err.find("c.csv:2:"), std::string::npos) << r.describe();
  const std::string other_dtype = file("d.csv", "m,n,k,dtype,time_us\n1024,1024,1024,fp8,3\n");
  r = run({"calibrate", "gemm", table, "--check", other_dtype});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_NE(r.err.find("d.csv:2:"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("no fp8 rows"), std::string::npos) << r.describe();
  const std::string empty = file("e.csv", "");
  r = run({"calibrate", "gemm", empty});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_NE(r.err.find("e.csv"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("empty"), std::string::npos) << r.describe();
}

}  // namespace gemm_calibration_test
}  // namespace
