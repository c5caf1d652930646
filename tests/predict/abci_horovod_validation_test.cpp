// Validation of data-parallel all-reduce scaling at 1-32 nodes on ABCI 2.0's Horovod ResNet-50
// runs (issue 30; the shared data set, skipped when it is absent; CI has it):
// abci2_resnet50_horovod_pytorch_training_scaling.csv, Horovod 0.22 + NCCL, torchvision ResNet-50
// in fp32 (TF32 math on A100), weak scaling at a fixed per-GPU batch (256 on the A nodes, 96 on the
// V nodes), one run per node count, 1-16 A nodes and 1-32 V nodes.
//
// Method (nothing tuned to what is predicted): per system, ONE number is fitted, the compute step
// of one GPU (workload.step_time), so that the 1-node row's predicted images/s is the measured one
// (what a user measures on one node). The network comes from the node's spec sheet: 4 x HDR200
// (A) or 2 x EDR100 (V) ports a node, NVLink inside the node (A100 NVLink 3 through NVSwitch,
// 300 GB/s each way per GPU; V100 NVLink 2, 2 links of 25 GB/s between each pair of the 4 GPUs,
// 50 GB/s), link latency 5 us (assumed, not from a spec). All-reduce: NCCL's tuning model
// (`algorithm: auto`), fp32 gradients (4 bytes a parameter). Buckets: Horovod 0.22 fuses the
// tensors that are ready within one 1 ms cycle (up to 128 MB); a ResNet-50 backward takes far
// longer than 1 ms per gradient tensor on these GPUs, so each gradient is reduced on its own
// (bucket_size 0); one 128 MB bucket (no overlap) is the pessimistic bound, printed too.
// A second variant takes the network from the fit docs/calibration.md makes on the same nodes'
// 2-node nccl-tests sweep (`calibrate nccl-tests --fit nccl` at the ports' line rate), written as
// its scenario fragment and included. docs/validation.md has the tables this test prints.
//
// The errors asserted are regression pins at the level measured (labelled below), not targets.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "shared_data.hpp"
#include "stepcast/detail/calibrate/ring_calibration.hpp"
#include "stepcast/detail/report/calibration_report.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::predict {
namespace {
namespace abci_horovod_validation_test {  // this file's own names: test files are compiled several to a unit

using Row = testing::CsvRow;

const std::string kFile = "abci2_resnet50_horovod_pytorch_training_scaling.csv";

/// A system's node, as ABCI's system overview gives it.
struct Node {
  std::string prefix;  ///< the start of the `system` column
  int gpus = 8;
  int batch = 256;  ///< per GPU
  int nics = 4;
  std::string nic_bandwidth, nvlink, generation;
};
const Node kNodeA{"ABCI2.0_ComputeNodeA", 8, 256, 4, "200Gbps", "300GB/s", "ampere"};
const Node kNodeV{"ABCI2.0_ComputeNodeV", 4, 96, 2, "100Gbps", "50GB/s", "volta"};

/// The scenario of `nodes` nodes of `node` at a compute step of `step` seconds per GPU. With
/// `calibration` (the path of `calibrate nccl-tests --fit nccl`'s file) the network is that
/// file's; otherwise the node's spec sheet's.
std::string scenario_yaml(const Node& node, int nodes, double step, const std::string& bucket,
                          const std::string& calibration) {
  const std::string network =
      calibration.empty() ? fmt::format(
                                "  nics_per_node: {nics}\n  nic_bandwidth: {nic}\n  link_latency: 5us\n"
                                "  intra_node: {{bandwidth: {nvlink}, latency: 2us, link: nvlink}}\n"
                                "  gpu: {{generation: {gen}}}\n",
                                fmt::arg("nics", node.nics), fmt::arg("nic", node.nic_bandwidth),
                                fmt::arg("nvlink", node.nvlink), fmt::arg("gen", node.generation))
                          : "";
  return (calibration.empty() ? "" : "include: " + calibration + "\n") +
         fmt::format(
             "name: abci-resnet50-{nodes}\n"
             "workload:\n  model: resnet50\n  batch_per_worker: {batch}\n  step_time: {step}s\n"
             "  precision: fp32\n"
             "cluster:\n  workers: {workers}\n  workers_per_node: {gpus}\n{network}"
             "training:\n  scheme: allreduce\n  allreduce: {{algorithm: auto, bucket_size: {bucket}}}\n"
             "predictor: fine\n",
             fmt::arg("nodes", nodes), fmt::arg("batch", node.batch), fmt::arg("step", step),
             fmt::arg("workers", nodes * node.gpus), fmt::arg("gpus", node.gpus),
             fmt::arg("network", network), fmt::arg("bucket", bucket));
}

/// A network: a bucket size and, when not empty, a calibration file.
struct Network {
  std::string bucket = "0";
  std::string calibration;
};

/// Predicted images/s of the whole job.
double predict_images_per_s(const Node& node, int nodes, double step, const Network& net) {
  const std::string file =
      net.calibration.empty() ? std::string("abci.yaml")
                              : (std::filesystem::path(net.calibration).parent_path() / "abci.yaml").string();
  const scenario::Scenario s =
      scenario::parse_scenario(scenario_yaml(node, nodes, step, net.bucket, net.calibration), file);
  const Result r = predict(scenario::build_workload(s), s.cluster, s.scheme, s.options);
  return r.throughput;
}

/// The compute step per GPU at which the 1-node prediction is the measured images/s (the step is
/// the compute plus what little communication is exposed: a few fixed-point steps converge).
double fit_step(const Node& node, double measured_1node, const Network& net) {
  double step = node.gpus * node.batch / measured_1node;
  for (int i = 0; i < 6; ++i) step *= predict_images_per_s(node, 1, step, net) / measured_1node;
  return step;
}

struct Scored {
  std::vector<int> nodes;
  std::vector<double> measured, predicted;  // images/s
  double median_error = 0, max_error = 0;   // |predicted / measured - 1| over the predicted rows
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Scored score(const Node& node, const std::vector<Row>& rows, const Network& net) {
  Scored out;
  std::vector<const Row*> mine;
  for (const Row& r : rows) {
    if (r.at("system").rfind(node.prefix, 0) == 0) mine.push_back(&r);
  }
  std::sort(mine.begin(), mine.end(),
            [](const Row* a, const Row* b) { return std::stoi(a->at("nodes")) < std::stoi(b->at("nodes")); });
  EXPECT_FALSE(mine.empty());
  if (mine.empty()) return out;
  EXPECT_EQ(std::stoi(mine.front()->at("nodes")), 1);
  const double one = std::stod(mine.front()->at("derived_train_img_per_s"));
  const double step = fit_step(node, one, net);
  std::cout << node.prefix << ", bucket_size " << net.bucket << ", network "
            << (net.calibration.empty() ? "from the spec sheet" : "calibrated on the 2-node nccl-tests sweep")
            << ": fitted compute step " << 1e3 * step << " ms per GPU (batch " << node.batch << ")\n"
            << "  nodes  measured img/s  eff   predicted img/s  eff   error\n";
  std::vector<double> errors;
  for (const Row* r : mine) {
    const int nodes = std::stoi(r->at("nodes"));
    EXPECT_EQ(std::stoi(r->at("gpus_per_node")), node.gpus);
    EXPECT_EQ(std::stoi(r->at("per_gpu_batch")), node.batch);
    const double measured = std::stod(r->at("derived_train_img_per_s"));
    const double predicted = predict_images_per_s(node, nodes, step, net);
    out.nodes.push_back(nodes);
    out.measured.push_back(measured);
    out.predicted.push_back(predicted);
    const double e = predicted / measured - 1;
    if (nodes > 1) errors.push_back(std::abs(e));
    std::cout << fmt::format("  {:5d}  {:14.0f}  {:4.3f}  {:15.0f}  {:4.3f}  {:+5.1f}%{}\n", nodes, measured,
                             measured / (nodes * one), predicted, predicted / (nodes * out.predicted.front()),
                             100 * e, nodes == 1 ? " (fitted)" : "");
  }
  out.median_error = median(errors);
  out.max_error = *std::max_element(errors.begin(), errors.end());
  std::cout << fmt::format("  median |error| {:.1f}%, max {:.1f}% over {} predicted rows\n",
                           100 * out.median_error, 100 * out.max_error, errors.size());
  return out;
}

/// What holds whatever the data: the fitted row reproduces itself, the predicted images/s per GPU
/// never rises with the node count, and the scaling efficiency is in (0, 1].
void expect_physical(const Scored& s) {
  ASSERT_FALSE(s.nodes.empty());
  EXPECT_NEAR(s.predicted.front() / s.measured.front(), 1.0, 1e-3) << "the fitted 1-node row";
  for (size_t i = 1; i < s.nodes.size(); ++i) {
    const double per_gpu = s.predicted[i] / s.nodes[i];
    const double before = s.predicted[i - 1] / s.nodes[i - 1];
    EXPECT_LE(per_gpu, before * (1 + 1e-9)) << s.nodes[i] << " nodes";
    const double efficiency = s.predicted[i] / (s.nodes[i] * s.predicted.front());
    EXPECT_GT(efficiency, 0) << s.nodes[i] << " nodes";
    EXPECT_LE(efficiency, 1 + 1e-9) << s.nodes[i] << " nodes";
  }
}

std::vector<Row> rows_or_skip() {
  const std::string path = testing::shared_table(kFile);
  if (!std::filesystem::exists(path)) return {};
  return testing::read_csv(path);
}

TEST(AbciHorovodValidation, SpecNetworkPerGradientAllReduce) {
  const std::vector<Row> rows = rows_or_skip();
  if (rows.empty())
    GTEST_SKIP() << "SKIPPED: " << testing::shared_table(kFile) << " is absent (../shared/data)";
  ASSERT_EQ(rows.size(), 11u);
  const Scored a = score(kNodeA, rows, {});
  const Scored v = score(kNodeV, rows, {});
  expect_physical(a);
  expect_physical(v);
  ASSERT_EQ(a.nodes.size(), 5u);
  ASSERT_EQ(v.nodes.size(), 6u);
  // The model is optimistic at every node count: ResNet-50's 102 MB of fp32 gradients take a few
  // ms on these networks, hidden behind a 285-365 ms backward, so it predicts ~100% efficiency;
  // the runs lose 2-17% to what is not gradient traffic (docs/validation.md lists the causes).
  for (size_t i = 1; i < a.nodes.size(); ++i) EXPECT_GT(a.predicted[i], a.measured[i]);
  for (size_t i = 1; i < v.nodes.size(); ++i) EXPECT_GT(v.predicted[i], v.measured[i]);
  // Regression pin (2026-12-07), the level measured, not a target: A 13.5% median / 20.9% max over
  // 2-16 nodes, V 7.8% / 10.6% over 2-32 nodes (+-1.5 points, for small changes of the simulated
  // bucket timing).
  EXPECT_NEAR(a.median_error, 0.135, 0.015) << "regression pin";
  EXPECT_NEAR(a.max_error, 0.209, 0.015) << "regression pin";
  EXPECT_NEAR(v.median_error, 0.078, 0.015) << "regression pin";
  EXPECT_NEAR(v.max_error, 0.106, 0.015) << "regression pin";
}

/// The 2-node nccl-tests sweep of a system fitted as docs/calibration.md does ("2 nodes, line
/// rate": `calibrate nccl-tests --fit nccl --nic-bandwidth` at the ports' signalling rate, NCCL's
/// tables for the GPU generation, Intel hosts), written where the test's scenarios include it.
/// Empty when the sweep is absent.
std::string calibration_file(const Node& node, const std::string& sweep_file,
                             cluster::GpuGeneration generation, double line_rate) {
  const std::string path = testing::shared_table(sweep_file);
  if (!std::filesystem::exists(path)) return "";
  std::vector<calibrate::Measurement> points;
  int line = 0;
  for (const Row& r : testing::read_csv(path)) {
    ++line;
    if (r.at("collective") != "all_reduce" || r.at("placement") != "out_of_place") continue;
    if (r.count("config") && r.at("config") != "default") continue;
    if (std::stoi(r.at("nodes")) != 2 || std::stoi(r.at("gpus_per_node")) != node.gpus) continue;
    points.push_back({std::stod(r.at("size_bytes")), std::stod(r.at("time_us")) * 1e-6, line});
  }
  EXPECT_GE(points.size(), 20u) << sweep_file;
  calibrate::FitOptions o;
  o.method = calibrate::FitMethod::Nccl;
  o.workers_per_node = node.gpus;
  o.gpu_generation = generation;
  o.cpu_vendor = cluster::CpuVendor::Intel;
  o.nics_per_node = node.nics;
  o.nic_bw = line_rate;
  const calibrate::Calibration cal = calibrate::calibrate_nccl_sweeps({{points, 2 * node.gpus}}, o);
  std::cout << sweep_file << ", 2 nodes, line rate: lambda = " << cal.nccl.latency_scale
            << ", the channels' speed " << cal.nccl.channels_bw / 1e9 << " GB/s\n";
  const std::string out = ::testing::TempDir() + "abci_horovod_calib_" + node.generation + ".yaml";
  std::ofstream(out) << report::calibration_yaml(cal, {.file = sweep_file, .workers_per_node = node.gpus});
  return out;
}

TEST(AbciHorovodValidation, NetworkCalibratedOnTheTwoNodeNcclTestsSweep) {
  // The second variant: the network as docs/calibration.md fits it on the same nodes' 2-node
  // nccl-tests sweep (NCCL 2.8.4, not the training container's NCCL), included in the scenario;
  // the compute step is refitted on the 1-node row as above.
  const std::vector<Row> rows = rows_or_skip();
  if (rows.empty())
    GTEST_SKIP() << "SKIPPED: " << testing::shared_table(kFile) << " is absent (../shared/data)";
  const std::string calib_a =
      calibration_file(kNodeA, "nccl_tests_abci2_nodeA_a100_hdr_allreduce_bcast_1to16nodes.csv",
                       cluster::GpuGeneration::Ampere, 25e9);
  const std::string calib_v =
      calibration_file(kNodeV, "nccl_tests_abci2_nodeV_v100_edr_allreduce_bcast_1to32nodes.csv",
                       cluster::GpuGeneration::Volta, 12.5e9);
  if (calib_a.empty() || calib_v.empty()) GTEST_SKIP() << "SKIPPED: the ABCI nccl-tests sweeps are absent";
  const Scored a = score(kNodeA, rows, {"0", calib_a});
  const Scored v = score(kNodeV, rows, {"0", calib_v});
  const Scored a_fused = score(kNodeA, rows, {"128MB", calib_a});
  const Scored v_fused = score(kNodeV, rows, {"128MB", calib_v});
  for (const Scored* s : {&a, &v, &a_fused, &v_fused}) expect_physical(*s);
  // Regression pin (2026-12-07), the level measured, not a target: per-gradient all-reduces as
  // with the spec sheet's network (the calibrated network is slower, still hidden behind the
  // backward); one fused 128 MB bucket A 13.2% / 20.4%, V 6.6% / 9.1% (+-1.5 points).
  EXPECT_NEAR(a.median_error, 0.135, 0.015) << "regression pin";
  EXPECT_NEAR(a.max_error, 0.209, 0.015) << "regression pin";
  EXPECT_NEAR(v.median_error, 0.078, 0.015) << "regression pin";
  EXPECT_NEAR(v.max_error, 0.106, 0.015) << "regression pin";
  EXPECT_NEAR(a_fused.median_error, 0.132, 0.015) << "regression pin";
  EXPECT_NEAR(a_fused.max_error, 0.204, 0.015) << "regression pin";
  EXPECT_NEAR(v_fused.median_error, 0.066, 0.015) << "regression pin";
  EXPECT_NEAR(v_fused.max_error, 0.091, 0.015) << "regression pin";
}

TEST(AbciHorovodValidation, OneFusedBucketIsThePessimisticBound) {
  // One 128 MB bucket (Horovod 0.22's fusion threshold) after the whole backward: nothing overlaps,
  // the most the gradients' traffic can cost. It stays within a few percent of the per-gradient
  // prediction: the network is not what these runs lose.
  const std::vector<Row> rows = rows_or_skip();
  if (rows.empty())
    GTEST_SKIP() << "SKIPPED: " << testing::shared_table(kFile) << " is absent (../shared/data)";
  for (const Node& node : {kNodeA, kNodeV}) {
    const Scored fused = score(node, rows, {"128MB", ""});
    const Scored each = score(node, rows, {});
    expect_physical(fused);
    ASSERT_EQ(fused.nodes.size(), each.nodes.size());
    for (size_t i = 1; i < fused.nodes.size(); ++i) {
      EXPECT_LE(fused.predicted[i], each.predicted[i] * (1 + 1e-9)) << fused.nodes[i] << " nodes";
      EXPECT_GT(fused.predicted[i], 0.95 * each.predicted[i]) << fused.nodes[i] << " nodes";
    }
  }
}

}  // namespace abci_horovod_validation_test
}  // namespace
}  // namespace stepcast::predict
