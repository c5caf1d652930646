// The analytic predictor (DESIGN.md 3.3): an upper bound on the fine predictor's throughput, the
// saturation point N* of a parameter server in closed form, and the whole-job accounting with
// sequential or parallel start-up I/O (the two CNTK findings: sequential start-up grows with N
// and makes the job time U-shaped in N; a single server caps the throughput beyond N*).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "stepcast/predict/predict.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace analytic_test {  // this file's own names: test files are compiled several to a unit

using scheme::Mode;
using scheme::Scheme;
using scheme::SchemeConfig;

workload::Workload resnet50(double step_time, int batch = 32) {
  return zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = batch, .step_time = step_time});
}

Options analytic() { return {.predictor = Predictor::Analytic}; }

// Every resource of the fine simulation has at least the work the analytic model charges it, and
// the analytic model lets them all overlap: it can never be slower. Random PS (sync, async,
// shards, local aggregation) and ring all-reduce scenarios, seeds printed on failure.
TEST(AnalyticPredictor, UpperBoundOnTheFinePredictor) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const auto w = resnet50(std::uniform_real_distribution<double>(0.05, 0.4)(rng));
    cluster::ClusterSpec spec;
    spec.workers = pick(1, 12);
    spec.workers_per_node = pick(1, 2);
    spec.nic_bw = std::uniform_real_distribution<double>(1, 100)(rng) * 1e9 / 8;
    spec.latency = 5e-6;
    SchemeConfig scheme;
    if (pick(0, 2) == 2) {
      scheme.scheme = Scheme::AllReduce;
      // Size regimes with bandwidths in no particular order: buckets and the whole gradient may
      // fall in different ones.
      if (pick(0, 1) == 1) {
        auto bw = [&] { return std::uniform_real_distribution<double>(0.05, 2)(rng) * spec.nic_bw; };
        spec.collective_regimes = {{0, 2e-6, bw()}, {1e6, 8e-6, bw()}, {20e6, 30e-6, bw()}};
        scheme.allreduce.bucket_bytes = pick(0, 1) ? 25e6 : 4e6;
      }
    } else {
      scheme.scheme = Scheme::ParameterServer;
      scheme.mode = pick(0, 1) ? Mode::Async : Mode::Sync;
      scheme.ps.count = pick(1, 4);
      scheme.ps.local_aggregation = pick(0, 1) == 1;
      scheme.ps.apply_time = pick(0, 1) ? 50e-6 : 0;
    }
    const Result bound = predict(w, spec, scheme, analytic());

    // Asynchronous workers out of step do not repeat one pattern every step: their rate over a
    // few steps strays from the steady one (tests/scheme/parameter_server_test.cpp), so it is
    // measured over 60.
    const bool async = scheme.scheme == Scheme::ParameterServer && scheme.mode == Mode::Async;
    const Result fine = predict(w, spec, scheme,
                                async ? Options{.warmup_steps = 10, .measure_steps = 60}
                                      : Options{.warmup_steps = 1, .measure_steps = 3});
    EXPECT_GE(bound.throughput, fine.throughput * (1 - 1e-6));
    EXPECT_LE(bound.throughput, spec.workers * w.batch_per_worker / w.step_time_alone() * (1 + 1e-12));
    const Breakdown& b = bound.breakdown;
    EXPECT_NEAR(b.compute + b.communication_exposed + b.wait, bound.step_time, 1e-12);
  }
}

// One shard, async: each worker makes a step every C (compute-bound worker), the server needs
// S/B per worker step (its NIC, per direction). N* = C B / S; below it throughput grows as N,
// above it stays at B/S steps/s.
TEST(AnalyticPredictor, SingleServerSaturatesAtNStar) {
  const double compute = 0.16;
  const auto w = resnet50(compute);
  const double model = w.parameter_bytes();
  cluster::ClusterSpec spec;
  spec.nic_bw = 5e9;
  SchemeConfig scheme;
  scheme.scheme = Scheme::ParameterServer;
  scheme.mode = Mode::Async;
  scheme.ps.count = 1;
  const double n_star = compute * spec.nic_bw / model;
  ASSERT_GT(n_star, 4);
  for (int n = 1; n <= 64; n *= 2) {
    spec.workers = n;
    const Result r = predict(w, spec, scheme, analytic());
    EXPECT_NEAR(r.saturation_workers, n_star, 1e-9 * n_star);
    const double expected_steps = std::min(n / compute, spec.nic_bw / model);
    EXPECT_NEAR(r.throughput, expected_steps * w.batch_per_worker, 1e-9 * r.throughput) << n << " workers";
    EXPECT_NE(r.bottleneck.find(n < n_star ? "worker compute" : "PS NIC"), std::string::npos) << r.bottleneck;
  }
  // The fine simulation of the same job approaches that ceiling from below once saturated.
  spec.workers = static_cast<int>(std::ceil(4 * n_star));
  const Result fine = predict(w, spec, scheme, {.warmup_steps = 1, .measure_steps = 3});
  const double ceiling = spec.nic_bw / model * w.batch_per_worker;
  EXPECT_LE(fine.throughput, ceiling * (1 + 1e-6));
  EXPECT_GE(fine.throughput, 0.85 * ceiling);
}

