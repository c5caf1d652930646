// The size-regime fit (`--fit regimes`): recovery of known regimes, the choice of the number of
// regimes by leave-one-out, the leave-one-out summary, the scenario keys and their round trip
// through the YAML, the simulator reproducing the fitted model, and the acceptance runs on the two
// measured sweeps in ../shared/data/tables (skipped, saying so, when that folder is absent).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "stepcast/detail/calibrate/collective_log.hpp"
#include "stepcast/detail/calibrate/ring_calibration.hpp"
#include "stepcast/detail/report/calibration_report.hpp"
#include "stepcast/error.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/units.hpp"

namespace stepcast::calibrate {
namespace {
namespace regime_calibration_test {  // this file's own names: test files are compiled several to a unit

using report::calibration_header;
using report::calibration_yaml;

// The three regimes of the nccl-tests sweep (16 ranks), rounded: 8 B - 512 KiB, 1 - 16 MiB,
// 32 MiB - 8 GiB; the boundaries are the geometric means of the neighbouring measured sizes,
// rounded to whole bytes as the fit does.
RegimeFit three_regimes() {
  return {16,
          {{0, 8, 524288, 17, 4.4e-6, 17e9, false},
           {std::round(std::sqrt(524288.0 * 1048576.0)), 1048576, 16777216, 5, 5e-6, 38e9, false},
           {std::round(std::sqrt(16777216.0 * 33554432.0)), 33554432, 8589934592.0, 9, 30e-6, 343e9, false}}};
}

// Sizes 8 B .. 8 GiB by powers of 2 timed by `truth`, each time scaled by 1 + u, u the sum of three
// draws uniform in [-noise, noise] (bell-shaped, standard deviation `noise`) from a seeded
// Mersenne twister (its output, unlike the standard distributions, is the same everywhere).
template <typename Model>
std::vector<Measurement> sweep(const Model& truth, double noise, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Measurement> out;
  int line = 1;
  for (double bytes = 8; bytes <= 8.6e9; bytes *= 2) {
    double u = 0;
    for (int i = 0; i < 3; ++i) u += noise * (2.0 * rng() / static_cast<double>(std::mt19937::max()) - 1);
    out.push_back({bytes, truth.time(bytes) * (1 + u), line++});
  }
  return out;
}

int chosen_regimes(const Calibration& c) { return static_cast<int>(c.regimes.regimes.size()); }

TEST(RegimeFit, TimeUsesTheRegimeFromItsFromSizeUp) {
  const RegimeFit fit{4, {{0, 8, 64, 3, 1e-6, 1e9, false}, {100, 128, 1024, 4, 2e-6, 1e10, false}}};
  EXPECT_EQ(&fit.regime_for(99.9), &fit.regimes[0]);
  EXPECT_EQ(&fit.regime_for(100), &fit.regimes[1]);
  // 6 a + 1.5 S / B.
  EXPECT_DOUBLE_EQ(fit.time(64), 6e-6 + 1.5 * 64 / 1e9);
  EXPECT_DOUBLE_EQ(fit.time(1024), 12e-6 + 1.5 * 1024 / 1e10);
  const RingFit envelope = fit.envelope();
  EXPECT_EQ(envelope.workers, 4);
  EXPECT_EQ(envelope.step_latency, 1e-6);
  EXPECT_EQ(envelope.bw, 1e10);
}

TEST(RegimeCalibration, RecoversThreeKnownRegimes) {
  const RegimeFit truth = three_regimes();
  for (double noise : {0.0, 0.002}) {
    const Calibration c = calibrate_ring(sweep(truth, noise, 7), 16, {.method = FitMethod::Regimes});
    ASSERT_EQ(chosen_regimes(c), 3) << "noise " << noise << "\n" << calibration_header(c, {});
    for (size_t j = 0; j < 3; ++j) {
      const Regime& want = truth.regimes[j];
      const Regime& got = c.regimes.regimes[j];
      const double tolerance = noise == 0 ? 1e-9 : 0.01;
      EXPECT_NEAR(got.step_latency, want.step_latency, want.step_latency * tolerance) << "regime " << j;
      EXPECT_NEAR(got.bw, want.bw, want.bw * tolerance) << "regime " << j;
      EXPECT_EQ(got.first_bytes, want.first_bytes) << "regime " << j;
      EXPECT_EQ(got.last_bytes, want.last_bytes) << "regime " << j;
      EXPECT_EQ(got.count, want.count) << "regime " << j;
      EXPECT_DOUBLE_EQ(got.from_bytes, want.from_bytes) << "regime " << j;
    }
    // The links carry the fastest regime: min a, max B.
    EXPECT_DOUBLE_EQ(c.fit.step_latency, c.regimes.regimes[0].step_latency);
    EXPECT_DOUBLE_EQ(c.fit.bw, c.regimes.regimes[2].bw);
    EXPECT_FALSE(c.summary_in_sample);
    EXPECT_LT(c.median_error, noise == 0 ? 1e-9 : 0.01);
  }
}

TEST(RegimeCalibration, PicksOneRegimeForASingleNoisyLine) {
  const RingFit line{16, 4.5e-6, 340e9};
  const Calibration c = calibrate_ring(sweep(line, 0.01, 1), 16, {.method = FitMethod::Regimes});
  EXPECT_EQ(chosen_regimes(c), 1) << calibration_header(c, {});
  EXPECT_EQ(c.regime_scores.size(), 4u);
  EXPECT_NEAR(c.fit.step_latency, line.step_latency, line.step_latency * 0.02);
  EXPECT_NEAR(c.fit.bw, line.bw, line.bw * 0.02);

  // Not every noise draw: on pure noise a second regime's leave-one-out score is sometimes more
  // than 5% lower by chance (the scale of the noise does not matter). Most draws must still choose
  // one. Such a fit is harmless: its regimes fit the same line, so it still predicts every size to
  // within the noise.
  // Regression pin: 33 of these 40 seeded draws chose one regime at 6c92d17 (2026-11-29); the
  // bound of 30 leaves room for a change to the search that moves a few draws, not for one that
  // makes extra regimes the rule.
  int one = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const Calibration d = calibrate_ring(sweep(line, 0.01, seed), 16, {.method = FitMethod::Regimes});
    if (chosen_regimes(d) == 1) ++one;
    for (const SizeError& e : d.sizes)
      EXPECT_LT(std::abs(e.error), 0.04) << "seed " << seed << ", " << e.bytes;
  }
  EXPECT_GE(one, 30);
}

TEST(RegimeCalibration, OneRegimeIsLeastSquaresAndItsSummaryIsLeaveOneOut) {
  // With at most one regime the fit is --fit least-squares, and size m's leave-one-out
  // prediction is least squares on the other sizes.
  const RingFit line{8, 3e-6, 100e9};
  const std::vector<Measurement> points = sweep(line, 0.05, 11);
  const Calibration c = calibrate_ring(points, 8, {.method = FitMethod::Regimes, .max_regimes = 1});
  const Calibration ls = calibrate_ring(points, 8, {.method = FitMethod::LeastSquares});
  ASSERT_EQ(chosen_regimes(c), 1);
  EXPECT_NEAR(c.fit.step_latency, ls.fit.step_latency, ls.fit.step_latency * 1e-12);
  EXPECT_NEAR(c.fit.bw, ls.fit.bw, ls.fit.bw * 1e-12);
  std::vector<double> scored;
  for (size_t m = 0; m < points.size(); ++m) {
    std::vector<Measurement> others = points;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(m));
    const RingFit without = calibrate_ring(others, 8, {.method = FitMethod::LeastSquares}).fit;
    const SizeError& e = c.sizes[m];
    ASSERT_EQ(e.bytes, points[m].bytes);
    EXPECT_TRUE(e.used);
    EXPECT_NEAR(e.loo_predicted, without.time(e.bytes), without.time(e.bytes) * 1e-12) << e.bytes;
    EXPECT_NEAR(e.predicted, c.fit.time(e.bytes), c.fit.time(e.bytes) * 1e-12) << e.bytes;
    if (e.bytes >= 1 << 20) scored.push_back(std::abs(e.loo_error));
  }
  std::sort(scored.begin(), scored.end());
  ASSERT_EQ(c.summary_count, static_cast<int>(scored.size()));
  const size_t n = scored.size();
  EXPECT_DOUBLE_EQ(c.median_error, n % 2 == 1 ? scored[n / 2] : (scored[n / 2 - 1] + scored[n / 2]) / 2);
  EXPECT_DOUBLE_EQ(c.max_error, scored.back());
  EXPECT_FALSE(c.summary_in_sample);
}

TEST(RegimeCalibration, SizesOutsideMinAndMaxAreScoredByTheFinalFit) {
  const std::vector<Measurement> points = sweep(three_regimes(), 0, 1);
  const Calibration c =
      calibrate_ring(points, 16, {.method = FitMethod::Regimes, .min_bytes = 1024, .max_bytes = 1e9});
  EXPECT_EQ(c.sizes.size(), points.size());
  EXPECT_EQ(c.regimes.regimes.front().first_bytes, 1024);
  EXPECT_EQ(c.regimes.regimes.back().last_bytes, 536870912);
  for (const SizeError& e : c.sizes) {
    EXPECT_EQ(e.used, e.bytes >= 1024 && e.bytes <= 1e9) << e.bytes;
    if (!e.used) {
      EXPECT_EQ(e.loo_predicted, e.predicted) << e.bytes;
      EXPECT_EQ(e.loo_error, e.error) << e.bytes;
    }
  }
}

TEST(RegimeCalibration, BadInputsThrow) {
  const std::vector<Measurement> points = sweep(three_regimes(), 0, 1);
  for (int k : {0, -1, kMaxRegimes + 1}) {
    try {
      static_cast<void>(calibrate_ring(points, 16, {.method = FitMethod::Regimes, .max_regimes = k}));
      ADD_FAILURE() << "max_regimes " << k << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.where().key, "--max-regimes");
    }
  }
  // Three sizes fit one regime, but leaving one out leaves two: nothing to cross-validate.
  const std::vector<Measurement> three(points.begin(), points.begin() + 3);
  EXPECT_THROW(static_cast<void>(calibrate_ring(three, 16, {.method = FitMethod::Regimes})), Error);
  // Time falls with the size everywhere: no regime has a positive bandwidth.
  std::vector<Measurement> falling;
  for (int i = 0; i < 8; ++i) falling.push_back({std::pow(2.0, i + 3), 1e-3 / (i + 1), i + 1});
  EXPECT_THROW(static_cast<void>(calibrate_ring(falling, 16, {.method = FitMethod::Regimes})), Error);
}

