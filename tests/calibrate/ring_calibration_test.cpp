// The alpha-beta ring fit: exact recovery on closed-form data, the scenario keys reproducing the
// fit in the fine simulator, and the acceptance runs on the two measured sweeps in
// ../shared/data/tables (skipped, saying so, when that folder is absent).
#include "stepcast/detail/calibrate/ring_calibration.hpp"
#include "stepcast/detail/report/calibration_report.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "stepcast/detail/calibrate/collective_log.hpp"
#include "stepcast/error.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"

namespace stepcast::calibrate {
namespace {

using report::calibration_header;
using report::calibration_yaml;

// Sizes 8 B .. 8 GiB by powers of 4, timed by the closed form of the model.
std::vector<Measurement> closed_form_sweep(int n, double a, double bw) {
  std::vector<Measurement> out;
  const RingFit truth{n, a, bw};
  int line = 1;
  for (double bytes = 8; bytes <= 8.6e9; bytes *= 4) out.push_back({bytes, truth.time(bytes), line++});
  return out;
}

TEST(RingFit, TimeIsTheAlphaBetaRing) {
  // N = 4, a = 2 us, B = 10 GB/s, S = 4 MB: 6 * 2 us + 1.5 * 4e6 / 1e10 s = 12 us + 600 us.
  EXPECT_DOUBLE_EQ((RingFit{4, 2e-6, 1e10}.time(4e6)), 612e-6);
}

TEST(CalibrateRing, RecoversLatencyAndBandwidthExactlyFromClosedFormData) {
  for (int n : {2, 8, 16, 1024}) {
    for (FitMethod method : {FitMethod::Endpoints, FitMethod::LeastSquares}) {
      const double a = 3.7e-6, bw = 45e9;
      const Calibration c = calibrate_ring(closed_form_sweep(n, a, bw), n, {.method = method});
      EXPECT_NEAR(c.fit.step_latency, a, a * 1e-9) << "N=" << n;
      EXPECT_NEAR(c.fit.bw, bw, bw * 1e-9) << "N=" << n;
      EXPECT_FALSE(c.latency_clamped);
      EXPECT_LT(c.max_error, 1e-9);
      for (const SizeError& e : c.sizes) EXPECT_NEAR(e.error, 0, 1e-9) << e.bytes;
    }
  }
}

TEST(CalibrateRing, EndpointsUseSmallestAndLargestEligibleSize) {
  const std::vector<Measurement> sweep = closed_form_sweep(8, 1e-6, 1e10);
  const Calibration c = calibrate_ring(sweep, 8, {.min_bytes = 1000, .max_bytes = 1e9});
  std::vector<double> used;
  for (const SizeError& e : c.sizes) {
    if (e.used) used.push_back(e.bytes);
  }
  ASSERT_EQ(used.size(), 2u);
  EXPECT_DOUBLE_EQ(used[0], 2048);                   // first power-of-4 multiple of 8 >= 1000
  EXPECT_DOUBLE_EQ(used[1], 8 * std::pow(4.0, 13));  // 536870912, the last <= 1e9
  EXPECT_EQ(c.sizes.size(), sweep.size());           // every size is still reported
}

TEST(CalibrateRing, SummaryIsMedianAndMaxOverHeldOutSizesFromOneMebibyte) {
  // Fitted on 8 B and 1 GiB (exact there); the model over-predicts the three held-out sizes
  // >= 1 MiB by +10%, -20% and +40%, and 512 KiB (below 1 MiB, not scored) by 90%.
  // Median |error| 20%, max 40%.
  const RingFit truth{4, 1e-6, 1e10};
  std::vector<Measurement> sweep;
  int line = 0;
  for (auto [bytes, error] : std::vector<std::pair<double, double>>{
           {8, 0}, {524288, 0.9}, {4194304, 0.1}, {16777216, -0.2}, {67108864, 0.4}, {1073741824, 0}}) {
    sweep.push_back({bytes, truth.time(bytes) / (1 + error), ++line});
  }
  const Calibration c = calibrate_ring(sweep, 4, {});
  EXPECT_FALSE(c.summary_in_sample);
  EXPECT_NEAR(c.median_error, 0.2, 1e-9);
  EXPECT_NEAR(c.max_error, 0.4, 1e-9);
}

TEST(CalibrateRing, NegativeLatencyIsClampedToZero) {
  // The small size is faster than the line through the large one allows: a < 0 is meaningless.
  const std::vector<Measurement> sweep{{1e6, 1e-6, 1}, {1e9, 2e-3, 2}};
  const Calibration c = calibrate_ring(sweep, 2, {});
  EXPECT_TRUE(c.latency_clamped);
  EXPECT_EQ(c.fit.step_latency, 0);
  EXPECT_GT(c.fit.bw, 0);
}

TEST(CalibrateRing, BadInputsThrow) {
  EXPECT_THROW(static_cast<void>(calibrate_ring(closed_form_sweep(4, 1e-6, 1e10), 1, {})), Error);
  EXPECT_THROW(static_cast<void>(calibrate_ring({{8, 1e-5, 1}}, 4, {})), Error);
  // Time falls with size: no positive bandwidth.
  EXPECT_THROW(static_cast<void>(calibrate_ring({{8, 1e-3, 1}, {1e9, 1e-4, 2}}, 4, {})), Error);
  EXPECT_THROW(static_cast<void>(calibrate_ring(closed_form_sweep(4, 1e-6, 1e10), 4, {.min_bytes = 1e12})),
               Error);
}

// The simulated ring with the fitted cluster must give RingFit::time at every size.
void expect_simulator_reproduces(const cluster::ClusterSpec& spec, const RingFit& fit, double tolerance) {
  for (double bytes : {8.0, 65536.0, 1048576.0, 33554432.0, 8589934592.0}) {
    const double simulated = scheme::simulate_allreduce(spec, bytes, scheme::AllReduceAlgorithm::Ring).time;
    EXPECT_NEAR(simulated, fit.time(bytes), fit.time(bytes) * tolerance)
        << bytes << " B on " << spec.workers << " workers, " << spec.workers_per_node << " per node";
  }
}

TEST(ApplyFit, SimulatedRingReproducesTheFitOnOneNodeAndAcrossNodes) {
  const RingFit fit{16, 4.5e-6, 340e9};
  for (int per_node : {1, 2, 8, 16}) {
    const cluster::ClusterSpec spec = apply_fit(fit, per_node);
    EXPECT_EQ(spec.workers, 16);
    EXPECT_EQ(spec.workers_per_node, per_node);
    expect_simulator_reproduces(spec, fit, 1e-9);
  }
  // A slow fit keeps a fast intra-node link as it is.
  const cluster::ClusterSpec slow = apply_fit({16, 20e-6, 1e9}, 8);
  EXPECT_EQ(slow.intra_node_bw, cluster::ClusterSpec{}.intra_node_bw);
  EXPECT_EQ(slow.nic_bw, 1e9);
}

TEST(CalibrationYaml, KeysLoadAsAScenarioAndReproduceTheFit) {
  const RingFit truth{16, 4.52667e-6, 339.797e9};
  std::vector<Measurement> sweep;
  for (double bytes = 8; bytes <= 8.6e9; bytes *= 2) sweep.push_back({bytes, truth.time(bytes), 0});
  const Calibration c = calibrate_ring(sweep, 16, {});
  for (int per_node : {1, 8, 16}) {
    const std::string yaml = calibration_yaml(c, {.file = "sweep.log", .workers_per_node = per_node});
    // The fragment holds cluster keys only; a scenario also needs a workload.
    const scenario::Scenario s =
        scenario::parse_scenario(yaml + "workload:\n  model: resnet50\n  step_time: 100ms\n", "calib.yaml");
    EXPECT_EQ(s.cluster.workers, 16);
    EXPECT_EQ(s.cluster.workers_per_node, per_node);
    // Values are written with 6 significant digits.
    expect_simulator_reproduces(s.cluster, c.fit, 2e-6);
  }
}

// ---------------------------------------------------------------------------------------------
// Acceptance on the measured sweeps. Calibrated on the smallest and the largest size only; the
// held-out sizes from 1 MiB up are scored. The numbers asserted are the ones docs/calibration.md
// reports; the issue asks for a median of at most 10%, which the alpha-beta ring does not reach
// on these sweeps (docs/calibration.md says why), so these tests pin what is true.

const std::filesystem::path kTables = std::filesystem::path(STEPCAST_SHARED_DATA) / "tables";

Calibration acceptance_run(const std::string& file, int workers, int per_node) {
  const CollectiveLog log = read_collective_log((kTables / file).string());
  const Calibration c = calibrate_ring(log.points, workers, {});
  std::cout << calibration_header(c, {.file = file, .format = log.format, .workers_per_node = per_node},
                                  "  ");
  // The scenario keys reproduce the predicted column in the simulator, so the errors above are
  // the simulator's errors too.
  expect_simulator_reproduces(apply_fit(c.fit, per_node), c.fit, 1e-9);
  return c;
}

TEST(CalibrationAcceptance, NcclTestsTwoNodesH100) {
  const std::string file = "nccl_tests_gcp_a3mega_h100_2node_allreduce.txt";
  if (!std::filesystem::exists(kTables / file)) {
    GTEST_SKIP() << "SKIPPED: " << (kTables / file) << " is absent (../shared/data not checked out)";
  }
  const Calibration c = acceptance_run(file, 16, 8);
  EXPECT_NEAR(c.fit.step_latency, 4.52667e-6, 1e-11);
  EXPECT_NEAR(c.fit.bw, 339.797e9, 1e6);
  EXPECT_EQ(c.summary_count, 13);
  // Pinned: median 42.0%, max 76.6% (16 MB). The 10% goal of the issue is NOT met: the middle
  // sizes run a slower protocol regime that neither endpoint measures.
  EXPECT_NEAR(c.median_error, 0.420, 0.001);
  EXPECT_NEAR(c.max_error, 0.766, 0.001);
  // What does hold: from 2 GiB up the bandwidth term dominates and the fit is within 6%.
  for (const SizeError& e : c.sizes) {
    if (e.bytes >= 2147483648.0) {
      EXPECT_LT(std::abs(e.error), 0.06) << e.bytes;
    }
  }
}

TEST(CalibrationAcceptance, XlaEightH100OneHost) {
  const std::string file = "xla_h100_sm90_collective_perf_table_8gpu.csv";
  if (!std::filesystem::exists(kTables / file)) {
    GTEST_SKIP() << "SKIPPED: " << (kTables / file) << " is absent (../shared/data not checked out)";
  }
  const Calibration c = acceptance_run(file, 8, 8);
  EXPECT_NEAR(c.fit.step_latency, 2.55968e-6, 1e-11);
  EXPECT_NEAR(c.fit.bw, 394.217e9, 1e6);
  EXPECT_EQ(c.summary_count, 11);
  // Pinned: median 13.3%, max 35.1% (8 MiB); the 10% goal is missed by 3.3 points.
  EXPECT_NEAR(c.median_error, 0.133, 0.001);
  EXPECT_NEAR(c.max_error, 0.351, 0.001);
  for (const SizeError& e : c.sizes) {
    if (e.bytes >= 134217728.0) {
      EXPECT_LT(std::abs(e.error), 0.09) << e.bytes;
    }
  }
}

}  // namespace
}  // namespace stepcast::calibrate
