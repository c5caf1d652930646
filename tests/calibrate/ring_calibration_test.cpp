// The alpha-beta ring fit: exact recovery on closed-form data, the scenario keys reproducing the
// fit in the fine simulator, and the acceptance runs on the two measured sweeps in
// ../shared/data/tables (skipped, saying so, when that folder is absent).
#include "stepcast/detail/calibrate/ring_calibration.hpp"
#include "stepcast/detail/report/calibration_report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
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
namespace ring_calibration_test {  // this file's own names: test files are compiled several to a unit

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
  // Input, not an expected value: a realistic fit (the nccl-tests end points below, rounded).
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
// held-out sizes from 1 MiB up are scored. The expected fit is solved here from the two rows of
// the raw file, and the expected summary recomputed from it, so nothing asserted is copied from
// the program's output. The issue asks for a median of at most 10%, which the alpha-beta ring does
// not reach on these sweeps (docs/calibration.md says why and quotes the numbers derived here).

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

// The line t = 2(N-1) a + 2(N-1)/N S / B through two measured (S, t): solved by hand,
//   B = 2(N-1)/N (S2 - S1) / (t2 - t1),   a = (t1 - 2(N-1)/N S1 / B) / (2(N-1)).
struct Line {
  double a = 0;   // s per ring step
  double bw = 0;  // bytes/s
};
Line through(int n, double s1, double t1, double s2, double t2) {
  const double k = 2.0 * (n - 1) / n;
  const double bw = k * (s2 - s1) / (t2 - t1);
  return {(t1 - k * s1 / bw) / (2.0 * (n - 1)), bw};
}

// Only the two end points are used; every size's prediction and error are the closed form with
// `line`; and the summary is the median and the maximum |error| over the sizes >= 1 MiB that the
// fit did not use: all recomputed here from the measured times.
void expect_held_out_summary(const Calibration& c, int n, const Line& line, int expected_count) {
  std::vector<double> held_out;
  for (const SizeError& e : c.sizes) {
    const double predicted = 2.0 * (n - 1) * line.a + 2.0 * (n - 1) / n * e.bytes / line.bw;
    const double error = (predicted - e.measured) / e.measured;
    EXPECT_EQ(e.used, e.bytes == c.sizes.front().bytes || e.bytes == c.sizes.back().bytes) << e.bytes;
    EXPECT_NEAR(e.predicted, predicted, 1e-12 * predicted) << e.bytes;
    EXPECT_NEAR(e.error, error, 1e-9) << e.bytes;
    if (e.bytes >= 1048576 && !e.used) held_out.push_back(std::abs(error));
  }
  std::sort(held_out.begin(), held_out.end());
  ASSERT_EQ(static_cast<int>(held_out.size()), expected_count);
  EXPECT_EQ(c.summary_count, expected_count);
  const size_t m = held_out.size();
  const double median = m % 2 == 1 ? held_out[m / 2] : (held_out[m / 2 - 1] + held_out[m / 2]) / 2;
  EXPECT_NEAR(c.median_error, median, 1e-9);
  EXPECT_NEAR(c.max_error, held_out.back(), 1e-9);
  EXPECT_FALSE(c.summary_in_sample);
}

TEST(CalibrationAcceptance, NcclTestsTwoNodesH100) {
  const std::string file = "nccl_tests_gcp_a3mega_h100_2node_allreduce.txt";
  if (!std::filesystem::exists(kTables / file)) {
    GTEST_SKIP() << "SKIPPED: " << (kTables / file) << " is absent (../shared/data not checked out)";
  }
  const Calibration c = acceptance_run(file, 16, 8);
  // The file's first and last rows (out-of-place time, us): 8 B in 135.8 us, 8589934592 B in
  // 47535 us. N = 16: B = 1.875 x 8589934584 / 47399.2e-6 = 339.797 GB/s,
  // a = (135.8 us - 1.875 x 8 / B) / 30 = 4.52667 us.
  ASSERT_EQ(c.sizes.front().bytes, 8);
  ASSERT_EQ(c.sizes.back().bytes, 8589934592.0);
  EXPECT_DOUBLE_EQ(c.sizes.front().measured, 135.8e-6);
  EXPECT_DOUBLE_EQ(c.sizes.back().measured, 47535e-6);
  const Line line = through(16, 8, 135.8e-6, 8589934592.0, 47535e-6);
  EXPECT_NEAR(c.fit.step_latency, line.a, 1e-9 * line.a);
  EXPECT_NEAR(c.fit.bw, line.bw, 1e-9 * line.bw);
  EXPECT_FALSE(c.latency_clamped);
  // 13 held-out sizes: 1 MiB .. 4 GiB (2^20 .. 2^32). With the line above: median 42.0%, max
  // 76.6% (16 MiB). The 10% goal of the issue is NOT met: the middle sizes run a slower
  // protocol regime that neither endpoint measures.
  expect_held_out_summary(c, 16, line, 13);
  // What does hold: from 2 GiB up the bandwidth term dominates and the fit is within 6%.
  // Regression pin: the largest of these errors is -5.2% (2 GiB; -2.2% at 4 GiB, 0 at 8 GiB,
  // which the fit uses), measured at dce4b38 (2026-11-29) and the same from the line above; the
  // bound states what this data shows so that docs/calibration.md's claim is checked, not a target.
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
  // The table's first and last all-reduce rows (bytes / network_throughput_bytes_per_sec):
  // 1024 B at 28571428 B/s (35.84 us) and 2147483648 B at 224423344971 B/s (9568.90 us). N = 8:
  // B = 1.75 x 2147482624 / 9533.06e-6 = 394.217 GB/s, a = (35.84 us - 1.75 x 1024 / B) / 14
  // = 2.55968 us.
  const double t1 = 1024.0 / 28571428, t2 = 2147483648.0 / 224423344971;
  ASSERT_EQ(c.sizes.front().bytes, 1024);
  ASSERT_EQ(c.sizes.back().bytes, 2147483648.0);
  EXPECT_DOUBLE_EQ(c.sizes.front().measured, t1);
  EXPECT_DOUBLE_EQ(c.sizes.back().measured, t2);
  const Line line = through(8, 1024, t1, 2147483648.0, t2);
  EXPECT_NEAR(c.fit.step_latency, line.a, 1e-9 * line.a);
  EXPECT_NEAR(c.fit.bw, line.bw, 1e-9 * line.bw);
  EXPECT_FALSE(c.latency_clamped);
  // 11 held-out sizes: 1 MiB .. 1 GiB (2^20 .. 2^30). With the line above: median 13.3%, max
  // 35.1% (8 MiB); the 10% goal is missed by 3.3 points.
  expect_held_out_summary(c, 8, line, 11);
  // From 128 MiB up the fit is within 9%.
  // Regression pin: the largest of these errors is -8.1% (128 MiB; -4.6% at 256 MiB, -1.7% at
  // 512 MiB, -0.7% at 1 GiB), measured at dce4b38 (2026-11-29) and the same from the line above;
  // the bound states what this data shows, not a target.
  for (const SizeError& e : c.sizes) {
    if (e.bytes >= 134217728.0) {
      EXPECT_LT(std::abs(e.error), 0.09) << e.bytes;
    }
  }
}

}  // namespace ring_calibration_test
}  // namespace
}  // namespace stepcast::calibrate
