// Stragglers (Options::compute_cv): every worker's compute in every step is scaled by a seeded
// lognormal factor with mean 1. A synchronous step waits for the slowest of N, so it grows like
// the expected maximum of N factors; an asynchronous worker does not wait, so its mean rate
// stays. The fine simulation must agree with the closed form the coarse predictor uses.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace stragglers_test {  // this file's own names: test files are compiled several to a unit

using scheme::Mode;
using scheme::Scheme;
using scheme::SchemeConfig;

workload::Workload resnet50() {
  return zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 32, .step_time = 0.1});
}

cluster::ClusterSpec fast_cluster(int workers) {
  cluster::ClusterSpec spec;
  spec.workers = workers;
  spec.nic_bw = 1e13;  // communication negligible: only the stragglers show
  spec.latency = 1e-7;
  return spec;
}

Options with_cv(Predictor predictor, double cv, int steps = 200) {
  Options o;
  o.predictor = predictor;
  o.warmup_steps = 1;
  o.measure_steps = steps;
  o.compute_cv = cv;
  return o;
}

// compute_cv_auto needs per-step samples; a zoo workload has none, and predict says so.
TEST(Stragglers, AutoWithoutSamplesIsAnErrorNamingTheKey) {
  Options o = with_cv(Predictor::Coarse, 0);
  o.compute_cv_auto = true;
  try {
    (void)predict(resnet50(), fast_cluster(4), SchemeConfig{}, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().key, "workload.compute_cv") << e.what();
  }
}

TEST(Stragglers, FactorsHaveMeanOneAndTheAskedVariation) {
  const double cv = 0.2;
  double sum = 0, sum2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double f = scheme::straggler_factor(7, i % 100, i / 100, cv);
    ASSERT_GT(f, 0);
    sum += f;
    sum2 += f * f;
  }
  const double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
  EXPECT_NEAR(mean, 1, 0.003);
  EXPECT_NEAR(sd, cv, 0.004);
  EXPECT_EQ(scheme::straggler_factor(7, 3, 4, cv), scheme::straggler_factor(7, 3, 4, cv));
  EXPECT_NE(scheme::straggler_factor(7, 3, 4, cv), scheme::straggler_factor(8, 3, 4, cv));
  EXPECT_EQ(scheme::straggler_factor(7, 3, 4, 0), 1);
}

TEST(Stragglers, ExpectedSlowestFactorClosedForm) {
  EXPECT_EQ(expected_slowest_factor(1, 0.3), 1);
  EXPECT_EQ(expected_slowest_factor(64, 0), 1);
  // Small cv: lognormal ~ normal, so E[max of 2] = 1 + cv / sqrt(pi) to first order.
  EXPECT_NEAR(expected_slowest_factor(2, 0.01), 1 + 0.01 / std::sqrt(std::numbers::pi), 1e-5);
  double previous = 1;
  for (int n : {2, 4, 16, 64, 256}) {
    const double f = expected_slowest_factor(n, 0.1);
    EXPECT_GT(f, previous) << n;
    EXPECT_LT(f, 1 + 0.1 * std::sqrt(2 * std::log(n)) * 1.2) << n;  // about sqrt(2 ln n) sigmas
    previous = f;
  }
}

// Synchronous all-reduce: the simulated step is the compute of the slowest worker, within the
// sampling error of 200 steps of the closed form; it grows with N; one worker keeps the mean.
TEST(Stragglers, SynchronousStepWaitsForTheSlowestWorker) {
  const auto w = resnet50();
  SchemeConfig scheme;
  scheme.scheme = Scheme::AllReduce;
  const double cv = 0.1;
  double previous = 0;
  for (int n : {1, 4, 16, 64}) {
    SCOPED_TRACE(n);
    const Result fine = predict(w, fast_cluster(n), scheme, with_cv(Predictor::Fine, cv));
    const Result coarse = predict(w, fast_cluster(n), scheme, with_cv(Predictor::Coarse, cv));
    const double expected = w.step_time_alone() * expected_slowest_factor(n, cv);
    EXPECT_NEAR(fine.step_time, expected, 0.015 * expected);
    EXPECT_NEAR(coarse.step_time, expected, 0.005 * expected);
    EXPECT_GT(fine.step_time, previous);
    previous = fine.step_time;
    const Breakdown& b = fine.breakdown;
    EXPECT_NEAR(b.compute + b.communication_exposed + b.wait, fine.step_time, 1e-9);
    if (n > 1) {
      EXPECT_GT(b.wait, 0.5 * (expected - w.step_time_alone())) << "the others wait for the slowest";
    }
  }
}

// Asynchronous parameter servers far from saturation: nobody waits, the mean rate is that of the
// mean compute time.
TEST(Stragglers, AsynchronousWorkersKeepTheirMeanRate) {
  const auto w = resnet50();
  SchemeConfig scheme;
  scheme.scheme = Scheme::ParameterServer;
  scheme.mode = Mode::Async;
  scheme.ps.count = 4;
  const Result calm = predict(w, fast_cluster(8), scheme, with_cv(Predictor::Fine, 0, 100));
  const Result noisy = predict(w, fast_cluster(8), scheme, with_cv(Predictor::Fine, 0.2, 100));
  EXPECT_NEAR(noisy.throughput, calm.throughput, 0.02 * calm.throughput);
  EXPECT_NE(noisy.step_time, calm.step_time);
}

}  // namespace stragglers_test
}  // namespace
}  // namespace stepcast::predict