TEST(ApplyRegimeFit, LinksAreTheFastestRegimeAndEveryRegimeIsListed) {
  const RegimeFit fit = three_regimes();
  for (int per_node : {1, 8, 16}) {
    const cluster::ClusterSpec spec = apply_regime_fit(fit, per_node);
    const cluster::ClusterSpec links = apply_fit({16, 4.4e-6, 343e9}, per_node);
    EXPECT_EQ(spec.nic_bw, links.nic_bw);
    EXPECT_EQ(spec.latency, links.latency);
    EXPECT_EQ(spec.intra_node_bw, links.intra_node_bw);
    EXPECT_EQ(spec.intra_node_latency, links.intra_node_latency);
    ASSERT_EQ(spec.collective_regimes.size(), 3u);
    for (size_t j = 0; j < 3; ++j) {
      EXPECT_EQ(spec.collective_regimes[j].from_bytes, fit.regimes[j].from_bytes);
      EXPECT_EQ(spec.collective_regimes[j].step_latency, fit.regimes[j].step_latency);
      EXPECT_EQ(spec.collective_regimes[j].bw, fit.regimes[j].bw);
    }
  }
}

// The quoted items of the `collective_regimes:` list in a calibration_yaml.
std::vector<std::string> regime_items(const std::string& yaml) {
  std::vector<std::string> items;
  std::istringstream in(yaml);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == "  collective_regimes:") {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.rfind("    - \"", 0) != 0) break;
    const size_t begin = line.find('"') + 1;
    items.push_back(line.substr(begin, line.find('"', begin) - begin));
  }
  return items;
}

