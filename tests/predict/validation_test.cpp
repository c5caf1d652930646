// Validation on measured data: TensorFlow's published 2017 tf_cnn_benchmarks on one DGX-1
// (8 x P100), models trained with a parameter server on the host CPU. Fitted: nothing but each
// model's measured 1-GPU throughput. Hardware from spec sheets: PCIe gen3 x16 = 16 GB/s, two
// GPUs per PCIe switch (DGX-1 system architecture). Predicted: 2, 4 and 8 GPUs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast {
namespace {

struct Row {
  std::string model;
  int batch = 0;
  int gpus = 0;
  double images_per_s = 0;
};

std::vector<Row> read_dgx1_rows(const std::string& path) {
  std::vector<Row> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("platform", 0) == 0) continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    if (f.size() != 6 || f[0] != "dgx1_p100" || f[1] != "synthetic") continue;
    // The header says these three used parameter_server with the variables on the CPU.
    if (f[2] != "inception3" && f[2] != "resnet50" && f[2] != "resnet152") continue;
    rows.push_back({f[2], std::stoi(f[3]), std::stoi(f[4]), std::stod(f[5])});
  }
  return rows;
}

TEST(Validation, Dgx1ParameterServerOnTheHostFromOneGpu) {
  const std::string path =
      std::string(STEPCAST_SHARED_DATA) + "/tables/tf_cnn_benchmarks_2017_single_node.csv";
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  const std::vector<Row> rows = read_dgx1_rows(path);
  ASSERT_GE(rows.size(), 16u);
  std::map<std::pair<std::string, int>, double> one_gpu;
  for (const Row& r : rows) {
    if (r.gpus == 1) one_gpu[{r.model, r.batch}] = r.images_per_s;
  }
  const std::string yaml = R"(
workload: {model: resnet50, batch_per_worker: 64, single_worker_throughput: 219}
cluster:
  workers: 8
  workers_per_node: 8
  intra_node: {link: pcie, bandwidth: 16GB/s, gpus_per_pcie_switch: 2, latency: 5us}
training:
  scheme: ps
  ps: {count: 1, placement: colocated, order: random}
)";
  std::vector<double> errors;
  for (const Row& r : rows) {
    if (r.gpus == 1) continue;
    const double base = one_gpu.at({r.model, r.batch});
    const scenario::Scenario s = scenario::parse_scenario(
        yaml, "dgx1.yaml",
        {"workload.model=" + r.model, "workload.batch_per_worker=" + std::to_string(r.batch),
         "workload.single_worker_throughput=" + std::to_string(base),
         "cluster.workers=" + std::to_string(r.gpus)});
    const predict::Result p = predict::predict(scenario::build_workload(s), s.cluster, s.scheme, s.options);
    const double error = (p.throughput - r.images_per_s) / r.images_per_s;
    errors.push_back(std::fabs(error));
    std::printf("  %-10s batch %2d  %d GPUs  measured %7.1f  predicted %7.1f img/s  error %+5.1f%%\n",
                r.model.c_str(), r.batch, r.gpus, r.images_per_s, p.throughput, 100 * error);
    EXPECT_LT(std::fabs(error), 0.12) << r.model << " batch " << r.batch << " on " << r.gpus << " GPUs";
  }
  std::sort(errors.begin(), errors.end());
  const double median = errors[errors.size() / 2];
  std::printf("  median |error| %.1f%% over %zu predictions\n", 100 * median, errors.size());
  EXPECT_LT(median, 0.06);
}

}  // namespace
}  // namespace stepcast