// Start-up: sequential reads take N times one read, parallel reads one; the job is start-up plus
// ceil(samples / (N b)) steps.
TEST(AnalyticPredictor, JobTimeIsStartupPlusSteps) {
  const auto w = resnet50(0.1);
  cluster::ClusterSpec spec;
  spec.workers = 8;
  spec.nic_bw = 1e12;
  SchemeConfig scheme;
  scheme.scheme = Scheme::AllReduce;
  Options options = analytic();
  options.job = {.samples = 100000,
                 .startup_bytes = 4e9,
                 .storage_bw = 1e9,
                 .io = StartupIo::Sequential,
                 .startup_fixed = 2};
  const Result seq = predict(w, spec, scheme, options);
  EXPECT_DOUBLE_EQ(seq.job.startup_time, 2 + 8 * 4.0);
  EXPECT_DOUBLE_EQ(seq.job.steps, std::ceil(100000.0 / (8 * 32)));
  EXPECT_NEAR(seq.job.time, seq.job.startup_time + seq.job.steps * seq.step_time, 1e-9);
  EXPECT_NEAR(seq.job.throughput, 100000 / seq.job.time, 1e-9);
  options.job.io = StartupIo::Parallel;
  const Result par = predict(w, spec, scheme, options);
  EXPECT_DOUBLE_EQ(par.job.startup_time, 2 + 4.0);
  // Every predictor gets the job accounting; none without job.samples.
  options.predictor = Predictor::Coarse;
  EXPECT_DOUBLE_EQ(predict(w, spec, scheme, options).job.startup_time, 6.0);
  options.job.samples = 0;
  EXPECT_EQ(predict(w, spec, scheme, options).job, Job{});
  // Default start-up bytes: the model's parameters.
  options.job = {.samples = 1000, .storage_bw = 1e9};
  EXPECT_NEAR(predict(w, spec, scheme, options).job.startup_time, w.parameter_bytes() / 1e9, 1e-12);
}

// CNTK's finding: with sequential start-up the job time N R + samples C / (N b) has a minimum at
// N = sqrt(samples C / (b R)) and grows beyond it; with parallel start-up it keeps falling.
TEST(AnalyticPredictor, SequentialStartupMakesJobTimeUShaped) {
  const double compute = 0.1, read = 10;  // s per step; s to read one worker's start-up bytes
  const auto w = resnet50(compute);
  cluster::ClusterSpec spec;
  spec.nic_bw = 1e13;  // compute-bound steps
  SchemeConfig scheme;
  scheme.scheme = Scheme::AllReduce;
  Options options = analytic();
  options.job = {.samples = 1e6, .startup_bytes = read * 1e9, .storage_bw = 1e9, .io = StartupIo::Sequential};
  const double n_opt = std::sqrt(1e6 * compute / (32 * read));  // 17.7
  int best = 0;
  double best_time = 1e300, previous_parallel = 1e300;
  for (int n = 1; n <= 128; ++n) {
    spec.workers = n;
    options.job.io = StartupIo::Sequential;
    const double t = predict(w, spec, scheme, options).job.time;
    if (t < best_time) {
      best_time = t;
      best = n;
    }
    options.job.io = StartupIo::Parallel;
    const double parallel = predict(w, spec, scheme, options).job.time;
    EXPECT_LT(parallel, previous_parallel * (1 + 1e-9)) << n << " workers";
    previous_parallel = parallel;
  }
  EXPECT_NEAR(best, n_opt, 1.5);
  spec.workers = 4 * best;
  options.job.io = StartupIo::Sequential;
  EXPECT_GT(predict(w, spec, scheme, options).job.time, 1.5 * best_time);
}

}  // namespace analytic_test
}  // namespace
}  // namespace stepcast::predict