TEST(RegimeCalibrationYaml, RegimesParseBackToTheFittedNumbers) {
  const Calibration c = calibrate_ring(sweep(three_regimes(), 0.002, 3), 16, {.method = FitMethod::Regimes});
  for (int per_node : {8, 16}) {
    const std::string yaml = calibration_yaml(c, {.file = "sweep.log", .workers_per_node = per_node});
    EXPECT_NE(yaml.find("# model: ring all-reduce in size regimes"), std::string::npos) << yaml;
    const std::vector<std::string> items = regime_items(yaml);
    ASSERT_EQ(items.size(), c.regimes.regimes.size()) << yaml;
    for (size_t j = 0; j < items.size(); ++j) {
      std::istringstream words(items[j]);
      std::string size, latency, bandwidth, extra;
      words >> size >> latency >> bandwidth;
      EXPECT_FALSE(words >> extra) << items[j];
      EXPECT_EQ(items[j], size + " " + latency + " " + bandwidth);
      const Regime& r = c.regimes.regimes[j];
      // Six significant digits: within half a unit of the sixth.
      EXPECT_NEAR(parse_bytes(size, {}), r.from_bytes, r.from_bytes * 5e-6) << items[j];
      EXPECT_NEAR(parse_duration(latency, {}), r.step_latency, r.step_latency * 5e-6) << items[j];
      EXPECT_NEAR(parse_bandwidth(bandwidth, {}), r.bw, r.bw * 5e-6) << items[j];
    }
    EXPECT_EQ(items.front().rfind("0B ", 0), 0u) << items.front();
  }
}

