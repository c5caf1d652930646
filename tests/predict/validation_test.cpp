// Validation on measured data: TensorFlow's published 2017 tf_cnn_benchmarks, single machines of
// 8 GPUs training with a parameter server on the host CPU (local_parameter_device=cpu). Fitted:
// nothing but each (model, batch)'s measured 1-GPU throughput. Hardware from spec sheets, never
// from the multi-GPU rows. Predicted: 2, 4 and 8 GPUs. Platforms:
// - dgx1_p100, NVIDIA DGX-1 (8 x P100): PCIe gen3 x16 = 16 GB/s, two GPUs per PCIe switch
//   (DGX-1 system architecture);
// - gce_k80, GCE n1-standard-32-k80x8 (4 Tesla K80 boards = 8 GK210 GPUs): each board holds two
//   GK210 behind its on-board PCIe switch with one PCIe gen3 x16 = 16 GB/s uplink (Tesla K80
//   board specification).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
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
namespace validation_test {  // this file's own names: test files are compiled several to a unit

std::string table_path() {
  return std::string(STEPCAST_SHARED_DATA) + "/tables/tf_cnn_benchmarks_2017_single_node.csv";
}

struct Row {
  std::string model;
  int batch = 0;
  int gpus = 0;
  double images_per_s = 0;
};

/// The synthetic-data rows of `platform` for `models`.
std::vector<Row> read_rows(const std::string& path, const std::string& platform,
                           const std::vector<std::string>& models) {
  std::vector<Row> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("platform", 0) == 0) continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    if (f.size() != 6 || f[0] != platform || f[1] != "synthetic") continue;
    if (std::find(models.begin(), models.end(), f[2]) == models.end()) continue;
    rows.push_back({f[2], std::stoi(f[3]), std::stoi(f[4]), std::stod(f[5])});
  }
  return rows;
}

/// One machine of 8 GPUs on PCIe, `gpus_per_pcie_switch` of them under each PCIe switch whose
/// uplink (PCIe gen3 x16, 16 GB/s each way) they share; one parameter server shard on the host
/// CPU, transfers in random order as TensorFlow's.
std::string ps_on_the_host_yaml(int gpus_per_pcie_switch) {
  return R"(
workload: {model: resnet50, batch_per_worker: 64, single_worker_throughput: 100}
cluster:
  workers: 8
  workers_per_node: 8
  intra_node: {link: pcie, bandwidth: 16GB/s, gpus_per_pcie_switch: )" +
         std::to_string(gpus_per_pcie_switch) + R"(, latency: 5us}
training:
  scheme: ps
  ps: {count: 1, placement: colocated, order: random}
)";
}

struct Prediction {
  Row measured;
  double predicted = 0;  ///< img/s
  double error = 0;      ///< (predicted - measured) / measured
};

/// Predicts every multi-GPU row of `rows` with the fine predictor on the scenario `yaml`, from
/// nothing but the same (model, batch)'s measured 1-GPU throughput; prints each prediction.
std::vector<Prediction> predict_from_one_gpu(const std::vector<Row>& rows, const std::string& yaml,
                                             const std::string& name) {
  std::map<std::pair<std::string, int>, double> one_gpu;
  for (const Row& r : rows) {
    if (r.gpus == 1) one_gpu[{r.model, r.batch}] = r.images_per_s;
  }
  std::vector<Prediction> out;
  for (const Row& r : rows) {
    if (r.gpus == 1) continue;
    const double base = one_gpu.at({r.model, r.batch});
    const scenario::Scenario s = scenario::parse_scenario(
        yaml, name,
        {"workload.model=" + r.model, "workload.batch_per_worker=" + std::to_string(r.batch),
         "workload.single_worker_throughput=" + std::to_string(base),
         "cluster.workers=" + std::to_string(r.gpus)});
    const predict::Result p = predict::predict(scenario::build_workload(s), s.cluster, s.scheme, s.options);
    const double error = (p.throughput - r.images_per_s) / r.images_per_s;
    std::printf("  %-10s batch %3d  %d GPUs  measured %7.1f  predicted %7.1f img/s  error %+5.1f%%\n",
                r.model.c_str(), r.batch, r.gpus, r.images_per_s, p.throughput, 100 * error);
    out.push_back({r, p.throughput, error});
  }
  return out;
}

/// Expects every |error| below `max_error` and their median below `max_median`; prints the median.
void expect_errors_within(const std::vector<Prediction>& predictions, double max_error, double max_median) {
  ASSERT_FALSE(predictions.empty());
  std::vector<double> errors;
  for (const Prediction& p : predictions) {
    errors.push_back(std::fabs(p.error));
    EXPECT_LT(std::fabs(p.error), max_error)
        << p.measured.model << " batch " << p.measured.batch << " on " << p.measured.gpus << " GPUs";
  }
  std::sort(errors.begin(), errors.end());
  const double median = errors[errors.size() / 2];
  std::printf("  median |error| %.1f%% over %zu predictions, largest %.1f%%\n", 100 * median, errors.size(),
              100 * errors.back());
  EXPECT_LT(median, max_median);
}

TEST(Validation, Dgx1ParameterServerOnTheHostFromOneGpu) {
  const std::string path = table_path();
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  // The header says these three used parameter_server with the variables on the CPU.
  const std::vector<Row> rows = read_rows(path, "dgx1_p100", {"inception3", "resnet50", "resnet152"});
  ASSERT_GE(rows.size(), 16u);
  // DGX-1: 8 P100, two per PCIe switch.
  const std::vector<Prediction> p = predict_from_one_gpu(rows, ps_on_the_host_yaml(2), "dgx1.yaml");
  // Regression pin: the errors on this table, median 3.9% and largest 10.0% (ResNet-152, batch 32,
  // 8 GPUs), measured at f750b82 (2026-12-05) as docs/validation.md quotes them; the bounds (set
  // at f47cde4, 2026-11-29) sit two points above, so that a change making the prediction worse is
  // noticed. No accuracy goal is claimed for this data: the bounds are not targets.
  expect_errors_within(p, 0.12, 0.06);
}

TEST(Validation, GceK80ParameterServerOnTheHostFromOneGpu) {
  const std::string path = table_path();
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  // The header says gce ran every model with parameter_server, the variables on the CPU.
  const std::vector<Row> rows =
      read_rows(path, "gce_k80", {"inception3", "resnet50", "resnet152", "alexnet", "vgg16"});
  ASSERT_GE(rows.size(), 20u);
  // n1-standard-32-k80x8: 4 Tesla K80 boards, each two GK210 behind its on-board PCIe switch.
  const std::vector<Prediction> p = predict_from_one_gpu(rows, ps_on_the_host_yaml(2), "gce_k80.yaml");
  // Regression pin: the errors on these rows, median 4.5% and largest 8.5% (AlexNet on 4 GPUs),
  // every prediction optimistic, measured at 5ac14e5 (2026-11-29) and again at f750b82
  // (2026-12-05) as docs/validation.md quotes them; the bounds sit two points above, so that a
  // change making the prediction worse is noticed. Not targets.
  expect_errors_within(p, 0.105, 0.065);
}

}  // namespace validation_test
}  // namespace
}  // namespace stepcast
