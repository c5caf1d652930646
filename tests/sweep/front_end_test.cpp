// The library calls behind `stepcast calibrate nccl-tests`, `calibrate gemm` and `export`
// (sweep/calibrate.hpp, sweep/export.hpp), which the command and the Python module both call:
// the closed form's fit comes back, errors name the option in the caller's spelling
// (option_name) with the same message, and export returns one file per rank as written.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>

#include "stepcast/error.hpp"
#include "stepcast/report/chakra_export.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/sweep/calibrate.hpp"
#include "stepcast/sweep/export.hpp"
#include "stepcast/units.hpp"

namespace stepcast::sweep {
namespace {
namespace front_end_test {  // this file's own names: test files are compiled several to a unit

namespace fs = std::filesystem;

const std::string kSource = STEPCAST_SOURCE_DIR;

fs::path temp_dir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("stepcast_front_end_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string write(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

/// A 4-rank nccl-tests sweep from a = 5 us per ring step and B = 10 GB/s: t = 6 a + 1.5 S / B.
std::string ring_log() {
  std::string text;
  for (const double size : {8.0, 1048576.0, 16777216.0, 1073741824.0}) {
    const double us = 30 + 1.5 * size / 1e4;
    text += fmt::format("{:>12} {:>12} float sum -1 {:.4f} 0 0 0 {:.4f} 0 0 0\n", size, size / 4, us, us);
  }
  return text;
}

NcclTestsRequest nccl_request(const std::string& log, int workers, int workers_per_node = 1) {
  NcclTestsRequest r;
  r.log = log;
  r.workers = workers;
  r.workers_per_node = workers_per_node;
  return r;
}

GemmRequest gemm_request(const std::string& table, const std::string& output = "") {
  GemmRequest r;
  r.table = table;
  r.output = output;
  return r;
}

std::string dashed(std::string_view option) {
  std::string flag = "--" + std::string(option);
  for (char& c : flag) {
    if (c == '_') c = '-';
  }
  return flag;
}

/// The key and message of the Error `fn` throws.
template <class Fn>
std::pair<std::string, std::string> error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return {e.where().key, e.message()};
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(FrontEnd, CalibrateNcclTestsFitsTheClosedForm) {
  const fs::path dir = temp_dir("nccl");
  NcclTestsRequest r = nccl_request(write(dir / "ar.log", ring_log()), 4, 2);
  r.output = (dir / "keys" / "c.yaml").string();
  const NcclTestsCalibration c = calibrate_nccl_tests(r);
  std::ostringstream json;
  write_json(json, c);
  EXPECT_NE(json.str().find("\"median_error\": 0,"), std::string::npos) << json.str();
  EXPECT_FALSE(c.suggestion);  // exact: nothing better to suggest
  // The keys written (6 significant digits) are the closed form's a and B.
  std::ifstream in(r.output);
  const std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(yaml.find("link_latency: 5us"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("nic_bandwidth: 10GB/s"), std::string::npos) << yaml;
}

TEST(FrontEnd, CalibrateNcclTakesTheNicsLineRateAsGiven) {
  // --nic-bandwidth alone selects --fit nccl and keeps B at the given rate (not fitted).
  const fs::path dir = temp_dir("line_rate");
  NcclTestsRequest r = nccl_request(write(dir / "ar.log", ring_log()), 4, 2);
  r.nic_bandwidth = "200Gbps";
  r.output = (dir / "c.yaml").string();
  (void)calibrate_nccl_tests(r);
  std::ifstream in(r.output);
  const std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(yaml.find("--fit nccl"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("nic_bandwidth: 25GB/s"), std::string::npos) << yaml;
}

TEST(FrontEnd, CalibrateErrorsNameTheOptionOfTheCaller) {
  const fs::path dir = temp_dir("names");
  const std::string log = write(dir / "ar.log", ring_log());
  for (const auto& [change, option] :
       std::initializer_list<std::pair<void (*)(NcclTestsRequest&), std::string_view>>{
           {[](NcclTestsRequest& r) { r.workers = 1; }, "workers"},
           {[](NcclTestsRequest& r) { r.workers_per_node = 8; }, "workers_per_node"},
           {[](NcclTestsRequest& r) { r.max_regimes = 0; }, "max_regimes"},
           {[](NcclTestsRequest& r) { r.fit = "best"; }, "fit"},
           {[](NcclTestsRequest& r) { r.format = "csv"; }, "format"},
           {[](NcclTestsRequest& r) { r.min_size = "lots"; }, "min_size"},
           {[](NcclTestsRequest& r) { r.nic_bandwidth = "fast"; }, "nic_bandwidth"},
           {[](NcclTestsRequest& r) { r.nic_bandwidth = "1kbps"; }, "nic_bandwidth"},
           {[](NcclTestsRequest& r) {
              r.nic_bandwidth = "25GB/s";
              r.fit = "regimes";
            },
            "nic_bandwidth"},
           {[](NcclTestsRequest& r) { r.output = "/dev/null/x.yaml"; }, "output"}}) {
    NcclTestsRequest plain = nccl_request(log, 4);
    change(plain);
    NcclTestsRequest flags = plain;
    flags.option_name = dashed;
    const auto [plain_key, plain_message] = error_of([&] { (void)calibrate_nccl_tests(plain); });
    const auto [flag_key, flag_message] = error_of([&] { (void)calibrate_nccl_tests(flags); });
    EXPECT_EQ(plain_key, option);
    EXPECT_EQ(flag_key, dashed(option));
    if (option != "workers_per_node") {
      EXPECT_EQ(plain_message, flag_message) << option;
    }
  }
  const auto [key, message] = error_of([&] {
    NcclTestsRequest r = nccl_request(log, 4, 8);
    r.option_name = dashed;
    (void)calibrate_nccl_tests(r);
  });
  EXPECT_EQ(message, "expected an integer in [1, --workers = 4], got 8");
}

TEST(FrontEnd, CalibrateGemmFindsTheCheckBesideTheTable) {
  const fs::path dir = temp_dir("gemm");
  constexpr double kRate = 500e12;
  std::string grid = "m,n,k,dtype,time_us\n";
  for (int m : {1024, 2048}) {
    for (int n : {1024, 2048}) {
      for (int k : {1024, 2048})
        grid += fmt::format("{},{},{},fp16,{:.9g}\n", m, n, k, 2.0 * m * n * k / kRate * 1e6);
    }
  }
  const std::string table = write(dir / "t.csv", grid);
  write(dir / "t-check.csv", fmt::format("m,n,k,dtype,time_us\n1500,1500,1500,fp16,{:.9g}\n",
                                         2.0 * 1500 * 1500 * 1500 / kRate * 1e6));
  std::ostringstream json, text;
  const GemmTableCalibration c = calibrate_gemm_table(gemm_request(table));
  write_json(json, c);
  write_table(text, c);
  EXPECT_NE(json.str().find(fmt::format("\"check_file\": \"{}\"", (dir / "t-check.csv").string())),
            std::string::npos)
      << json.str();
  EXPECT_NE(json.str().find("\"summary\": {\"count\": 1"), std::string::npos) << json.str();
  EXPECT_NE(text.str().find("1 held-back rows: median |error| 0.0%"), std::string::npos) << text.str();
  const auto [key, message] =
      error_of([&] { (void)calibrate_gemm_table(gemm_request(table, "/dev/null/x.yaml")); });
  EXPECT_EQ(key, "output");
}

TEST(FrontEnd, ExportReturnsOneFilePerRankAsWritten) {
  const fs::path dir = temp_dir("export");
  ExportRequest r;
  r.chakra = (dir / "sub" / "job").string();
  r.scenario.scenario = kSource + "/examples/resnet50-ps.yaml";
  r.workers = 3;
  const Export e = export_chakra(r);
  EXPECT_EQ(e.workers, 3);
  ASSERT_GE(e.files.size(), 4u);  // 3 workers and at least one shard
  for (std::size_t i = 0; i < e.files.size(); ++i) {
    EXPECT_EQ(e.files[i].rank, static_cast<int>(i));
    EXPECT_EQ(e.files[i].role, i < 3 ? "worker" : "ps");
    EXPECT_EQ(e.files[i].path, fmt::format("{}.{}.et", r.chakra, i));
    EXPECT_GT(fs::file_size(e.files[i].path), 0u);
  }
  std::ostringstream text;
  write_table(text, e);
  EXPECT_EQ(text.str().rfind("scenario resnet50-ps-sync: ", 0), 0u) << text.str();

  r.network_dims = 9;
  EXPECT_EQ(error_of([&] { (void)export_chakra(r); }).first, "network_dims");
  r.option_name = dashed;
  EXPECT_EQ(error_of([&] { (void)export_chakra(r); }).first, "--network-dims");
  r.network_dims = 1;
  r.scenario.overrides = {"training.scheme=fsdp"};
  EXPECT_EQ(error_of([&] { (void)export_chakra(r); }).first, "training.scheme");
  r.scenario.overrides.clear();
  r.chakra.clear();
  EXPECT_EQ(error_of([&] { (void)export_chakra(r); }).second,
            "expected an output prefix, e.g. --chakra out/job");
}

// An all-reduce rank sends its share of each bucket, not the bucket: over a ring of N ranks,
// 2 (N-1)/N of the gradients each step (reduce-scatter then all-gather), the same on every rank;
// the summary gives the payload.
TEST(FrontEnd, ExportAllReduceRanksSendTheRingsShare) {
  const fs::path dir = temp_dir("export-ring");
  const std::string scenario = kSource + "/examples/vgg16-allreduce.yaml";
  const double gradients =
      scenario::build_workload(scenario::load_scenario(scenario, {"training.allreduce.algorithm=ring"}))
          .parameter_bytes();
  for (const int n : {2, 4, 7}) {
    ExportRequest r;
    r.chakra = (dir / fmt::format("job{}", n)).string();
    r.scenario.scenario = scenario;
    r.scenario.overrides = {"training.allreduce.algorithm=ring"};
    r.workers = n;
    const Export e = export_chakra(r);
    ASSERT_EQ(e.files.size(), static_cast<std::size_t>(n));
    for (const report::ChakraFile& f : e.files) {
      EXPECT_NEAR(f.bytes_sent, 2.0 * (n - 1) / n * gradients, 1e-9 * gradients)
          << n << " ranks, rank " << f.rank;
    }
    EXPECT_NE(e.summary.find(format_bytes(gradients) + " all-reduced per step"), std::string::npos)
        << e.summary;
  }
}

}  // namespace front_end_test
}  // namespace
}  // namespace stepcast::sweep