// ---------------------------------------------------------------------------------------------
// The simulator's side of the regimes (cluster.collective_regimes): a collective of S bytes in
// regime j caps each transfer at B_j and makes each step last at least a_j after its transfers
// end, so the simulated ring must give RegimeFit::time(S) at every size.

void expect_simulator_reproduces(const cluster::ClusterSpec& spec, const RegimeFit& fit, double tolerance) {
  for (double bytes = 8; bytes <= 8.6e9; bytes *= 4) {
    const double simulated = scheme::simulate_allreduce(spec, bytes, scheme::AllReduceAlgorithm::Ring).time;
    EXPECT_NEAR(simulated, fit.time(bytes), fit.time(bytes) * tolerance)
        << bytes << " B on " << spec.workers << " workers, " << spec.workers_per_node << " per node";
  }
}

TEST(RegimeCalibration, SimulatorReproducesModel) {
  const RegimeFit fit = three_regimes();
  for (int per_node : {1, 8, 16}) expect_simulator_reproduces(apply_regime_fit(fit, per_node), fit, 1e-9);
}

TEST(RegimeCalibration, SimulatorReproducesModelFromYaml) {
  const Calibration c = calibrate_ring(sweep(three_regimes(), 0.002, 5), 16, {.method = FitMethod::Regimes});
  for (int per_node : {8, 16}) {
    const std::string yaml = calibration_yaml(c, {.file = "sweep.log", .workers_per_node = per_node});
    const scenario::Scenario s =
        scenario::parse_scenario(yaml + "workload:\n  model: resnet50\n  step_time: 100ms\n", "calib.yaml");
    EXPECT_EQ(s.cluster.collective_regimes.size(), c.regimes.regimes.size());
    // Values are written with 6 significant digits.
    expect_simulator_reproduces(s.cluster, c.regimes, 1e-5);
  }
}

// ---------------------------------------------------------------------------------------------
// Acceptance on the measured sweeps with --fit regimes: every size is predicted by a fit that did
// not see it (leave-one-out); the median |error| over the sizes from 1 MiB up must be <= 10%. The
// numbers pinned are the ones docs/calibration.md reports.

const std::filesystem::path kTables = std::filesystem::path(STEPCAST_SHARED_DATA) / "tables";

// The cosine of the angle between two vectors: 0 when they are orthogonal.
double cosine(const std::vector<double>& x, const std::vector<double>& y) {
  double xy = 0, xx = 0, yy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    xy += x[i] * y[i];
    xx += x[i] * x[i];
    yy += y[i] * y[i];
  }
  return xx == 0 || yy == 0 ? 0 : xy / std::sqrt(xx * yy);  // a zero residual is orthogonal to all
}

// Each regime's (a_j, B_j), checked without the program's solver: they minimise the summed squared
// relative error r_i = (2(N-1) a + 2(N-1)/N S_i / B - t_i) / t_i over the sizes of the range iff
// the residual r is orthogonal to both regressors, 2(N-1) / t_i and 2(N-1)/N S_i / t_i (the normal
// equations; only the second when a was clamped to 0). The sizes are those measured from
// first_bytes to last_bytes, `count` of them, and each range starts at the geometric mean of the
// previous range's last size and its own first, rounded to whole bytes.
void expect_each_regime_is_the_least_squares_line_of_its_sizes(const Calibration& c, int n) {
  const std::vector<Regime>& regimes = c.regimes.regimes;
  for (size_t j = 0; j < regimes.size(); ++j) {
    const Regime& r = regimes[j];
    SCOPED_TRACE(::testing::Message() << "regime " << j << " from " << r.first_bytes << " B");
    EXPECT_DOUBLE_EQ(r.from_bytes,
                     j == 0 ? 0 : std::round(std::sqrt(regimes[j - 1].last_bytes * r.first_bytes)));
    std::vector<double> residual, steps, volume;
    for (const SizeError& e : c.sizes) {
      if (e.bytes < r.first_bytes || e.bytes > r.last_bytes) continue;
      const double t = e.measured;
      residual.push_back((2.0 * (n - 1) * r.step_latency + 2.0 * (n - 1) / n * e.bytes / r.bw - t) / t);
      steps.push_back(2.0 * (n - 1) / t);
      volume.push_back(2.0 * (n - 1) / n * e.bytes / t);
    }
    ASSERT_EQ(static_cast<int>(residual.size()), r.count);
    EXPECT_GT(r.bw, 0);
    EXPECT_LT(std::fabs(cosine(residual, volume)), 1e-8);
    if (r.latency_clamped) {
      EXPECT_EQ(r.step_latency, 0);
    } else {
      EXPECT_GT(r.step_latency, 0);
      EXPECT_LT(std::fabs(cosine(residual, steps)), 1e-8);
    }
  }
}

// The summary is the median and the maximum |leave-one-out error| over the sizes >= 1 MiB.
void expect_summary_of_the_leave_one_out_errors(const Calibration& c) {
  std::vector<double> scored;
  for (const SizeError& e : c.sizes) {
    if (e.bytes >= 1 << 20) scored.push_back(std::abs(e.loo_error));
  }
  std::sort(scored.begin(), scored.end());
  ASSERT_EQ(c.summary_count, static_cast<int>(scored.size()));
  const size_t n = scored.size();
  EXPECT_DOUBLE_EQ(c.median_error, n % 2 == 1 ? scored[n / 2] : (scored[n / 2 - 1] + scored[n / 2]) / 2);
  EXPECT_DOUBLE_EQ(c.max_error, scored.back());
  EXPECT_FALSE(c.summary_in_sample);
}

Calibration acceptance_run(const std::string& file, int workers, int per_node) {
  const CollectiveLog log = read_collective_log((kTables / file).string());
  const Calibration c = calibrate_ring(log.points, workers, {.method = FitMethod::Regimes});
  std::cout << calibration_header(c, {.file = file, .format = log.format, .workers_per_node = per_node},
                                  "  ");
  // The scenario keys reproduce the predicted column in the simulator.
  expect_simulator_reproduces(apply_regime_fit(c.regimes, per_node), c.regimes, 1e-9);
  expect_each_regime_is_the_least_squares_line_of_its_sizes(c, workers);
  expect_summary_of_the_leave_one_out_errors(c);
  return c;
}

TEST(RegimeAcceptance, NcclTestsTwoNodesH100) {
  const std::string file = "nccl_tests_gcp_a3mega_h100_2node_allreduce.txt";
  if (!std::filesystem::exists(kTables / file)) {
    GTEST_SKIP() << "SKIPPED: " << (kTables / file) << " is absent (../shared/data not checked out)";
  }
  const Calibration c = acceptance_run(file, 16, 8);
  EXPECT_EQ(c.summary_count, 14);  // 1 MiB .. 8 GiB: 2^20 .. 2^33
  EXPECT_LE(c.median_error, 0.10);  // the goal
  // Each regime's (a, B) is checked above against its sizes (the last: 16 MiB - 8 GiB, 10 sizes,
  // a = 29.6322 us, B = 342.89 GB/s, as docs/calibration.md quotes). Which ranges are chosen, and
  // the leave-one-out errors, come from the leave-one-out search itself:
  // Regression pin: the choice on this sweep, 4 regimes (8 B - 1 KiB, 2 - 32 KiB, 64 KiB - 8 MiB,
  // 16 MiB - 8 GiB), and its leave-one-out median 0.73% and max 2.5% (32 MiB), measured at 6c92d17
  // (2026-11-29) and quoted by docs/calibration.md; recorded so that a change to the regime
  // search or its scoring is noticed, not a target (the goal is the 10% above).
  ASSERT_EQ(chosen_regimes(c), 4);
  EXPECT_EQ(c.regimes.regimes[1].first_bytes, 2048);
  EXPECT_EQ(c.regimes.regimes[2].first_bytes, 65536);
  EXPECT_EQ(c.regimes.regimes[3].first_bytes, 16777216);
  EXPECT_NEAR(c.median_error, 0.0073, 0.0005);
  EXPECT_NEAR(c.max_error, 0.025, 0.0005);
}

TEST(RegimeAcceptance, XlaEightH100OneHost) {
  const std::string file = "xla_h100_sm90_collective_perf_table_8gpu.csv";
  if (!std::filesystem::exists(kTables / file)) {
    GTEST_SKIP() << "SKIPPED: " << (kTables / file) << " is absent (../shared/data not checked out)";
  }
  const Calibration c = acceptance_run(file, 8, 8);
  EXPECT_EQ(c.summary_count, 12);  // 1 MiB .. 2 GiB: 2^20 .. 2^31
  EXPECT_LE(c.median_error, 0.10);  // the goal
  // Regression pin: the leave-one-out choice on this table, 2 regimes (1 KiB - 4 MiB, 8 MiB -
  // 2 GiB), and its leave-one-out median 2.1% and max 46.5% (4 MiB, next to the boundary: left
  // out, it falls in the second regime), measured at 6c92d17 (2026-11-29) and quoted by
  // docs/calibration.md; recorded so that a change to the regime search is noticed, not a target.
  ASSERT_EQ(chosen_regimes(c), 2);
  EXPECT_EQ(c.regimes.regimes[1].first_bytes, 8388608);
  EXPECT_NEAR(c.median_error, 0.021, 0.0005);
  EXPECT_NEAR(c.max_error, 0.465, 0.001);
}

// A stricter hold-out than leave-one-out: the fit (the number of regimes included) sees only every
// other size of the sweep, plus the largest, and predicts the sizes it never saw from 1 MiB up.
// nccl-tests: median 0.22% (3 regimes from 16 sizes), held to the 10% goal. XLA: 10.3% (3 regimes
// from 12 sizes, 5 unseen sizes, two of them next to a boundary), which misses the goal.
// Regression pin: XLA's bound, 15%, is not the goal but sits above its median of 10.3% measured
// at 6c92d17 (2026-11-29); it keeps that noisier, shorter sweep from getting worse unnoticed.
TEST(RegimeAcceptance, EveryOtherSizePredictsTheRest) {
  struct Case {
    std::string file;
    int workers;
    double bound;
  };
  for (const Case& k : {Case{"nccl_tests_gcp_a3mega_h100_2node_allreduce.txt", 16, 0.10},
                        Case{"xla_h100_sm90_collective_perf_table_8gpu.csv", 8, 0.15}}) {
    SCOPED_TRACE(k.file);
    if (!std::filesystem::exists(kTables / k.file)) {
      GTEST_SKIP() << "SKIPPED: " << (kTables / k.file) << " is absent (../shared/data not checked out)";
    }
    const CollectiveLog log = read_collective_log((kTables / k.file).string());
    std::vector<Measurement> seen, unseen;
    for (size_t i = 0; i < log.points.size(); ++i) {
      (i % 2 == 0 || i + 1 == log.points.size() ? seen : unseen).push_back(log.points[i]);
    }
    const Calibration c = calibrate_ring(seen, k.workers, {.method = FitMethod::Regimes});
    std::vector<double> errors;
    for (const Measurement& m : unseen) {
      if (m.bytes >= 1 << 20) errors.push_back(std::abs(c.regimes.time(m.bytes) - m.time) / m.time);
    }
    ASSERT_GE(errors.size(), 5u);
    std::sort(errors.begin(), errors.end());
    const double median = errors.size() % 2 == 1
                              ? errors[errors.size() / 2]
                              : (errors[errors.size() / 2 - 1] + errors[errors.size() / 2]) / 2;
    std::cout << k.file << ": " << c.regimes.regimes.size() << " regimes from " << seen.size()
              << " sizes; the " << errors.size() << " unseen sizes >= 1 MiB: median |error| " << 100 * median
              << "%, max " << 100 * errors.back() << "%\n";
    EXPECT_LE(median, k.bound);
  }
}

}  // namespace regime_calibration_test
}  // namespace
}  // namespace stepcast::calibrate
